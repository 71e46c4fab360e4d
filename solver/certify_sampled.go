package solver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// Certificates from a sample of a finite sum's terms.
//
// A FiniteSum oracle F(x) = (1/M) Σ_m f_m(x) is certified exactly by one
// pass over its M terms (RuleFiniteSum). When the oracle also declares an
// almost-sure bound B(x) ≥ max_m ‖f_m(x) − F(x)‖ (TermBound), a sample of
// n < M terms can bound ‖F(x̂) − x̂‖ with probability at least 1 − δ, and
// when n is well below M that is cheaper than the pass. The sampled rules
// pay the spread the sample measures; B enters only the lower-order terms.
// They are selected by CertifySettings.Sampled and offered only in the
// norms where a cited theorem proves them (SampledRule):
//
//   - RuleSampledBernstein in ℓ2 and Schatten-2 (flat, or per example
//     under a Batched norm with AggMax): terms drawn uniformly with
//     replacement (Eval of Size 1), a Maurer–Pontil upper confidence bound
//     on the variance and the reference paper's Banach-space Bernstein
//     bound; see bernsteinRadius.
//   - RuleSampledSerfling in ℓ∞ (flat, or per example under a Batched norm
//     with AggMax): distinct terms drawn uniformly without replacement
//     (TermEvaluator), the empirical Bernstein–Serfling inequality of
//     Bardenet and Maillard on every coordinate with a union bound, and the
//     finite-population bound that is zero at n = M; see serflingRadius.
//
// No rule is offered in another norm: the without-replacement empirical
// Bernstein bound is proven for scalars, and the vector empirical Bernstein
// bounds in the cited works assume a 2-smooth norm; the coordinatewise
// union bound is the proven route to ℓ∞.

// TermBound is implemented by FiniteSum oracles that know an almost-sure
// bound on the deviation of every term from the average. Here the m-th
// term f_m(x) is what an Eval of Size 1 returns when it draws term m (each
// with probability 1/M), and what TermEvaluator.EvalTerm returns; F(x) is
// their average, EvalExact.
type TermBound interface {
	FiniteSum
	// TermBound returns B(x) ≥ max_m ‖f_m(x) − F(x)‖ in norm; for a
	// Batched norm, in its per-example norm for every example. It returns
	// +Inf or NaN when it knows no bound at x in norm. It must not keep x,
	// and it should cost little next to one exact evaluation.
	TermBound(x []float64, norm Norm) float64
}

// TermEvaluator is implemented by FiniteSum oracles that evaluate one
// chosen term, which sampling without replacement needs.
type TermEvaluator interface {
	// EvalTerm writes f_m(x), the m-th of the Terms() terms
	// (0 ≤ m < Terms()), into dst. It must not keep x or dst.
	EvalTerm(dst, x []float64, m int) error
}

// Constants of the sampled certificates.
const (
	// sampledFirst is the sample size of the first stage of a sampled
	// certificate; each further stage doubles it.
	sampledFirst = 64
	// sampledProject is the largest factor by which the futility test of
	// sampledCertificate projects a stage's radius to the largest stage.
	sampledProject = 8
	// kappaBM is κ = 7/3 + 3/√2 of the empirical Bernstein–Serfling
	// inequality (Bardenet and Maillard 2015, Theorem 3).
	kappaBM = 7.0/3 + 3/math.Sqrt2
)

