package solver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

// certLaw is the law of the coordinates of a unit sample's noise in the
// certificate tests: mean 0, variance certLaw.variance(p).
type certLaw int

const (
	lawGaussian   certLaw = iota // standard Gaussian
	lawStudentT                  // Student-t, 2.5 degrees of freedom: variance 5, no fourth moment
	lawLognormal                 // e^g − e^{1/2}: skewed, variance (e − 1)e
	lawRademacher                // ±1
	lawTwoPoint                  // +1 w.p. 1 − p, −(1 − p)/p w.p. p: variance (1 − p)/p
)

func (l certLaw) String() string {
	return [...]string{"gaussian", "student-t", "lognormal", "rademacher", "two-point"}[l]
}

func (l certLaw) variance(p float64) float64 {
	switch l {
	case lawStudentT:
		return 2.5 / 0.5
	case lawLognormal:
		return (math.E - 1) * math.E
	case lawTwoPoint:
		return (1 - p) / p
	}
	return 1
}

// support returns the two values of a bounded law, or ok = false.
func (l certLaw) support(p float64) (lo, hi float64, ok bool) {
	switch l {
	case lawRademacher:
		return -1, 1, true
	case lawTwoPoint:
		return -(1 - p) / p, 1, true
	}
	return 0, 0, false
}

// certOracle is τ(x; ξ) = x/2 + b + ζ̄ on R^d, ζ̄ the mean of Size
// independent noise vectors with independent coordinates of law law
// (sums drawn exactly: Gaussian in closed form, the others term by term).
// It declares the variance bound E‖ζ‖² ≤ E‖ζ‖₂² = d·Var (every norm of
// the tests is at most ℓ2 or Frobenius) when declareVar is set, and for
// the bounded laws the almost-sure bound sup ‖ζ‖ over the 2^d vectors of
// support values when declareBound is set.
type certOracle struct {
	d                        int
	b                        []float64
	law                      certLaw
	p                        float64
	declareVar, declareBound bool
	pcg                      rand.PCG
	rng                      *rand.Rand
	t                        distuv.StudentsT
}

func newCertOracle(d int, b []float64, law certLaw, p float64) *certOracle {
	o := &certOracle{d: d, b: b, law: law, p: p}
	o.rng = rand.New(&o.pcg)
	o.t = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 2.5, Src: &o.pcg}
	return o
}

func (o *certOracle) Len() int     { return o.d }
func (o *certOracle) Model() Model { return SamplewiseLipschitz }

func (o *certOracle) EvalExact(dst, x []float64) error {
	for i := range dst {
		dst[i] = x[i]/2 + o.b[i]
	}
	return nil
}

func (o *certOracle) Eval(dst, x []float64, s Sample) (int, error) {
	m := max(s.Size, 1)
	o.EvalExact(dst, x)
	o.pcg.Seed(s.Seed, 0x9e3779b97f4a7c15)
	for i := range dst {
		sum := 0.0
		switch o.law {
		case lawGaussian:
			sum = math.Sqrt(float64(m)) * o.rng.NormFloat64()
		default:
			for range m {
				switch o.law {
				case lawStudentT:
					sum += o.t.Rand()
				case lawLognormal:
					sum += math.Exp(o.rng.NormFloat64()) - math.Exp(0.5)
				case lawRademacher:
					sum += float64(2*o.rng.IntN(2) - 1)
				case lawTwoPoint:
					if o.rng.Float64() < o.p {
						sum -= (1 - o.p) / o.p
					} else {
						sum++
					}
				}
			}
		}
		dst[i] += sum / float64(m)
	}
	return m, nil
}

func (o *certOracle) NoiseVariance(_ []float64, _ Norm) float64 {
	if !o.declareVar {
		return math.Inf(1)
	}
	return float64(o.d) * o.law.variance(o.p)
}

func (o *certOracle) NoiseBound(_ []float64, norm Norm) float64 {
	lo, hi, ok := o.law.support(o.p)
	if !o.declareBound || !ok {
		return math.Inf(1)
	}
	v, b := make([]float64, o.d), 0.0
	for mask := range 1 << o.d {
		for i := range v {
			v[i] = lo
			if mask>>i&1 == 1 {
				v[i] = hi
			}
		}
		b = math.Max(b, norm.Norm(v))
	}
	return b
}

var (
	_ VarianceBound = (*certOracle)(nil)
	_ NoiseBound    = (*certOracle)(nil)
)

