package solver

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// termSum is a finite sum of affine terms f_m(x) = γx + b_m with a
// declared term bound scale·max_m ‖b_m − b̄‖ (scale ≥ 1 declares a bound
// looser than the truth).
type termSum struct {
	gamma float64
	b     [][]float64
	mean  []float64
	scale float64
}

var (
	_ TermBound     = (*termSum)(nil)
	_ TermEvaluator = (*termSum)(nil)
)

func newTermSum(gamma, scale float64, b [][]float64) *termSum {
	t := &termSum{gamma: gamma, b: b, mean: make([]float64, len(b[0])), scale: scale}
	for _, v := range b {
		for i, x := range v {
			t.mean[i] += x / float64(len(b))
		}
	}
	return t
}

func (t *termSum) Len() int     { return len(t.mean) }
func (t *termSum) Terms() int   { return len(t.b) }
func (t *termSum) Model() Model { return SamplewiseLipschitz }

func (t *termSum) Eval(dst, x []float64, s Sample) (int, error) {
	if s.Size >= len(t.b) {
		return len(t.b), t.EvalExact(dst, x)
	}
	rng := rand.New(rand.NewPCG(s.Seed, 1))
	for i := range dst {
		dst[i] = 0
	}
	for range s.Size {
		v := t.b[rng.IntN(len(t.b))]
		for i := range dst {
			dst[i] += v[i] / float64(s.Size)
		}
	}
	for i := range dst {
		dst[i] += t.gamma * x[i]
	}
	return s.Size, nil
}

func (t *termSum) EvalExact(dst, x []float64) error {
	for i := range dst {
		dst[i] = t.gamma*x[i] + t.mean[i]
	}
	return nil
}

func (t *termSum) EvalTerm(dst, x []float64, m int) error {
	for i := range dst {
		dst[i] = t.gamma*x[i] + t.b[m][i]
	}
	return nil
}

func (t *termSum) TermBound(x []float64, norm Norm) float64 {
	d := make([]float64, len(t.mean))
	b := 0.0
	for _, v := range t.b {
		subInto(d, v, t.mean)
		b = math.Max(b, norm.Norm(d))
	}
	return t.scale * b
}

// termSet returns M terms of dimension d of the named kind, from seed:
// "normal" (independent normal entries), "outlier" (all zero but one
// term far away), "few-large" (small normal entries and 1% of terms 30
// times larger) and "low-spread" (normal entries of size 1e-3; the caller
// declares a much larger bound).
func termSet(kind string, m, d int, seed uint64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([][]float64, m)
	for j := range b {
		b[j] = make([]float64, d)
		for i := range b[j] {
			switch kind {
			case "normal":
				b[j][i] = rng.NormFloat64()
			case "few-large":
				b[j][i] = 0.1 * rng.NormFloat64()
				if j%100 == 0 {
					b[j][i] *= 30
				}
			case "low-spread":
				b[j][i] = 1e-3 * rng.NormFloat64()
			}
		}
	}
	if kind == "outlier" {
		for i := range b[0] {
			b[0][i] = 10
		}
	}
	rng.Shuffle(m, func(i, j int) { b[i], b[j] = b[j], b[i] })
	return b
}

// coverageLimit returns δN + 3√(Nδ(1 − δ)), the most failures of N
// certificates at failure probability δ a coverage test accepts.
func coverageLimit(n int, delta float64) float64 {
	f := float64(n)
	return delta*f + 3*math.Sqrt(f*delta*(1-delta))
}

// TestSampledCertificateCoverage draws 400 sampled certificates per case,
// for each rule's norm, δ ∈ {0.05, 0.01}, sample sizes across the
// population (with n close to M for the finite-population correction) and
// the adversarial term sets of termSet, at a point x̂ = F + u away from the
// sum's average (so that a certificate fails whenever the sample mean's
// error along u exceeds the radius), and requires failures (Bound below
// the exact residual) ≤ δN + 3√(Nδ(1 − δ)).
func TestSampledCertificateCoverage(t *testing.T) {
	const draws, m, d = 400, 1024, 4
	l2, _ := NewLP(2, d)
	linf, _ := NewLInf(d)
	for _, norm := range []Norm{l2, linf} {
		for _, kind := range []string{"normal", "outlier", "few-large", "low-spread"} {
			scale := 1.0
			if kind == "low-spread" {
				scale = 1000
			}
			ts := newTermSum(0, scale, termSet(kind, m, d, 11))
			x := append([]float64(nil), ts.mean...)
			x[0] += 0.05
			truth := make([]float64, d)
			subInto(truth, ts.mean, x)
			res := norm.Norm(truth)
			for _, delta := range []float64{0.05, 0.01} {
				for _, n := range []int{64, 256, 768} {
					fails := 0
					rng := rand.New(rand.NewPCG(uint64(n), 3))
					for range draws {
						first := n
						c, _, err := sampledCertificate(context.Background(), ts, x, norm, math.Inf(1), delta, first, rng)
						if err != nil {
							t.Fatal(err)
						}
						if c == nil {
							t.Fatalf("%v %s n=%d: no certificate", norm, kind, n)
						}
						if c.Bound < res {
							fails++
						}
					}
					if lim := coverageLimit(draws, delta); float64(fails) > lim {
						t.Errorf("%v %s δ=%v n=%d: %d/%d failures > %.1f", norm, kind, delta, n, fails, draws, lim)
					}
					t.Logf("%v %-10s δ=%v n=%4d: %d/%d failures", norm, kind, delta, n, fails, draws)
				}
			}
		}
	}
}