// SampledRule returns the sampled certificate rule offered in norm
// (RuleSampledBernstein or RuleSampledSerfling), or an error saying that
// no sampled rule is proven in it: norms other than ℓ2, Schatten-2 and ℓ∞,
// and Batched norms with AggMean or over such norms.
func SampledRule(norm Norm) (CertRule, error) {
	inner := norm
	if b, ok := norm.(*Batched); ok {
		if b.Agg != AggMax {
			return RuleEstimate, fmt.Errorf("solver: no sampled certificate is offered in a Batched norm with aggregate %v (only max)", b.Agg)
		}
		inner = b.Example
	}
	switch n := inner.(type) {
	case LInf:
		return RuleSampledSerfling, nil
	case LP:
		if n.P() == 2 {
			return RuleSampledBernstein, nil
		}
	case *Schatten:
		if n.P() == 2 {
			return RuleSampledBernstein, nil
		}
	}
	return RuleEstimate, fmt.Errorf("solver: no sampled certificate is proven in norm %v (offered in l2, schatten:2 and linf)", norm)
}

// sampler draws the terms of a sampled certificate at x one at a time and
// keeps the running statistics its rule needs: the mean of the terms, and
// per coordinate the sum of squared deviations (Welford) for
// RuleSampledSerfling, or per example the sums of the pair statistics for
// RuleSampledBernstein. Memory is a few vectors of the state's length,
// whatever the sample size.
type sampler struct {
	ctx context.Context
	o   Oracle
	te  TermEvaluator // nil for sampling with replacement
	// tes evaluates blocks of terms when the oracle is a TermsEvaluator
	// (nil otherwise); block holds one block's terms, idx their indices.
	tes   TermsEvaluator
	block []float64
	idx   []int
	x     []float64
	rule  CertRule
	norm  Norm
	ex    Norm // per-example norm
	k     int  // examples
	m     int  // terms
	rng   *rand.Rand
	perm  []int // a partial Fisher–Yates shuffle of [0, m)

	n          int
	term, prev []float64
	mean, m2   []float64 // running mean; Welford sums (Serfling)
	ysum, ysq  []float64 // per-example sums of y and y² (Bernstein)
	diff       []float64
	calls      int64
	samples    int64
}

// newSampler returns the sampler of rule at x for the finite sum o in
// norm, drawing from rng.
func newSampler(ctx context.Context, o Oracle, x []float64, norm Norm, rule CertRule, rng *rand.Rand) (*sampler, error) {
	fs := o.(FiniteSum)
	s := &sampler{ctx: ctx, o: o, x: x, rule: rule, norm: norm, ex: norm, k: 1, m: fs.Terms(), rng: rng}
	if b, ok := norm.(*Batched); ok {
		s.ex, s.k = b.Example, b.Examples
	}
	d := len(x)
	s.term, s.mean, s.diff = make([]float64, d), make([]float64, d), make([]float64, d)
	if rule == RuleSampledSerfling {
		te, ok := o.(TermEvaluator)
		if !ok {
			return nil, fmt.Errorf("solver: the sampled rule in %v samples without replacement and needs a TermEvaluator oracle", norm)
		}
		s.te = te
		s.m2 = make([]float64, d)
	} else {
		s.prev = make([]float64, d)
		s.ysum, s.ysq = make([]float64, s.k), make([]float64, s.k)
	}
	if tes, ok := o.(TermsEvaluator); ok {
		s.tes = tes
		k := blockTerms(d)
		s.block, s.idx = make([]float64, k*d), make([]int, k)
	}
	return s, nil
}

// grow draws terms until the sample holds n of them (n ≤ m without
// replacement), observing the context before each.
func (s *sampler) grow(n int, b float64) error {
	if s.tes != nil {
		return s.growBlocks(n, b)
	}
	for s.n < n {
		if err := stopped(s.ctx, s.calls); err != nil {
			return err
		}
		var err error
		if s.te != nil {
			err = s.te.EvalTerm(s.term, s.x, s.nextTerm())
			s.samples++
		} else {
			var u int
			u, err = s.o.Eval(s.term, s.x, Sample{Seed: s.rng.Uint64(), Size: 1})
			s.samples += int64(u)
		}
		s.calls++
		if err != nil {
			return err
		}
		if err := s.addChecked(b); err != nil {
			return err
		}
	}
	return nil
}