// certNorms are the norms of the coverage tests, on R⁴ (Schatten on 2×2).
func certNorms(t testing.TB) []Norm {
	l2, err := NewLP(2, 4)
	require.NoError(t, err)
	linf, err := NewLInf(4)
	require.NoError(t, err)
	l4, err := NewLP(4, 4)
	require.NoError(t, err)
	s4, err := NewSchatten(4, 2, 2)
	require.NoError(t, err)
	return []Norm{l2, linf, l4, s4}
}

// certFailSlack is the largest failure fraction accepted for a claimed δ
// over n runs: δ plus three binomial standard deviations plus 1/n.
func certFailSlack(delta float64, n int) float64 {
	return delta + 3*math.Sqrt(delta*(1-delta)/float64(n)) + 1/float64(n)
}

func TestCertifyCoverage(t *testing.T) {
	// Certificates at a fixed x̂ = 0 of T(x) = x/2 + b, whose true residual
	// ‖b‖ is set to the noise scale of the certificate's averages, r₀ =
	// √(d·Var/m) (m the samples of one bucket, or of the whole average for
	// the bounded-noise rule). Over N runs with fixed seeds the bound may
	// fall below r₀ in a fraction at most δ (plus binomial slack), for
	// every rigorous rule, law and norm. The bounded-noise rule runs only
	// on the bounded laws (Rademacher and the two-point laws), the only
	// ones with an almost-sure bound; variance-mom runs on all of them.
	//
	// Non-vacuity: on the good event of the median of means (probability
	// ≥ 1 − δ > 1/2, so for the median run) r* ≤ 2ε and ‖τ̂ − T‖ ≤ r* + ε,
	// so Bound ≤ r₀ + 2(r* + ε) ≤ r₀ + 6ε, and ε/r₀ = √(κ/p) (σ² = d·Var):
	// median Bound/true ≤ 1 + 6√(κ/p). For the bounded-noise rule,
	// Bound ≤ r₀ + 2ρ on its good event, with ρ/r₀ =
	// √(2κL·min{b², σ²}/σ²) + C·L·b/(3√N·σ), L = ln(2/δ).
	const (
		runs     = 400
		m        = 20 // unit samples per bucket
		momDelta = 0.01
		bnDelta  = 0.05
		bnCalls  = 5 // bounded-noise: 5 calls of m, one average of 100
	)
	type law struct {
		l certLaw
		p float64
	}
	laws := []law{{lawGaussian, 0}, {lawStudentT, 0}, {lawLognormal, 0}, {lawRademacher, 0}, {lawTwoPoint, 1e-4}, {lawTwoPoint, 1e-2}}
	dir := []float64{1, -0.5, 0.25, 0.8}
	var table []string
	for _, rule := range []CertRule{RuleVarianceMoM, RuleBoundedNoise} {
		for _, lw := range laws {
			if _, _, bounded := lw.l.support(lw.p); rule == RuleBoundedNoise && !bounded {
				continue
			}
			for _, norm := range certNorms(t) {
				name := fmt.Sprintf("%v/%v(p=%g)/%v", rule, lw.l, lw.p, norm)
				d := norm.Len()
				delta, calls, n := momDelta, 0, m
				if rule == RuleBoundedNoise {
					delta, calls, n = bnDelta, bnCalls, m*bnCalls
				}
				sigma := math.Sqrt(float64(d) * lw.l.variance(lw.p))
				r0 := sigma / math.Sqrt(float64(n))
				b := slices.Clone(dir)
				nb := norm.Norm(b)
				for i := range b {
					b[i] *= r0 / nb
				}
				o := newCertOracle(d, b, lw.l, lw.p)
				o.declareVar, o.declareBound = true, rule == RuleBoundedNoise
				var limit float64
				switch rule {
				case RuleVarianceMoM:
					_, p := momChebyshevBuckets(delta)
					limit = 1 + 6*math.Sqrt(norm.Kappa()/p)
				case RuleBoundedNoise:
					bb := o.NoiseBound(nil, norm)
					l := math.Log(2 / delta)
					v := math.Min(bb*bb, sigma*sigma)
					limit = 1 + 2*(math.Sqrt(2*norm.Kappa()*l*v)/sigma+norm.C()*l*bb/(3*math.Sqrt(float64(n))*sigma))
				}
				p := Problem{Oracle: o, Norm: norm}
				res := &Result{X: make([]float64, d)}
				fails := 0
				ratio := make([]float64, 0, runs)
				for seed := range uint64(runs) {
					s := Settings{Seed: seed, Certify: CertifySettings{Delta: delta, Samples: m, Calls: calls}}
					c, err := certify(context.Background(), p, res, &s, 0, nil)
					require.NoError(t, err, name)
					require.Equal(t, rule, c.Rule, name)
					require.Equal(t, delta, c.Delta, name)
					truth := norm.Norm(b)
					if truth > c.Bound {
						fails++
					}
					ratio = append(ratio, c.Bound/truth)
				}
				slices.Sort(ratio)
				med := ratio[runs/2]
				table = append(table, fmt.Sprintf("%-44s %3d/%d  median Bound/true %8.3g (limit %.3g)", name, fails, runs, med, limit))
				require.LessOrEqual(t, float64(fails)/runs, certFailSlack(delta, runs), name)
				require.LessOrEqual(t, med, limit, name)
				require.GreaterOrEqual(t, med, 1.0, name)
			}
		}
	}
	t.Logf("coverage (rule/law/norm, failures/solves, median Bound/true):\n%s", strings.Join(table, "\n"))
}