// TestSampledRadiusLowSpread: with terms whose spread is far below their
// declared almost-sure bound B, the radius pays the spread: it is well
// below B√(2 ln(4/δ)/n), what a bound from B alone (Hoeffding in a
// Hilbert space) would pay.
func TestSampledRadiusLowSpread(t *testing.T) {
	const m, d, n, delta = 1 << 14, 4, 4096, 0.05
	l2, _ := NewLP(2, d)
	ts := newTermSum(0, 1, termSet("low-spread", m, d, 5))
	ts.scale = 100 // B is 100 times the largest true deviation
	x := ts.mean
	b := ts.TermBound(x, l2)
	c, _, err := sampledCertificate(context.Background(), ts, x, l2, math.Inf(1), delta, n, rand.New(rand.NewPCG(1, 2)))
	if err != nil || c == nil {
		t.Fatal(c, err)
	}
	radius := c.Bound - c.Estimate
	hoeffding := b * math.Sqrt(2*math.Log(4/delta)/n)
	if !(radius < 0.2*hoeffding) {
		t.Errorf("radius %v not below 0.2× the bound-only radius %v", radius, hoeffding)
	}
	t.Logf("radius %.3g, bound-only radius %.3g, B %.3g", radius, hoeffding, b)
}

// TestSampledRuleNorms: the sampled rules are offered in ℓ2, Schatten-2
// and ℓ∞ (flat and per example under AggMax) and refused elsewhere with
// an error naming the norm.
func TestSampledRuleNorms(t *testing.T) {
	l2, _ := NewLP(2, 4)
	l3, _ := NewLP(3, 4)
	linf, _ := NewLInf(4)
	for _, tc := range []struct {
		norm Norm
		want CertRule
		err  string
	}{
		{l2, RuleSampledBernstein, ""},
		{linf, RuleSampledSerfling, ""},
		{&Batched{Example: l2, Examples: 3, Agg: AggMax}, RuleSampledBernstein, ""},
		{&Batched{Example: linf, Examples: 3, Agg: AggMax}, RuleSampledSerfling, ""},
		{l3, RuleEstimate, "lp:3"},
		{&Batched{Example: l2, Examples: 3, Agg: AggMean}, RuleEstimate, "mean"},
	} {
		got, err := SampledRule(tc.norm)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("SampledRule(%v) = %v, %v; want %v, error containing %q", tc.norm, got, err, tc.want, tc.err)
		}
	}
}