// addChecked folds s.term into the statistics (add), or returns an error
// naming the first non-finite coordinate of the term. The check rides on
// the statistics' own pass: add accumulates 0·v over the term, which is
// NaN exactly when some v is NaN or infinite, and only then is the term
// scanned again for the coordinate. The statistics are unusable after an
// error, which ends the certificate.
func (s *sampler) addChecked(b float64) error {
	if bad := s.add(b); bad == bad {
		return nil
	}
	for i, v := range s.term {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("solver: term %d of the sampled certificate is %v at coordinate %d", s.n-1, v, i)
		}
	}
	return fmt.Errorf("solver: a term of the sampled certificate is not finite")
}

// nextTerm returns the next index of a uniform random permutation of
// [0, m), drawn lazily (Fisher–Yates on a sparse prefix).
func (s *sampler) nextTerm() int { return s.termAt(s.n) }

// termAt returns entry p of a uniform random permutation of [0, m) whose
// entries before p are drawn (Fisher–Yates on a sparse prefix); p must be
// the number of entries drawn so far.
func (s *sampler) termAt(p int) int {
	if s.perm == nil {
		s.perm = make([]int, s.m)
		for i := range s.perm {
			s.perm[i] = i
		}
	}
	j := p + s.rng.IntN(s.m-p)
	s.perm[p], s.perm[j] = s.perm[j], s.perm[p]
	return s.perm[p]
}

// add folds s.term into the statistics in one pass over it and returns the
// sum of 0·v over its entries (NaN when some entry is not finite); b is the
// term bound, which scales the pair statistics of RuleSampledBernstein into
// [0, 1]. The per-example norm of a pair's difference is the square root of
// its sum of squares: RuleSampledBernstein is offered only in ℓ2 and
// Schatten-2, whose norms are the Frobenius norm of the entries.
func (s *sampler) add(b float64) float64 {
	s.n++
	w := 1 / float64(s.n)
	var bad float64
	if s.m2 != nil {
		mean, m2 := s.mean[:len(s.term)], s.m2[:len(s.term)]
		for i, v := range s.term {
			bad += 0 * v
			d := v - mean[i]
			mean[i] += w * d
			m2[i] += d * (v - mean[i])
		}
		return bad
	}
	if s.n%2 == 1 {
		mean := s.mean[:len(s.term)]
		for i, v := range s.term {
			bad += 0 * v
			mean[i] += w * (v - mean[i])
		}
		copy(s.prev, s.term)
		return bad
	}
	// y = ‖X_{2j−1} − X_{2j}‖²/2 / (2B²) ∈ [0, 1], per example.
	de := s.ex.Len()
	for e := range s.k {
		lo, hi := e*de, (e+1)*de
		t, p, mean := s.term[lo:hi], s.prev[lo:hi], s.mean[lo:hi]
		ss := 0.0
		for i, v := range t {
			bad += 0 * v
			mean[i] += w * (v - mean[i])
			d := v - p[i]
			ss += d * d
		}
		y := math.Min(1, ss/(4*b*b))
		if b == 0 {
			y = 0
		}
		s.ysum[e] += y
		s.ysq[e] += y * y
	}
	return bad
}

