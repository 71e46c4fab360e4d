package solver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// certify bounds ‖T(x̂) − x̂‖ for the returned point x̂ by the rule that what
// the oracle declares allows (see CertRule and the package documentation,
// Certificates), in this order:
//
//   - Deterministic model: RuleExact, one evaluation.
//   - FiniteSum: RuleFiniteSum, one EvalExact call counted as Terms()
//     samples.
//   - NoiseBound (finite at x̂), or CoordinateNoiseBound in ℓ∞:
//     RuleBoundedNoise; see boundedNoise.
//   - VarianceBound (finite at x̂): RuleVarianceMoM (see varianceMoM), or
//     in a flat Hilbert norm (ℓ2, Schatten-2) with CertifySettings.Calls
//     unset RuleVarianceTruncated (see varianceTruncated) when its planned
//     radius for the same number of unit samples is smaller than the
//     median of means' (its radius ε with one bucket, 2ε with more: r* is
//     about ε in practice); the choice is made before any draw.
//   - nothing: RuleEstimate; see estimate.
//
// The stochastic rules draw fresh samples, independent of the solve's. Their
// budget is N = n·K unit samples, with n = CertifySettings.Samples, or the
// size the method suggested (VR-GHAL: its last bucket size), or the solve's
// samples divided by 4K, and K = CertifySettings.Calls or momBuckets(δ).
//
// The exact rules reuse the method's last exact evaluation when it was at
// x̂ itself (last, which may be nil, returns T(x̂) then, nil otherwise): the certificate then
// costs no call and reports Calls = Samples = 0.
//
// An evaluation holding NaN or ±Inf, or a NaN bound, makes certify return
// a nil Certificate and an error wrapping ErrNonFinite.
func certify(ctx context.Context, p Problem, res *Result, s *Settings, suggested int, last func(x []float64) []float64) (*Certificate, error) {
	return certifyPlanned(ctx, p, res, s, suggested, last, nil)
}

// certifyPlanned is certify with, when tp is not nil and the oracle is
// stochastic with a variance declaration (no almost-sure one), the
// truncated plan tp in place of the variance rule's own choice.
func certifyPlanned(ctx context.Context, p Problem, res *Result, s *Settings, suggested int, last func(x []float64) []float64, tp *truncPlan) (*Certificate, error) {
	o, norm, x := p.Oracle, p.Norm, res.X
	n := len(x)
	fs, finite := o.(FiniteSum)
	if o.Model() == Deterministic || finite {
		if tx := lastOf(last, x); tx != nil {
			rule := RuleExact
			if o.Model() != Deterministic {
				rule = RuleFiniteSum
			}
			c, err := exactCert(norm, tx, x, rule, 0)
			if c != nil {
				c.Calls = 0
			}
			return c, err
		}
	}
	var spent sampledSpent // a sampled certificate's stages before the exact pass
	if finite && s.Certify.Sampled && o.Model() != Deterministic {
		c, sp, err := certifySampled(ctx, p, res, s)
		if c != nil || err != nil {
			return c, err
		}
		spent = sp
	}
	diff := make([]float64, n)
	if o.Model() == Deterministic {
		used, err := o.Eval(diff, x, Sample{Size: 1})
		if err != nil {
			return nil, err
		}
		return exactCert(norm, diff, x, RuleExact, int64(used))
	}
	if finite {
		if err := fs.EvalExact(diff, x); err != nil {
			return nil, err
		}
		c, err := exactCert(norm, diff, x, RuleFiniteSum, int64(fs.Terms())+spent.samples)
		if c != nil {
			c.Calls += spent.calls
		}
		return c, err
	}
	if err := stopped(ctx, 0); err != nil {
		return nil, err
	}
	delta := s.Certify.Delta
	kref := s.Certify.Calls
	if kref == 0 {
		kref = momBuckets(delta)
	}
	size := s.Certify.Samples
	if size == 0 {
		size = suggested
	}
	if size == 0 {
		size = int(max(1, res.Stats.Samples/int64(4*kref)))
	}
	budget := int64(size) * int64(kref)
	d := &drawer{ctx: ctx, o: o, x: x, n: n,
		rng: rand.New(rand.NewPCG(s.Seed^0x6a09e667f3bcc909, s.Certify.Seed^0xbb67ae8584caa73b))}
	var c *Certificate
	var err error
	if nd, ok := declaredNoise(o, x, norm); ok {
		calls := max(s.Certify.Calls, 1)
		c, err = boundedNoise(d, norm, delta, nd, calls, perCall(budget, calls, s.Certify.Samples))
	} else if v := declaredVariance(o, x, norm); !math.IsInf(v, 1) {
		k, pFail := s.Certify.Calls, 0.0
		if k == 0 {
			k, pFail = momChebyshevBuckets(delta)
		} else {
			pFail = momBucketFailure(k, delta)
		}
		size := perCall(budget, k, s.Certify.Samples)
		w := norm.Kappa() * v
		if tp == nil && s.Certify.Calls == 0 && flatHilbert(norm) {
			total := int64(k) * int64(size)
			eps := math.Sqrt(w * float64(k) / (pFail * float64(total)))
			if k > 1 {
				eps *= 2
			}
			if plan, ok := truncForBudget(norm.Kappa(), norm.C(), w, delta, eps, total); ok {
				tp = &plan
			}
		}
		if tp != nil && flatHilbert(norm) {
			c, err = varianceTruncated(d, norm, delta, w, *tp)
		} else {
			c, err = varianceMoM(d, norm, delta, v, k, pFail, size)
		}
	} else {
		k := max(kref, 3)
		c, err = estimate(d, norm, k, size)
	}
	if err != nil {
		return nil, err
	}
	if math.IsNaN(c.Bound) || math.IsNaN(c.Estimate) {
		return nil, fmt.Errorf("certificate bound %v, estimate %v: %w", c.Bound, c.Estimate, ErrNonFinite)
	}
	return c, nil
}