func TestCertifyOldRuleCounterexample(t *testing.T) {
	// The counterexample: T(x) = x/2 on R, unit noise +1 w.p. 1 − p
	// and −(1 − p)/p w.p. p = 1e-4 (mean 0, variance (1 − p)/p), calls of 10
	// samples. At x̂ = 2 the true residual is 1, but almost every bucket
	// mean is T(x̂) + 1 = x̂, so the old empirical-scale rule (Bound =
	// ‖τ̂ − x̂‖ + r* + √(3V̂)) bounds it by about 0 in most runs, against a
	// claimed δ = 5%. The oracle declares nothing, so the certificate is
	// now an estimate without probability; declaring the variance makes it
	// a rigorous variance-mom bound that covers.
	const runs = 400
	l2, err := NewLP(2, 1)
	require.NoError(t, err)
	o := newCertOracle(1, []float64{0}, lawTwoPoint, 1e-4)
	p := Problem{Oracle: o, Norm: l2}
	res := &Result{X: []float64{2}}
	k := momBuckets(DefaultCertDelta)
	oldFails, newFails := 0, 0
	for seed := range uint64(runs) {
		// The old rule, as the estimate rule still computes it.
		rng := rand.New(rand.NewPCG(seed, 1))
		taus := make([][]float64, k)
		for i := range taus {
			taus[i] = make([]float64, 1)
			_, err := o.Eval(taus[i], res.X, Sample{Seed: rng.Uint64(), Size: 10})
			require.NoError(t, err)
		}
		best, rstar, eps := momScale(taus, l2, make([]float64, 1))
		if math.Abs(taus[best][0]-2)+rstar+eps < 1 {
			oldFails++
		}

		o.declareVar = false
		s := Settings{Seed: seed, Certify: CertifySettings{Delta: DefaultCertDelta, Samples: 10}}
		c, err := certify(context.Background(), p, res, &s, 0, nil)
		require.NoError(t, err)
		require.Equal(t, RuleEstimate, c.Rule)
		require.False(t, c.Rigorous())
		require.True(t, math.IsNaN(c.Delta), "no probability claimed")
		require.Contains(t, c.Guarantee(), "estimate, no guarantee")
		require.NotContains(t, c.Guarantee(), "probability")

		o.declareVar = true
		c, err = certify(context.Background(), p, res, &s, 0, nil)
		require.NoError(t, err)
		require.Equal(t, RuleVarianceMoM, c.Rule)
		require.Contains(t, c.Guarantee(), "with probability ≥ 0.95 (rule variance-mom)")
		if c.Bound < 1 {
			newFails++
		}
	}
	t.Logf("old empirical-scale rule: %d/%d bounds below the true residual (claimed δ = %v); variance-mom: %d/%d",
		oldFails, runs, DefaultCertDelta, newFails, runs)
	require.Greater(t, oldFails, runs/2, "the old rule fails often")
	require.LessOrEqual(t, float64(newFails)/runs, certFailSlack(DefaultCertDelta, runs))
}

// fakeCell is a stand-in for a DEQ cell's evaluator: T(x) = (1/M) Σ_i
// (x/2 + c_i), a unit sample one term drawn uniformly. It has the
// evaluators' Terms and EvalExact, so it is a FiniteSum without naming the
// interface.
type fakeCell struct {
	c     []float64 // M terms, one scalar each, added to every coordinate
	d     int
	exact int // EvalExact calls
}