// certificate returns the certificate of the current sample at failure
// probability delta, with term bound b. Its Bound is the largest
// per-example ‖τ̄_e − x̂_e‖ + ρ_e (one example for a flat norm).
//
// Under a Batched norm with AggMax (K examples) each example's radius is
// taken at δ/K and the union bound covers the maximum. The proven
// alternative, one certificate for the whole batch, bounds the maximum by
// the batch's ℓ2 (or Frobenius) norm, max_e ‖u_e‖ ≤ (Σ_e ‖u_e‖²)^{1/2},
// and applies the same Hilbert-space rule to the whole state at δ: its
// leading term is σ_B√(2 ln(4/δ)/n) with σ_B² = Σ_e σ_e², against
// max_e σ_e √(2 ln(4K/δ)/n) here, and its lower-order term uses the batch's
// bound, up to √K·b. With K examples of similar spread the batch
// certificate is larger by about √(K ln(4/δ)/ln(4K/δ)) (7.8 at K = 128,
// δ = 0.05), so the union over examples is kept. The ℓ∞ rule's union is
// over all coordinates of the state (serflingExample), for the same
// reason.
func (s *sampler) certificate(delta, b float64) *Certificate {
	subInto(s.diff, s.mean, s.x)
	c := &Certificate{Delta: delta, Rule: s.rule, Calls: s.calls, Samples: s.samples}
	c.Estimate = s.norm.Norm(s.diff)
	de := s.ex.Len()
	per := make([]float64, s.k)
	for e := range s.k {
		lo, hi := e*de, (e+1)*de
		var r float64
		if s.rule == RuleSampledSerfling {
			r = s.serflingExample(lo, hi, delta, b)
		} else {
			r = s.ex.Norm(s.diff[lo:hi]) + s.bernsteinRadius(e, delta/float64(s.k), b)
		}
		per[e] = r
		c.Bound = math.Max(c.Bound, r)
	}
	if _, ok := s.norm.(*Batched); ok {
		c.PerExample = per
	}
	return c
}

// bernsteinRadius returns ρ_e, a radius within which the sample mean of
// example e lies of F(x̂)_e with probability at least 1 − δ_e, for n
// terms drawn uniformly with replacement, each within b of F(x̂)_e in the
// example's Hilbert norm (ℓ2 or Schatten-2, κ = C = 1):
//
//	ρ_e = min{b, √(2κ L σ̄²/n) + C L b/(3n)},  L = ln(4/δ_e),
//	σ̄² = min{b², 2b²·(ȳ + √(2V L/k) + 7L/(3(k − 1)))},
//
// with y_j = ‖X_{2j−1} − X_{2j}‖²/(4b²) ∈ [0, 1] over the k = n/2 disjoint
// pairs of the sample, ȳ their mean and V their unbiased sample variance.
//
// Proof. The X_i are independent with mean F_e and ‖X_i − F_e‖ ≤ b. The
// y_j are independent, in [0, 1], with E y_j = σ²/(2b²), σ² = E‖X − F_e‖²
// (in a Hilbert norm E‖X − X′‖² = 2σ² for independent copies). Maurer and
// Pontil (2009, Theorem 4: for independent variables in [0, 1] and k ≥ 2,
// E y − ȳ ≤ √(2V ln(2/δ′)/k) + 7 ln(2/δ′)/(3(k − 1)) with probability at
// least 1 − δ′) at δ′ = δ_e/2 gives σ² ≤ σ̄² (and σ² ≤ b² always). The
// reference paper's Banach-space concentration proposition (see
// boundedNoise; with ‖η‖ ≤ b, E‖η‖² ≤ σ²) at δ_e/2 gives
// ‖τ̄_e − F_e‖ ≤ √(2κ ln(4/δ_e)σ²/n) + C ln(4/δ_e)b/(3n), increasing in σ²,
// and ‖τ̄_e − F_e‖ ≤ b holds surely. A union bound over the two events
// gives ρ_e with probability at least 1 − δ_e; the caller's union over the
// examples (δ_e = δ/K) and the triangle inequality give the bound. The
// a.s. bound b enters σ̄² only through terms of order b²/k and b·σ/√k, so
// ρ_e = σ√(2L/n) + O(n^{−3/4}).
func (s *sampler) bernsteinRadius(e int, delta, b float64) float64 {
	k := float64(s.n / 2)
	if k < 2 {
		return b
	}
	l := math.Log(4 / delta)
	ybar := s.ysum[e] / k
	v := math.Max(0, (s.ysq[e]-k*ybar*ybar)/(k-1))
	ucb := ybar + math.Sqrt(2*v*l/k) + 7*l/(3*(k-1))
	sig2 := math.Min(b*b, 2*b*b*ucb)
	n := float64(s.n)
	return math.Min(b, math.Sqrt(2*s.ex.Kappa()*l*sig2/n)+s.ex.C()*l*b/(3*n))
}