// lastOf returns last(x), or nil when last is nil.
func lastOf(last func([]float64) []float64, x []float64) []float64 {
	if last == nil {
		return nil
	}
	return last(x)
}

// perCall returns the unit samples of each of k calls: samples if set,
// else the budget split evenly (at least 1).
func perCall(budget int64, k, samples int) int {
	if samples > 0 {
		return samples
	}
	return int(max(1, budget/int64(k)))
}

// exactCert returns the certificate of an exact evaluation tx = T(x),
// overwriting tx with T(x) − x, or an error wrapping ErrNonFinite if tx
// holds NaN or ±Inf.
func exactCert(norm Norm, tx, x []float64, rule CertRule, samples int64) (*Certificate, error) {
	if err := checkFinite("exact evaluation T(x̂)", tx); err != nil {
		return nil, err
	}
	subInto(tx, tx, x)
	r := norm.Norm(tx)
	c := &Certificate{Estimate: r, Bound: r, Samples: samples, Calls: 1, Rule: rule}
	if b, ok := norm.(*Batched); ok {
		c.PerExample = b.Each(nil, tx)
	}
	return c, nil
}

// certChunkMin is the largest unit-sample size the certificate asks of
// the oracle in one call before it splits a call into chunks (see
// drawer.one).
const certChunkMin = 1 << 16

// ErrTimeLimit is wrapped by the error of a certificate that
// Settings.MaxTime stopped before it had drawn its samples (see
// CertifyRadius).
var ErrTimeLimit = errors.New("solver: time limit reached")

// drawer draws the certificate's independent oracle calls at x. It stops
// with an error wrapping the context's error and its cause (ErrTimeLimit
// for the time limit of Settings.MaxTime) when ctx is done before a chunk.
type drawer struct {
	ctx     context.Context
	o       Oracle
	x       []float64
	n       int
	rng     *rand.Rand
	chunk   []float64 // scratch of a chunk, allocated on the first split
	calls   int64     // calls of the rule (see one), chunks not counted
	samples int64
}

// draw returns k oracle calls of size unit samples each at x, as rows of
// one backing array, and the unit samples each reported.
func (d *drawer) draw(k, size int) ([][]float64, []int, error) {
	data := make([]float64, k*d.n)
	taus := make([][]float64, k)
	used := make([]int, k)
	for i := range taus {
		taus[i] = data[i*d.n : (i+1)*d.n : (i+1)*d.n]
		u, err := d.one(taus[i], size)
		if err != nil {
			return nil, nil, err
		}
		used[i] = u
	}
	return taus, used, nil
}

// check returns the error that stops the draw when the context is done,
// and nil otherwise. The error counts the rule's calls begun.
func (d *drawer) check() error {
	return stopped(d.ctx, d.calls)
}

// stopped returns nil while ctx is not done, and otherwise an error
// wrapping ctx.Err() and its cause (ErrTimeLimit for Settings.MaxTime),
// saying after how many oracle calls the certificate stopped.
func stopped(ctx context.Context, calls int64) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != err {
		return fmt.Errorf("solver: certificate stopped after %d oracle calls: %w (%w)", calls, cause, err)
	}
	return fmt.Errorf("solver: certificate stopped after %d oracle calls: %w", calls, err)
}