func (f *fakeCell) Len() int     { return f.d }
func (f *fakeCell) Model() Model { return SamplewiseLipschitz }
func (f *fakeCell) Terms() int   { return len(f.c) }
func (f *fakeCell) EvalExact(dst, x []float64) error {
	f.exact++
	mean := 0.0
	for _, c := range f.c {
		mean += c / float64(len(f.c))
	}
	for i := range dst {
		dst[i] = x[i]/2 + mean
	}
	return nil
}
func (f *fakeCell) Eval(dst, x []float64, s Sample) (int, error) {
	rng := rand.New(rand.NewPCG(s.Seed, 3))
	n := max(s.Size, 1)
	sum := 0.0
	for range n {
		sum += f.c[rng.IntN(len(f.c))]
	}
	for i := range dst {
		dst[i] = x[i]/2 + sum/float64(n)
	}
	return n, nil
}

var _ FiniteSum = (*fakeCell)(nil)

func TestCertifyFiniteSum(t *testing.T) {
	// A finite-sum oracle gets the exact residual from one EvalExact call,
	// counted as M samples, with Delta 0; VR-GHAL's estimated stop becomes
	// Success when that exact residual meets the tolerance.
	f := &fakeCell{c: []float64{1, -2, 0.5, 3}, d: 3}
	l2, _ := NewLP(2, 3)
	p := Problem{Oracle: f, Norm: l2}
	x := []float64{1, 2, 3}
	c, err := certify(context.Background(), p, &Result{X: x}, &Settings{Certify: CertifySettings{Delta: 0.05}}, 0, nil)
	require.NoError(t, err)
	require.Equal(t, RuleFiniteSum, c.Rule)
	require.True(t, c.Rigorous())
	require.True(t, c.Rule.Exact())
	require.Zero(t, c.Delta)
	require.Equal(t, int64(4), c.Samples)
	require.Equal(t, int64(1), c.Calls)
	require.Equal(t, 1, f.exact)
	// T(x) − x = 0.625 − x/2.
	want := math.Sqrt(math.Pow(0.625-0.5, 2) + math.Pow(0.625-1, 2) + math.Pow(0.625-1.5, 2))
	require.InDelta(t, want, c.Bound, 1e-12)
	require.Equal(t, c.Bound, c.Estimate)
	require.Contains(t, c.Guarantee(), "(exact, rule finite-sum-exact)")

	res, err := Solve(context.Background(), p, make([]float64, 3), &Settings{Tol: 0.05, MaxIter: 30, Seed: 1}, VRGHAL{Gamma: 0.5, SampleScale: 0.05})
	require.NoError(t, err)
	require.Equal(t, RuleFiniteSum, res.Certificate.Rule)
	if res.Certificate.Bound <= 0.05 {
		require.Equal(t, Success, res.Status)
	} else {
		require.Equal(t, ToleranceEstimated, res.Status)
	}
}

func TestCertifyBatchedPerExample(t *testing.T) {
	// Two examples of dimension 2; T is the identity plus a constant shift,
	// so the residual of every point is the shift. PerExample bounds each
	// example; with AggMean the shared slack is multiplied by the number of
	// examples.
	shift := []float64{0.3, 0, 0, 0.1}
	o := &vrShiftNoise{shift: shift, s: 0.01}
	ex, _ := NewLP(2, 2)
	for _, agg := range []Aggregate{AggMax, AggMean} {
		b, err := NewBatched(ex, 2)
		require.NoError(t, err)
		b.Agg = agg
		res := &Result{X: make([]float64, 4)}
		s := Settings{Certify: CertifySettings{Delta: 0.05, Samples: 100}}
		c, err := certify(context.Background(), Problem{Oracle: o, Norm: b}, res, &s, 0, nil)
		require.NoError(t, err)
		require.Equal(t, RuleVarianceMoM, c.Rule)
		require.Len(t, c.PerExample, 2)
		require.Equal(t, 0.05, c.Delta)
		slack := c.Bound - c.Estimate
		require.Greater(t, slack, 0.0)
		if agg == AggMean {
			slack *= 2
		}
		require.GreaterOrEqual(t, c.PerExample[0], 0.3)
		require.GreaterOrEqual(t, c.PerExample[1], 0.1)
		require.InDelta(t, c.PerExample[0]-slack, 0.3, 0.01)
		require.InDelta(t, c.PerExample[1]-slack, 0.1, 0.01)
	}
}