// serflingExample returns max_i |τ̄_i − x̂_i| + r_i over the coordinates
// i ∈ [lo, hi), with r_i = serflingRadius of coordinate i at failure
// probability δ for the whole vector (a union over all its coordinates).
func (s *sampler) serflingExample(lo, hi int, delta, b float64) float64 {
	d := float64(len(s.x))
	out := 0.0
	for i := lo; i < hi; i++ {
		sd := math.Sqrt(math.Max(0, s.m2[i]/float64(s.n)))
		out = math.Max(out, math.Abs(s.diff[i])+serflingRadius(sd, b, delta/d, s.n, s.m))
	}
	return out
}

// serflingRadius returns r, a radius within which the mean of n of m
// scalars drawn uniformly without replacement lies of their population
// mean μ with probability at least 1 − δ, when every value lies within b
// of μ and σ̂ is the sample's standard deviation (divisor n):
//
//	r = min{b·min(1, (m − n)/n),  σ̂√(2ρ_n L/n) + κ(2b)L/n},  L = ln(10/δ),
//
// with κ = 7/3 + 3/√2, ρ_n = 1 − (n − 1)/m for n ≤ m/2 and
// (1 − n/m)(1 + 1/n) above.
//
// Proof. Bardenet and Maillard (2015, Theorem 3, the empirical
// Bernstein–Serfling inequality) bound, for a sample without replacement
// from a population in [a, a + R], μ̂ − μ ≤ σ̂√(2ρ_n ln(1/δ′)/n) +
// κR ln(1/δ′)/n with probability at least 1 − 5δ′; applied to the values
// and to their negatives at δ′ = δ/10 (R = 2b), |μ̂ − μ| ≤ the second term
// with probability at least 1 − δ. The first term holds surely: the sample
// and the rest partition the population, so μ − μ̂ = ((m − n)/m)(μ_rest −
// μ̂) and, from μ_rest − μ = n(μ − μ̂)/(m − n), |μ − μ̂| ≤ b(m − n)/n; also
// |μ̂ − μ| ≤ b. The minimum is zero at n = m.
func serflingRadius(sd, b, delta float64, n, m int) float64 {
	nf, mf := float64(n), float64(m)
	fpc := b * math.Min(1, (mf-nf)/nf)
	if n >= m {
		return 0
	}
	rho := 1 - (nf-1)/mf
	if 2*n > m {
		rho = (1 - nf/mf) * (1 + 1/nf)
	}
	l := math.Log(10 / delta)
	return math.Min(fpc, sd*math.Sqrt(2*rho*l/nf)+kappaBM*2*b*l/nf)
}

// floorRadius returns the smallest radius the rule could reach with n
// terms, whatever their spread: the lower-order term alone. The rule
// chooses the exact pass when it exceeds the tolerance at the largest
// stage.
func (s *sampler) floorRadius(n int, delta, b float64) float64 {
	if s.rule == RuleSampledSerfling {
		return serflingRadius(0, b, delta/float64(len(s.x)), n, s.m)
	}
	k := float64(n / 2)
	l := math.Log(4 * float64(s.k) / delta)
	sig2 := math.Min(b*b, 2*b*b*7*l/(3*(k-1)))
	nf := float64(n)
	return math.Min(b, math.Sqrt(2*s.ex.Kappa()*l*sig2/nf)+s.ex.C()*l*b/(3*nf))
}