// TestSampledCertificateExactWhenCheaper: the sampled certificate falls
// back to the exact pass (certify's RuleFiniteSum) when even a sample of
// no spread could not meet the tolerance below M terms.
func TestSampledCertificateExactWhenCheaper(t *testing.T) {
	l2, _ := NewLP(2, 4)
	ts := newTermSum(0, 1, termSet("normal", 256, 4, 9))
	x := ts.mean
	c, _, err := sampledCertificate(context.Background(), ts, x, l2, 1e-6, 0.05, 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil || c != nil {
		t.Fatalf("got %v, %v; want the exact pass (nil, nil)", c, err)
	}
	s := &Settings{Certify: CertifySettings{Sampled: true, Delta: 0.05}}
	cert, err := certify(context.Background(), Problem{Oracle: ts, Norm: l2}, &Result{X: x, Tol: 1e-6}, s, 0, nil)
	if err != nil || cert.Rule != RuleFiniteSum {
		t.Fatalf("certify: %v, %v; want RuleFiniteSum", cert, err)
	}
}

// TestGrowingBatchSampledStop runs 400 GrowingBatch solves per norm and δ
// on a contractive finite sum of M = 2¹⁴ terms with Certify.Sampled: every
// solve stops with Success, at least 90% on their own sampled certificate
// with fewer than M/2 unit samples per solve on average (the others once the minibatch
// reached M), and the exact residual exceeds the certificate's Bound in at
// most δN + 3√(Nδ(1 − δ)) of all N solves.
func TestGrowingBatchSampledStop(t *testing.T) {
	testSampledStop(t, GrowingBatch{}, 0.3, 0.1)
}

// TestVRGHALSampledStop is TestGrowingBatchSampledStop for VR-GHAL (tuned
// constants, γ̄ = 0.5), whose sampled mode on this finite sum, which
// declares no variance, checks its sampled bound with a sampled
// certificate before any exact evaluation. Its check is often made at the
// next point, whose residual a sampled certificate may not prove below
// Tol; the exact evaluation then follows, so at least 60% (not 90%) of
// the solves stop on a sampled certificate.
func TestVRGHALSampledStop(t *testing.T) {
	testSampledStop(t, VRGHAL{Gamma: 0.5}, 0.3, 0.4)
}

// testSampledStop runs 400 solves of method per norm and δ at tolerance
// tol (see TestGrowingBatchSampledStop), at most a share exactShare of
// them stopping on an exact certificate.
func testSampledStop(t *testing.T, method Method, tol, exactShare float64) {
	const solves, m, d = 400, 1 << 14, 4
	l2, _ := NewLP(2, d)
	linf, _ := NewLInf(d)
	ts := newTermSum(0.5, 1, termSet("normal", m, d, 21))
	xstar := make([]float64, d)
	for i := range xstar {
		xstar[i] = ts.mean[i] / (1 - ts.gamma)
	}
	for _, norm := range []Norm{l2, linf} {
		for _, delta := range []float64{0.05, 0.01} {
			fails, exact, samples := 0, 0, int64(0)
			for seed := range uint64(solves) {
				s := &Settings{Tol: tol, Seed: seed, NoTrace: true, Certify: CertifySettings{Sampled: true, Delta: delta}}
				res, err := Solve(context.Background(), Problem{Oracle: ts, Norm: norm}, make([]float64, d), s, method)
				if err != nil {
					t.Fatal(err)
				}
				c := res.Certificate
				if res.Status != Success || c == nil {
					t.Fatalf("%v δ=%v seed %d: status %v, certificate %+v", norm, delta, seed, res.Status, c)
				}
				if c.Rule.Exact() {
					exact++ // the minibatch reached M before a sampled certificate met Tol
					continue
				}
				if !c.Own || c.Delta != delta {
					t.Fatalf("%v δ=%v seed %d: certificate %+v, want the run's own at δ", norm, delta, seed, c)
				}
				samples += res.Stats.Samples
				tx := make([]float64, d)
				_ = ts.EvalExact(tx, res.X)
				subInto(tx, tx, res.X)
				if norm.Norm(tx) > c.Bound {
					fails++
				}
			}
			if lim := coverageLimit(solves, delta); float64(fails) > lim {
				t.Errorf("%v δ=%v: %d/%d failures > %.1f", norm, delta, fails, solves, lim)
			}
			if mean := samples / int64(solves-exact); mean >= m/2 {
				t.Errorf("%v δ=%v: %d unit samples per sampled stop, not below M/2", norm, delta, mean)
			}
			if float64(exact) > exactShare*solves {
				t.Errorf("%v δ=%v: %d/%d solves needed the exact pass", norm, delta, exact, solves)
			}
			t.Logf("%v %v δ=%v: %d/%d failures, %d exact stops, %d unit samples per sampled stop", method, norm, delta, fails, solves, exact, samples/int64(max(1, solves-exact)))
		}
	}
}

// TestSampledCertificateSpentCounted: when the sampled stages cannot meet
// the tolerance below M terms, the exact pass follows and the certificate
// counts the stages' term evaluations with its own.
func TestSampledCertificateSpentCounted(t *testing.T) {
	const m = 4096
	l2, _ := NewLP(2, 4)
	ts := newTermSum(0, 1, termSet("normal", m, 4, 9))
	x := ts.mean
	c, spent, err := sampledCertificate(context.Background(), ts, x, l2, 0.15, 0.05, 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil || c != nil || spent.samples == 0 || spent.samples > m/2 || spent.calls != spent.samples {
		t.Fatalf("got %v, %+v, %v; want the exact pass after stages of at most M/2 = %d terms", c, spent, err, m/2)
	}
	s := &Settings{Certify: CertifySettings{Sampled: true, Delta: 0.05}}
	cert, err := certify(context.Background(), Problem{Oracle: ts, Norm: l2}, &Result{X: x, Tol: 0.15}, s, 0, nil)
	if want := int64(m) + spent.samples; err != nil || cert.Rule != RuleFiniteSum || cert.Samples != want || cert.Calls != 1+spent.calls {
		t.Fatalf("certify: %+v, %v; want RuleFiniteSum counting %d samples in %d calls", cert, err, want, 1+spent.calls)
	}
}