// vrShiftNoise is τ(x; ξ) = x + shift + s·ḡ with Gaussian ḡ ~ N(0, I/Size).
// It declares the variance E‖s·g‖² ≤ s²·Len() (ℓ2, which bounds the norms
// of the tests).
type vrShiftNoise struct {
	shift []float64
	s     float64
	pcg   rand.PCG
}

func (o *vrShiftNoise) Len() int     { return len(o.shift) }
func (o *vrShiftNoise) Model() Model { return SamplewiseLipschitz }
func (o *vrShiftNoise) NoiseVariance(_ []float64, _ Norm) float64 {
	return o.s * o.s * float64(len(o.shift))
}
func (o *vrShiftNoise) Eval(dst, x []float64, s Sample) (int, error) {
	o.pcg.Seed(s.Seed, 1)
	rng := rand.New(&o.pcg)
	n := max(s.Size, 1)
	for i := range dst {
		dst[i] = x[i] + o.shift[i] + o.s*rng.NormFloat64()/math.Sqrt(float64(n))
	}
	return n, nil
}

func TestCertifyScaleTermIsNeeded(t *testing.T) {
	// The estimate rule's event ‖τ̂ − T(x)‖ ≤ r* + √(3V̂) on skewed noise with
	// one sample per call: it holds here in all but a fraction δ of trials
	// (plus binomial slack), while the radius r* alone, without the scale
	// term, fails in most of them. The second check shows that this setting
	// detects an under-scaled estimate. (The counterexample test shows a
	// law on which the scale term does not help: hence no probability.)
	const trials = 1000
	o := newVRAffine(1, 1, 0.5, false, 1, vrLognormal, BoundedVariance)
	norm := vrNorm(t, false, 1)
	x := []float64{0.7}
	tx := make([]float64, 1)
	require.NoError(t, o.EvalExact(tx, x))
	k := momBuckets(DefaultCertDelta)
	taus := make([][]float64, k)
	for i := range taus {
		taus[i] = make([]float64, 1)
	}
	diff := make([]float64, 1)
	rng := rand.New(rand.NewPCG(2, 3))
	fails, radiusFails := 0, 0
	for range trials {
		for _, tau := range taus {
			_, err := o.Eval(tau, x, Sample{Seed: rng.Uint64(), Size: 1})
			require.NoError(t, err)
		}
		best, rstar, eps := momScale(taus, norm, diff)
		e := math.Abs(taus[best][0] - tx[0])
		if e > rstar+eps {
			fails++
		}
		if e > rstar {
			radiusFails++
		}
	}
	t.Logf("%d/%d trials outside r* + √(3V̂), %d outside r*", fails, trials, radiusFails)
	require.LessOrEqual(t, float64(fails)/trials, DefaultCertDelta+vrBinomialSlack(DefaultCertDelta, trials))
	require.Greater(t, float64(radiusFails)/trials, 0.5)
}

func TestCertifyCalls(t *testing.T) {
	// The variance-mom rule reports the requested δ for any number of
	// calls: the per-bucket failure probability p follows k
	// (momBucketFailure), and the budget n·K is split into the default
	// bucket count. The estimate rule uses at least 3 calls and no δ.
	o := &vrShiftNoise{shift: []float64{1, 0}, s: 0.1}
	l2, _ := NewLP(2, 2)
	res := &Result{X: make([]float64, 2)}
	kDef, _ := momChebyshevBuckets(0.05)
	for _, tc := range []struct {
		calls int
		want  int64
	}{{0, int64(kDef)}, {54, 54}, {18, 18}, {1, 1}} {
		s := Settings{Certify: CertifySettings{Delta: 0.05, Samples: 10, Calls: tc.calls}}
		c, err := certify(context.Background(), Problem{Oracle: o, Norm: l2}, res, &s, 0, nil)
		require.NoError(t, err)
		require.Equal(t, 0.05, c.Delta, "calls %d", tc.calls)
		require.Equal(t, tc.want, c.Calls, "calls %d", tc.calls)
	}
	// Without Samples the budget is the suggested size times momBuckets(δ).
	s := Settings{Certify: CertifySettings{Delta: 0.05}}
	c, err := certify(context.Background(), Problem{Oracle: o, Norm: l2}, res, &s, 7, nil)
	require.NoError(t, err)
	require.Equal(t, int64(7*momBuckets(0.05)), c.Samples)

	u := &vrShift{d: 2, sign: []float64{1, 1}, c: []float64{0, 0}, b: []float64{1, 0}, s: 0.1}
	u.rng = rand.New(&u.pcg)
	u.bernoulli = distuv.Binomial{P: 0.5, Src: &u.pcg}
	for _, calls := range []int{0, 1, 18} {
		s := Settings{Certify: CertifySettings{Delta: 0.05, Samples: 10, Calls: calls}}
		c, err := certify(context.Background(), Problem{Oracle: u, Norm: l2}, res, &s, 0, nil)
		require.NoError(t, err)
		require.Equal(t, RuleEstimate, c.Rule)
		require.True(t, math.IsNaN(c.Delta))
		want := int64(max(calls, 3))
		if calls == 0 {
			want = int64(momBuckets(0.05))
		}
		require.Equal(t, want, c.Calls)
	}
}