// sampledCertificate is the staged sampled certificate of x̂ for the
// tolerance tol at failure probability δ. Stage j draws terms until the
// sample holds n_j = first·2^j (the earlier terms are kept) and computes
// the rule's bound at failure probability δ_j = δ/2^{J+1−j}, J the index
// of the largest stage below M (the largest stage, where the terms are
// spent, gets δ/2, the next δ/4, and the small first stages, which cost
// little, the smallest shares; Σ_j δ_j < δ); it stops at the
// first stage whose Bound meets tol, or whose lower confidence bound
// ‖τ̄ − x̂‖ − (Bound − ‖τ̄ − x̂‖) exceeds tol (no further sample could
// meet it), returning that certificate with Delta = δ. The events of all
// stages hold together with probability at least 1 − Σ_j δ_j ≥ 1 − δ,
// so the stage the data selects is covered. When the next stage would
// need n ≥ M terms, or even a sample of no spread could not meet tol at
// the largest stage below M, or a stage within a factor sampledProject of
// the largest finds tol out of reach (the estimate plus its radius scaled
// down to the largest stage exceeds tol), it returns nil: the exact pass, M term
// evaluations, is cheaper (with the work of the stages it drew, if any,
// which the caller counts). It returns nil too when o declares no finite
// term bound at x̂ in norm, or the rule samples without replacement and o
// is no TermEvaluator; and an error when no sampled rule is proven in
// norm.
func sampledCertificate(ctx context.Context, o Oracle, x []float64, norm Norm, tol, delta float64, first int, rng *rand.Rand) (*Certificate, sampledSpent, error) {
	rule, err := SampledRule(norm)
	if err != nil {
		return nil, sampledSpent{}, err
	}
	tb, ok := o.(TermBound)
	if !ok || math.IsNaN(tol) {
		return nil, sampledSpent{}, nil
	}
	if _, te := o.(TermEvaluator); rule == RuleSampledSerfling && !te {
		return nil, sampledSpent{}, nil // sampling without replacement needs single terms
	}
	b := tb.TermBound(x, norm)
	if !(b >= 0) || math.IsInf(b, 1) {
		return nil, sampledSpent{}, nil
	}
	m := tb.Terms()
	first = max(first, sampledFirst)
	first += first % 2
	last, stages := first, 0
	for 2*last < m {
		last *= 2
		stages++
	}
	if last >= m {
		return nil, sampledSpent{}, nil
	}
	s, err := newSampler(ctx, o, x, norm, rule, rng)
	if err != nil {
		return nil, sampledSpent{}, err
	}
	if s.floorRadius(last, delta/2, b) >= tol {
		return nil, sampledSpent{}, nil
	}
	n := first
	for j := 0; n < m; j++ {
		dj := delta / math.Exp2(float64(stages+1-j))
		if err := s.grow(n, b); err != nil {
			return nil, s.spent(), err
		}
		c := s.certificate(dj, b)
		c.Delta = delta
		radius := c.Bound - c.Estimate
		if c.Bound <= tol || c.Estimate-radius > tol || 2*n >= m {
			if c.Bound > tol && 2*n >= m && c.Estimate-radius <= tol {
				break
			}
			return c, sampledSpent{}, nil
		}
		// Futility: the largest stage's radius is at least radius·n/last
		// (the leading part shrinks as 1/√n, the rest as 1/n, and δ_j
		// grows by a factor 2 a stage, which changes the logarithm
		// little); when the estimate plus that already exceeds tol, the
		// largest stage would most likely miss it too, and the exact pass
		// follows without the further stages. Only the work depends on
		// this choice, never what a returned certificate proves.
		if sampledProject*n >= last && c.Estimate+radius*float64(n)/float64(last) > tol {
			break
		}
		n *= 2
	}
	return nil, s.spent(), nil
}

// sampledSpent is the work of a sampled certificate that was drawn but
// not used (the exact pass followed): its oracle calls and unit samples,
// which the caller adds to the work it reports.
type sampledSpent struct{ calls, samples int64 }

// spent returns the sampler's work so far.
func (s *sampler) spent() sampledSpent { return sampledSpent{s.calls, s.samples} }