// one draws size unit samples at x into dst, their average, and returns
// the unit samples the oracle reported (at least 1). Up to certChunkMin
// unit samples take one oracle call. More are drawn in chunks, each an
// oracle call with a seed of its own, of certChunkMin unit samples first
// and then as many as were drawn before (the chunks double until the last,
// which takes the rest), averaged with the weights the oracle reported:
// the mean of independent unit samples, as one call would draw it, in
// O(log size) oracle calls, which count as one call of the rule
// (Certificate.Calls). The context is checked before each chunk, so a stop
// wastes at most as many samples as were already drawn.
func (d *drawer) one(dst []float64, size int) (int, error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	d.calls++
	if size <= certChunkMin {
		return d.call(dst, size)
	}
	if d.chunk == nil {
		d.chunk = make([]float64, d.n)
	}
	total, asked := 0, 0
	for asked < size {
		if asked > 0 {
			if err := d.check(); err != nil {
				return 0, err
			}
		}
		c := min(size-asked, max(certChunkMin, asked))
		buf := dst
		if asked > 0 {
			buf = d.chunk
		}
		u, err := d.call(buf, c)
		if err != nil {
			return 0, err
		}
		if asked > 0 {
			w := float64(u) / float64(total+u)
			for j, v := range buf {
				dst[j] += w * (v - dst[j])
			}
		}
		asked += c
		total += u
	}
	return total, nil
}

// call makes one oracle call of size unit samples at x into dst and
// returns the unit samples it reported (at least 1).
func (d *drawer) call(dst []float64, size int) (int, error) {
	u, err := d.o.Eval(dst, d.x, Sample{Seed: d.rng.Uint64(), Size: size})
	d.samples += int64(u)
	if err != nil {
		return 0, err
	}
	if err := checkFinite(fmt.Sprintf("certificate call %d", d.calls), dst); err != nil {
		return 0, err
	}
	return max(u, 1), nil
}

// finish fills the certificate's counts, Estimate = ‖τ − x‖ for the
// selected estimate τ of T(x), Bound = Estimate + slack and, for a Batched
// norm, the per-example bounds: each example's own ‖τ_i − x_i‖ plus slack
// (times the number of examples for AggMean, where one example's norm is at
// most that many times the mean).
func (d *drawer) finish(c *Certificate, norm Norm, tau []float64, slack float64) *Certificate {
	diff := make([]float64, d.n)
	subInto(diff, tau, d.x)
	c.Estimate = norm.Norm(diff)
	c.Bound = c.Estimate + slack
	c.Calls, c.Samples = d.calls, d.samples
	if b, ok := norm.(*Batched); ok {
		if b.Agg == AggMean {
			slack *= float64(b.Examples)
		}
		c.PerExample = b.Each(nil, diff)
		for i := range c.PerExample {
			c.PerExample[i] += slack
		}
	}
	return c
}

// boundedNoise is RuleBoundedNoise. It averages k calls of size unit
// samples at x̂, τ̄ = (1/N) Σ_i τ₁(x̂; ξ_i) over all N unit samples, and
// returns
//
//	Bound = ‖τ̄ − x̂‖ + ρ,  ρ = √(2κ ln(2/δ) σ²/N) + C ln(2/δ) b/(3N),
//
// with κ and C of the norm, b the oracle's almost-sure bound at x̂ and
// σ² = min{b², the declared variance bound}; in ℓ∞ with a
// CoordinateNoiseBound, ρ is the smaller of that and the coordinatewise
// Bernstein radius (see CoordinateNoiseBound and noiseDecl.radius), both
// fixed by N before the draw.
//
// Proof sketch: η_i = τ₁(x̂; ξ_i) − T(x̂) are independent, centred, with
// ‖η_i‖ ≤ b and E‖η_i‖² ≤ σ². The reference paper's Banach-space
// concentration proposition ("Solving Stochastic Fixed-Point Equations with
// High Probability" by Jelena Diakonikolas; a Pinelis-type bound in the
// smooth witness norm, translated back with its constants κ = B·C² and C)
// gives ‖Σ_i η_i‖ ≤ √(2κ ln(2/δ) Nσ²) + C ln(2/δ) b/3 with probability at
// least 1 − δ, so ‖τ̄ − T(x̂)‖ ≤ ρ, and the triangle inequality
// ‖T(x̂) − x̂‖ ≤ ‖τ̄ − x̂‖ + ‖τ̄ − T(x̂)‖ gives the bound.
func boundedNoise(d *drawer, norm Norm, delta float64, nd noiseDecl, k, size int) (*Certificate, error) {
	taus, used, err := d.draw(k, size)
	if err != nil {
		return nil, err
	}
	tau := make([]float64, d.n)
	total := 0.0
	for i, t := range taus {
		w := float64(used[i])
		total += w
		for j, v := range t {
			tau[j] += w * v
		}
	}
	for j := range tau {
		tau[j] /= total
	}
	return d.finish(&Certificate{Delta: delta, Rule: RuleBoundedNoise}, norm, tau, nd.radius(delta, total)), nil
}