func TestMoMBucketFailure(t *testing.T) {
	// p is the largest failure probability with P(Bin(k, p) ≥ k/2) ≤ δ;
	// the default bucket count is at most about 2 ln(1/δ), at p ≈ 0.1, for
	// small δ (against the Hoeffding count 18 ln(1/δ) at p = 1/3).
	for _, k := range []int{1, 2, 3, 5, 9, 25} {
		for _, delta := range []float64{0.3, 0.05, 1e-3} {
			p := momBucketFailure(k, delta)
			tail := binomialTail(k, (k+1)/2, p)
			require.LessOrEqual(t, tail, delta)
			require.Greater(t, binomialTail(k, (k+1)/2, p*(1+1e-6)), delta*(1-1e-4), "k=%d δ=%v: p is the largest", k, delta)
		}
	}
	require.Equal(t, 0.05, math.Round(momBucketFailure(1, 0.05)*1e9)/1e9)
	for _, delta := range []float64{1e-3, 1e-6} {
		k, p := momChebyshevBuckets(delta)
		require.GreaterOrEqual(t, float64(k), math.Log(1/delta), "δ = %v", delta)
		require.LessOrEqual(t, float64(k), 2.5*math.Log(1/delta), "δ = %v", delta)
		require.InDelta(t, 0.11, p, 0.03)
		require.Less(t, float64(k), 18*math.Log(1/delta)/4)
	}
	require.Panics(t, func() { momBucketFailure(0, 0.1) })
	require.Panics(t, func() { momChebyshevBuckets(1) })
}

func TestVRGHALSuccessMeansBound(t *testing.T) {
	// With a declared variance, VR-GHAL stops with Success only when its
	// bound R̃ + 3σ√(3κ/n) is at most Tol, so the true residual exceeds Tol
	// in at most a fraction δ of runs; the same oracle without the
	// declaration stops earlier, on its estimate, with ToleranceEstimated
	// (its certificate is an estimate, so it is not upgraded).
	const (
		runs = 60
		tol  = 0.1
	)
	linf, _ := NewLInf(4)
	missed := 0
	for seed := range uint64(runs) {
		o := newCertOracle(4, []float64{1, -1, 0.5, 0}, lawGaussian, 0)
		o.declareVar = true
		p := Problem{Oracle: o, Norm: linf}
		res, err := Solve(context.Background(), p, make([]float64, 4), &Settings{Tol: tol, MaxIter: 30, Seed: seed}, VRGHAL{Gamma: 0.5})
		require.NoError(t, err)
		require.Equal(t, Success, res.Status, "seed %d", seed)
		require.Equal(t, RuleVarianceMoM, res.Certificate.Rule)
		tx := make([]float64, 4)
		require.NoError(t, o.EvalExact(tx, res.X))
		subInto(tx, tx, res.X)
		if linf.Norm(tx) > tol {
			missed++
		}
		o.declareVar = false
		est, err := Solve(context.Background(), p, make([]float64, 4), &Settings{Tol: tol, MaxIter: 30, Seed: seed}, VRGHAL{Gamma: 0.5})
		require.NoError(t, err)
		require.Equal(t, ToleranceEstimated, est.Status, "seed %d", seed)
		require.Equal(t, RuleEstimate, est.Certificate.Rule)
		require.LessOrEqual(t, est.Stats.Iterations, res.Stats.Iterations)
	}
	require.LessOrEqual(t, float64(missed)/runs, certFailSlack(DefaultVRGHALDelta, runs))
}