// varianceMoM is RuleVarianceMoM: the median of means of k buckets
// (oracle calls) of m unit samples at x̂, each failing with probability at
// most p (momChebyshevBuckets or momBucketFailure). With τ̂ the medianOfMeans
// selection, r* its radius and σ² the declared variance bound at x̂, it
// returns
//
//	Bound = ‖τ̂ − x̂‖ + r* + ε,  ε = √(κσ²/(m p)).
//
// Proof sketch: by the reference paper's minibatch-variance lemma each
// bucket mean τ_j satisfies E‖τ_j − T(x̂)‖² ≤ κσ²/m (in the smooth witness
// E‖·‖₊² ≤ B·C²σ²/m, and ‖·‖ ≤ ‖·‖₊), so by Chebyshev's inequality
// P(‖τ_j − T(x̂)‖ > ε) ≤ p. The buckets are independent, so the number of
// far buckets is at most Binomial(k, p), and p is chosen so that
// P(Binomial(k, p) ≥ k/2) ≤ δ exactly. Outside that event more than k/2
// buckets lie within ε of T(x̂); the ball of radius r* around τ̂ holds more
// than k/2 buckets too, so the two sets share a bucket and
// ‖τ̂ − T(x̂)‖ ≤ r* + ε (Hsu and Sabato 2016, Proposition 9; the paper's
// median-of-means proposition, whose Hoeffding count k ≥ 18 ln(1/δ) with
// p = 1/3 this sharpens to about 2 ln(1/δ) buckets). With k = 1 the
// selection is the one bucket, r* = 0, p = δ and the argument is
// Chebyshev's inequality on the whole sample. The triangle inequality
// gives the bound.
func varianceMoM(d *drawer, norm Norm, delta, v float64, k int, p float64, size int) (*Certificate, error) {
	taus, used, err := d.draw(k, size)
	if err != nil {
		return nil, err
	}
	m := used[0]
	for _, u := range used {
		m = min(m, u)
	}
	best, rstar := medianOfMeans(nil, taus, norm, nil)
	eps := math.Sqrt(norm.Kappa() * v / (float64(m) * p))
	return d.finish(&Certificate{Delta: delta, Rule: RuleVarianceMoM}, norm, taus[best], rstar+eps), nil
}

// estimate is RuleEstimate: k calls of size unit samples at x̂, the
// medianOfMeans selection τ̂ with radius r*, and
//
//	Bound = ‖τ̂ − x̂‖ + r* + √(3V̂),  V̂ = mean_{i<j} ‖τ_i − τ_j‖².
//
// It would bound the residual if √(3V̂) bounded the 2/3-quantile of
// ‖τ_i − T(x̂)‖ (Chebyshev with V = E‖τ_i − τ_j‖² ≥ E‖τ_i − T(x̂)‖²), but V̂
// is itself estimated, and under finite variance alone nothing keeps it
// from falling short: rare large deviations (a two-point law with an
// outlier of probability 10⁻⁴) make it 0 in most calls, and the bound then
// fails in most solves. No finite-sample bound exists without a known
// quantity (Bahadur and Savage 1956), so this rule claims no probability:
// Delta is NaN.
func estimate(d *drawer, norm Norm, k, size int) (*Certificate, error) {
	taus, _, err := d.draw(k, size)
	if err != nil {
		return nil, err
	}
	best, rstar, eps := momScale(taus, norm, make([]float64, d.n))
	return d.finish(&Certificate{Delta: math.NaN(), Rule: RuleEstimate}, norm, taus[best], rstar+eps), nil
}

// momScale returns the medianOfMeans selection among the bucket means taus
// (at least two), its radius r* and the scale ε̂ = √(3V̂) with
// V̂ = mean_{i<j} ‖τ_i − τ_j‖², sharing the pairwise distances. diff
// (length norm.Len()) is scratch.
func momScale(taus [][]float64, norm Norm, diff []float64) (best int, rstar, eps float64) {
	k := len(taus)
	dist := make([]float64, k*k)
	momDistances(dist, taus, norm, diff)
	v := 0.0
	for i := range k {
		for _, d := range dist[i*k+i+1 : (i+1)*k] {
			v += d * d
		}
	}
	v /= float64(k * (k - 1) / 2)
	best, rstar = momSelect(dist, k, make([]float64, k))
	return best, rstar, math.Sqrt(3 * v)
}
