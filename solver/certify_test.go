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

// coordOracle is a certOracle on a bounded law that also declares its
// coordinatewise bounds: |η_i| ≤ max{|lo|, hi} and E η_i² = Var.
type coordOracle struct{ *certOracle }

var _ CoordinateNoiseBound = coordOracle{}

func (o coordOracle) CoordinateNoise(b, v, _ []float64) bool {
	lo, hi, ok := o.law.support(o.p)
	if !ok {
		return false
	}
	for i := range b {
		b[i] = math.Max(-lo, hi)
		v[i] = o.law.variance(o.p)
	}
	return true
}

// TestCertifyCoordinateCoverage is TestCertifyCoverage for the
// coordinatewise Bernstein radius of RuleBoundedNoise in ℓ∞: at a point
// whose true residual is the noise scale of the average, the bound falls
// below the truth in a fraction of at most δ of 400 runs (plus binomial
// slack), on the Rademacher law and on two-point laws with rare large
// outliers (probability 1e-2 and 1e-4), in dimensions 4 and 12. It also
// checks that the radius used is the smaller of the two rules' and that
// CertifyRadius sizes the certificate by it.
func TestCertifyCoordinateCoverage(t *testing.T) {
	const (
		runs  = 400
		delta = 0.05
		calls = 5
		m     = 20
	)
	type law struct {
		l certLaw
		p float64
	}
	for _, d := range []int{4, 12} {
		norm, err := NewLInf(d)
		require.NoError(t, err)
		for _, lw := range []law{{lawRademacher, 0}, {lawTwoPoint, 1e-2}, {lawTwoPoint, 1e-4}} {
			name := fmt.Sprintf("d=%d/%v(p=%g)", d, lw.l, lw.p)
			n := float64(calls * m)
			r0 := math.Sqrt(lw.l.variance(lw.p) / n)
			b := make([]float64, d)
			for i := range b {
				b[i] = r0 * math.Pow(-1, float64(i))
			}
			o := coordOracle{newCertOracle(d, b, lw.l, lw.p)}
			o.declareVar, o.declareBound = true, true
			x := make([]float64, d)
			nd, ok := declaredNoise(o, x, norm)
			require.True(t, ok, name)
			require.NotNil(t, nd.cb, name)
			banach := boundedNoiseRadius(nd.kappa, nd.c, delta, nd.b, nd.v, n)
			require.LessOrEqual(t, nd.radius(delta, n), banach, name)
			p := Problem{Oracle: o, Norm: norm}
			res := &Result{X: x}
			fails := 0
			for seed := range uint64(runs) {
				s := Settings{Seed: seed, Certify: CertifySettings{Delta: delta, Samples: m, Calls: calls}}
				c, err := certify(context.Background(), p, res, &s, 0, nil)
				require.NoError(t, err, name)
				require.Equal(t, RuleBoundedNoise, c.Rule, name)
				require.InDelta(t, nd.radius(delta, n), c.Bound-c.Estimate, 1e-12*c.Bound, name)
				if r0 > c.Bound {
					fails++
				}
			}
			require.LessOrEqual(t, float64(fails)/runs, certFailSlack(delta, runs), name)
			// CertifyRadius draws the smallest N whose radius meets its target.
			c, err := CertifyRadius(context.Background(), p, x, 0.5, 1, &Settings{Seed: 1, Certify: CertifySettings{Delta: delta}})
			require.NoError(t, err, name)
			require.LessOrEqual(t, c.Bound-c.Estimate, 0.5*(1+1e-12), name)
			require.Greater(t, nd.radius(delta, float64(c.Samples)-1), 0.5, name)
		}
	}
}

// TestCoordinateRadiusSharperInLInf: on a law with many coordinates the
// coordinatewise radius is far below the Banach-space one, which pays
// κ·E‖η‖²∞ instead of max_i E η_i² (the reason for the rule), and an
// oracle that declares nothing coordinatewise, or a norm other than ℓ∞,
// keeps the Banach-space radius.
func TestCoordinateRadiusSharperInLInf(t *testing.T) {
	const d, delta, n = 12, 0.05, 1000.0
	norm, err := NewLInf(d)
	require.NoError(t, err)
	o := coordOracle{newCertOracle(d, make([]float64, d), lawRademacher, 0)}
	o.declareVar, o.declareBound = true, true
	x := make([]float64, d)
	nd, _ := declaredNoise(o, x, norm)
	banach := boundedNoiseRadius(nd.kappa, nd.c, delta, nd.b, nd.v, n)
	require.Less(t, nd.radius(delta, n), banach/2)
	require.InDelta(t, 1, nd.radius(delta, nd.size(delta, 0.1))/0.1, 1e-9)
	plain, _ := declaredNoise(o.certOracle, x, norm)
	require.Nil(t, plain.cb)
	l2, err := NewLP(2, d)
	require.NoError(t, err)
	other, _ := declaredNoise(o, x, l2)
	require.Nil(t, other.cb)
}

// TestMoMPlanCheapest checks that the variance rule's plan needs no more
// unit samples for a target radius than either alternative it chooses
// between: one bucket at p = δ with ε = a, or the buckets of
// momChebyshevBuckets with ε = a/2.
func TestMoMPlanCheapest(t *testing.T) {
	for _, delta := range []float64{0.3, 0.05, 0.02, 0.01, 3e-3, 2e-3, 1e-3, 1e-6} {
		k, p, share := momPlan(delta)
		n := float64(k) / (p * share * share)
		km, pm := momChebyshevBuckets(delta)
		require.LessOrEqual(t, n, 1/momBucketFailure(1, delta)*(1+1e-12), "δ = %g", delta)
		require.LessOrEqual(t, n, 4*float64(km)/pm*(1+1e-12), "δ = %g", delta)
		require.Equal(t, k == 1, share == 1, "δ = %g", delta)
		require.InDelta(t, momBucketFailure(k, delta), p, 1e-15, "δ = %g", delta)
	}
	k, _, _ := momPlan(0.01)
	require.Equal(t, 1, k, "a single bucket is cheaper at δ = 0.01")
	k, _, _ = momPlan(1e-3)
	require.Greater(t, k, 1, "the median of means is cheaper at δ = 1e-3")
}

// TestCertifyRadiusVarianceCoverage: CertifyRadius under a variance
// declaration alone, with the plan of momPlan (one bucket at δ = 0.05 and
// 0.01, Chebyshev on the whole sample; several at δ = 1e-3), with the
// radius set so that about 400 unit samples are drawn, at x̂ = 0 of
// T(x) = x/2 + b with ‖b‖ = 2·radius, so that the bound fails exactly when
// the estimate errs by more than about the radius. Over 400 fixed seeds per
// law (heavy tails, rare large outliers) and norm, failures stay within δ
// plus binomial slack; a single bucket's slack is the radius itself. Were
// CertifyRadius to pick RuleVarianceTruncated instead (not at these sizes:
// at about 400 unit samples the rounding of its sizes leaves the median of
// means cheaper; its coverage is TestCertifyTruncatedCoverage's), the same
// plan's number of buckets would be requested through Certify.Calls, which
// pins the median of means.
func TestCertifyRadiusVarianceCoverage(t *testing.T) {
	const runs, size = 400, 400 // the radius is set so that N ≈ size
	for _, delta := range []float64{0.05, 0.01, 1e-3} {
		k, pk, share := momPlan(delta)
		for _, lw := range radiusLaws {
			for _, norm := range certNorms(t)[:2] {
				name := fmt.Sprintf("δ=%g/%v(p=%g)/%v", delta, lw.l, lw.p, norm)
				d := norm.Len()
				sigma2 := float64(d) * lw.l.variance(lw.p)
				radius := math.Sqrt(norm.Kappa() * sigma2 * float64(k) / (pk * share * share * size))
				o, truth := radiusOracle(norm, lw.l, lw.p, 2*radius)
				p := Problem{Oracle: o, Norm: norm}
				x := make([]float64, d)
				w := norm.Kappa() * sigma2
				calls := 0
				if _, ok := truncCheaper(norm.Kappa(), norm.C(), w, delta, radius, momCost(w, radius, k, pk, share)); ok && flatHilbert(norm) {
					calls = k // RuleVarianceTruncated otherwise: TestCertifyTruncatedCoverage
				}
				fails := 0
				for seed := range uint64(runs) {
					c, err := CertifyRadius(context.Background(), p, x, radius, 1, &Settings{Seed: seed, Certify: CertifySettings{Delta: delta, Calls: calls}})
					require.NoError(t, err, name)
					require.Equal(t, RuleVarianceMoM, c.Rule, name)
					require.Equal(t, int64(k), c.Calls, name)
					if k == 1 {
						require.LessOrEqual(t, c.Bound-c.Estimate, radius*(1+1e-12), name)
					}
					if truth > c.Bound {
						fails++
					}
				}
				require.LessOrEqual(t, float64(fails)/runs, certFailSlack(delta, runs), name)
			}
		}
	}
}

// radiusLaws are the noise laws of the radius coverage tests: heavy tails
// (Student-t with 2.5 degrees of freedom, no fourth moment), skew
// (lognormal) and rare large outliers (two-point laws with probabilities
// 1e-2 and 1e-3).
var radiusLaws = [...]struct {
	l certLaw
	p float64
}{{lawStudentT, 0}, {lawLognormal, 0}, {lawTwoPoint, 1e-2}, {lawTwoPoint, 1e-3}}

// radiusOracle returns the oracle of a radius coverage test on norm,
// T(x) = x/2 + b with b along a fixed direction and ‖b‖ = truth, noise of
// law l (parameter p), declaring its variance bound only, and ‖b‖.
func radiusOracle(norm Norm, l certLaw, p, truth float64) (*certOracle, float64) {
	b := []float64{1, -0.5, 0.25, 0.8}
	nb := norm.Norm(b)
	for i := range b {
		b[i] *= truth / nb
	}
	o := newCertOracle(norm.Len(), b, l, p)
	o.declareVar = true
	return o, norm.Norm(b)
}

// TestTruncFormulas checks the pieces of the truncated mean's bound: the
// bias inequality (u − τ)₊ ≤ u²/(4τ), with equality at u = 2τ; that the
// level τ = √((3k + CL)V/(4CL)) minimises the radius over τ; the closed
// form ρ = √(2κVL/k) + √(CLV(1 + CL/(3k))/(3k)) + CLr_c/(3k) at that
// level; and that ρ is below (√(2κ) + √(2C/3))·√(VL/k), the radius with
// the range bounded by 2τ alone at its best level √(3kV/(8CL)).
func TestTruncFormulas(t *testing.T) {
	for _, tau := range []float64{0.1, 1, 7} {
		for _, u := range []float64{0, 0.05, 0.5, 1, 2, 3, 14, 100} {
			require.LessOrEqual(t, math.Max(0, u-tau), u*u/(4*tau)*(1+1e-15)+1e-300, "τ=%g u=%g", tau, u)
		}
		require.InDelta(t, tau, (2*tau)*(2*tau)/(4*tau), 1e-12*tau, "equality at u = 2τ")
	}
	cases := []struct {
		kappa, c, v, l, rc float64
		k                  int
	}{
		{1, 1, 1, math.Log(2 / 0.01), 0, 100},
		{1, 1, 1, math.Log(2 / 0.01), 0.05, 100},
		{1, 1, 0.3, math.Log(2 / 1e-4), 0.01, 16384},
		{2, 1.5, 5, math.Log(2 / 0.05), 0, 7},
	}
	for _, tc := range cases {
		tau := truncLevel(tc.c, tc.v, tc.l, tc.k)
		rho := truncRadius(tc.kappa, tc.c, tc.v, tc.l, tau, tc.rc, tc.k)
		kf := float64(tc.k)
		cl := tc.c * tc.l
		want := math.Sqrt(2*tc.kappa*tc.v*tc.l/kf) + math.Sqrt(cl*tc.v*(1+cl/(3*kf))/(3*kf)) + cl*tc.rc/(3*kf)
		require.InDelta(t, want, rho, 1e-12*want, "%+v", tc)
		for _, f := range []float64{0.5, 0.9, 1.1, 2} {
			require.Greater(t, truncRadius(tc.kappa, tc.c, tc.v, tc.l, f*tau, tc.rc, tc.k), rho, "%+v: τ×%g", tc, f)
		}
		old := (math.Sqrt(2*tc.kappa) + math.Sqrt(2*tc.c/3)) * math.Sqrt(tc.v*tc.l/kf)
		require.Less(t, rho, old, "%+v", tc)
		require.LessOrEqual(t, truncConst(tc.kappa, tc.c)*math.Sqrt(tc.v*tc.l/kf), rho, "%+v: the constant is the many-calls limit", tc)
	}
	require.InDelta(t, 1.9916, truncConst(1, 1), 1e-4)
	require.Zero(t, truncRadius(1, 1, 0, 3, 0, 0, 10))
}

// TestPlanTruncated checks the plan's arithmetic: its radius at the
// planned centre accuracy is at most the target, its shares sum to δ, and
// its total is the sum of its parts; and that the planner picks the
// truncated rule exactly where its closed-form size is below the median of
// means' — at δ = 0.05 and below, not at δ = 0.1 — and only in flat
// Hilbert norms.
func TestPlanTruncated(t *testing.T) {
	for _, delta := range []float64{0.05, 0.01, 1e-3, 1e-6} {
		for _, a := range []float64{0.3, 0.01, 1e-4} {
			const w = 1.7
			p := planTruncated(1, 1, w, delta, a)
			name := fmt.Sprintf("δ=%g a=%g", delta, a)
			require.InDelta(t, delta, p.delta0+p.delta1, 1e-15, name)
			require.Equal(t, float64(p.centreK)*float64(p.centreSize)+float64(p.k)*float64(p.size), p.total, name)
			require.LessOrEqual(t, p.k, truncCalls, name)
			_, _, share := momPlan(p.delta0)
			eps := math.Sqrt(w / (float64(p.centreSize) * p.centreP))
			rc := eps / share // the planned r* + ε
			l := math.Log(2 / p.delta1)
			v := w/float64(p.size) + rc*rc
			rho := truncRadius(1, 1, v, l, truncLevel(1, v, l, p.k), rc, p.k)
			require.LessOrEqual(t, rho, a*(1+1e-9), name)
			require.Greater(t, rho, 0.9*a, name+": not oversized")
		}
	}
	const w, a = 1.0, 1e-3
	for _, tc := range []struct {
		delta float64
		want  bool
	}{{0.1, false}, {0.05, true}, {0.02, true}, {0.01, true}, {1e-3, true}, {1e-6, true}} {
		k, p, share := momPlan(tc.delta)
		mom := float64(k) * math.Ceil(w/(p*share*share*a*a))
		tp, ok := truncCheaper(1, 1, w, tc.delta, a, momCost(w, a, k, p, share))
		require.Equal(t, tc.want, ok, "δ = %g", tc.delta)
		require.Equal(t, tp.total < mom, ok, "δ = %g: momCost is the median of means' size", tc.delta)
	}
	l2, err := NewLP(2, 4)
	require.NoError(t, err)
	s2, err := NewSchatten(2, 2, 2)
	require.NoError(t, err)
	b2, err := NewBatched(l2, 2)
	require.NoError(t, err)
	for _, n := range []Norm{l2, s2} {
		require.True(t, flatHilbert(n), "%v", n)
	}
	for _, n := range append(certNorms(t)[1:3], b2) {
		require.False(t, flatHilbert(n), "%v", n)
	}
	// CertifyRadius follows the plan: truncated at δ = 0.01 in ℓ2, the
	// median of means in ℓ∞ and at δ = 0.05.
	o := newCertOracle(4, make([]float64, 4), lawGaussian, 0)
	o.declareVar = true
	x := make([]float64, 4)
	for _, tc := range []struct {
		norm  Norm
		delta float64
		want  CertRule
	}{{l2, 0.01, RuleVarianceTruncated}, {s2, 1e-3, RuleVarianceTruncated}, {l2, 0.05, RuleVarianceMoM}, {certNorms(t)[1], 0.01, RuleVarianceMoM}} {
		c, err := CertifyRadius(context.Background(), Problem{Oracle: o, Norm: tc.norm}, x, 0.2, 1, &Settings{Certify: CertifySettings{Delta: tc.delta}})
		require.NoError(t, err)
		require.Equal(t, tc.want, c.Rule, "%v δ=%g", tc.norm, tc.delta)
		require.Equal(t, tc.delta, c.Delta)
		// Solve's certificate, sized by a budget (here 2000 unit samples
		// per median-of-means bucket), picks the same rule and spends at
		// most the median of means' samples; with the calls fixed it keeps
		// the median of means.
		for _, calls := range []int{0, 3} {
			s := Settings{Certify: CertifySettings{Delta: tc.delta, Samples: 2000, Calls: calls}}
			sd, err := s.withDefaults()
			require.NoError(t, err)
			c, err := certify(context.Background(), Problem{Oracle: o, Norm: tc.norm}, &Result{X: x}, &sd, 0, nil)
			require.NoError(t, err)
			if calls > 0 {
				require.Equal(t, RuleVarianceMoM, c.Rule, "%v δ=%g calls=%d", tc.norm, tc.delta, calls)
				continue
			}
			k, _ := momChebyshevBuckets(tc.delta)
			require.Equal(t, tc.want, c.Rule, "%v δ=%g: budgeted", tc.norm, tc.delta)
			require.LessOrEqual(t, c.Samples, int64(k)*2000, "%v δ=%g: budgeted", tc.norm, tc.delta)
		}
	}
}

// TestCertifyTruncatedCoverage: RuleVarianceTruncated under a variance
// declaration alone, at x̂ = 0 of T(x) = x/2 + b with ‖b‖ = 2·radius (the
// bound fails exactly when the estimate errs by more than about the
// radius), over 400 fixed seeds per law — heavy tails (Student-t with 2.5
// degrees of freedom, no fourth moment), skew (lognormal) and rare large
// outliers (two-point laws with probabilities 1e-2 and 1e-3) — in ℓ2 and
// Schatten-2, at δ = 0.05 (the plan forced: at about 1000 unit samples
// the rounding of its sizes leaves one Chebyshev bucket the cheaper plan),
// 0.01 and 1e-3 (through CertifyRadius, which picks the rule). The radius is set so that about 1000 unit samples are
// drawn (ℓ2 and Schatten-2 on 2×2 matrices are the same norm on the same
// samples: the test checks that the rule reads the Schatten norm as
// Hilbert). Failures stay within δ plus binomial slack (certFailSlack), and
// the median Bound/true is at most 1 + 2·(the radius over the truth) = 2.
func TestCertifyTruncatedCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("400 runs per law, norm and δ")
	}
	const runs, size = 400, 1000
	l2, err := NewLP(2, 4)
	require.NoError(t, err)
	s2, err := NewSchatten(2, 2, 2)
	require.NoError(t, err)
	for _, delta := range []float64{0.05, 0.01, 1e-3} {
		for _, lw := range radiusLaws {
			for _, norm := range []Norm{l2, s2} {
				name := fmt.Sprintf("δ=%g/%v(p=%g)/%v", delta, lw.l, lw.p, norm)
				d := norm.Len()
				w := norm.Kappa() * float64(d) * lw.l.variance(lw.p)
				// The total falls like 1/radius²: rescale once from a
				// reference radius.
				ref := planTruncated(norm.Kappa(), norm.C(), w, delta, 1)
				radius := math.Sqrt(ref.total / size)
				plan := planTruncated(norm.Kappa(), norm.C(), w, delta, radius)
				o, truth := radiusOracle(norm, lw.l, lw.p, 2*radius)
				p := Problem{Oracle: o, Norm: norm}
				x := make([]float64, d)
				fails := 0
				ratio := make([]float64, 0, runs)
				for seed := range uint64(runs) {
					s := Settings{Seed: seed, Certify: CertifySettings{Delta: delta}}
					var c *Certificate
					if delta == 0.05 {
						sd, err := s.withDefaults()
						require.NoError(t, err)
						c, err = certifyPlanned(context.Background(), p, &Result{X: x}, &sd, 0, nil, &plan)
						require.NoError(t, err, name)
					} else {
						c, err = CertifyRadius(context.Background(), p, x, radius, 1, &s)
						require.NoError(t, err, name)
					}
					require.Equal(t, RuleVarianceTruncated, c.Rule, name)
					require.Equal(t, delta, c.Delta, name)
					require.Equal(t, int64(plan.total), c.Samples, name)
					if truth > c.Bound {
						fails++
					}
					ratio = append(ratio, c.Bound/truth)
				}
				slices.Sort(ratio)
				t.Logf("%-40s %3d/%d below the truth, median Bound/true %.3g, %d+%d calls", name, fails, runs, ratio[runs/2], plan.centreK, plan.k)
				require.LessOrEqual(t, float64(fails)/runs, certFailSlack(delta, runs), name)
				require.LessOrEqual(t, ratio[runs/2], 2.0, name)
			}
		}
	}
}

// TestTruncatedOnlyInFlatHilbertNorms: the truncated mean's bias bound
// needs the Pythagorean identity of a Hilbert norm on the whole vector, so
// every other norm — ℓ∞, ℓp and Schatten-p with p ≠ 2 (Schatten-∞
// included), and Batched norms even of Hilbert examples — keeps the median
// of means, through CertifyRadius and through Solve's budgeted certificate,
// at a δ where ℓ2 and Schatten-2, the control, take the truncated mean.
func TestTruncatedOnlyInFlatHilbertNorms(t *testing.T) {
	const delta = 1e-3
	l2, err := NewLP(2, 2)
	require.NoError(t, err)
	s2, err := NewSchatten(2, 2, 2)
	require.NoError(t, err)
	sInf, err := NewSchatten(math.Inf(1), 2, 2)
	require.NoError(t, err)
	bl2, err := NewBatched(l2, 2)
	require.NoError(t, err)
	bs2, err := NewBatched(s2, 1)
	require.NoError(t, err)
	norms := append(certNorms(t), s2, sInf, bl2, bs2)
	for i, norm := range norms {
		want := RuleVarianceMoM
		if i == 0 || norm == Norm(s2) {
			want = RuleVarianceTruncated // the control: the same sizes pick the rule
		}
		require.Equal(t, want == RuleVarianceTruncated, flatHilbert(norm), "%v", norm)
		d := norm.Len()
		o := newCertOracle(d, make([]float64, d), lawGaussian, 0)
		o.declareVar = true
		p := Problem{Oracle: o, Norm: norm}
		x := make([]float64, d)
		c, err := CertifyRadius(context.Background(), p, x, 0.2, 1, &Settings{Certify: CertifySettings{Delta: delta}})
		require.NoError(t, err)
		require.Equal(t, want, c.Rule, "%T %v: CertifyRadius", norm, norm)
		sd, err := (&Settings{Certify: CertifySettings{Delta: delta, Samples: 2000}}).withDefaults()
		require.NoError(t, err)
		c, err = certify(context.Background(), p, &Result{X: x}, &sd, 0, nil)
		require.NoError(t, err)
		require.Equal(t, want, c.Rule, "%T %v: budgeted", norm, norm)
	}
}

// TestTruncatedMeanTruncates runs truncatedMean on scripted calls: a
// centre call at 0 (one bucket, so r* = 0 and r_c = √(w/(s_c·p))), then k
// calls Y_j = u_j·e₁ on both sides of the level τ = √((3k + L)V/(4L)) of the
// plan, V = w/s + r_c² (κ = C = 1). The estimate must be the mean of the
// calls pulled back to within τ of the centre, with the same τ for both
// scripts (τ is fixed before the calls after the centre are drawn); its
// displacement from the plain mean must obey the bias inequality
// (u − τ)₊ ≤ u²/(4τ) summed over the calls; and the radius must be the
// formula's at that τ with V recomputed from the calls' fewest reported
// samples (the second script reports half the requested size once).
func TestTruncatedMeanTruncates(t *testing.T) {
	l2, err := NewLP(2, 3)
	require.NoError(t, err)
	const w = 0.5
	p := truncPlan{delta0: 0.01, delta1: 0.04, centreK: 1, centreP: 0.01, centreSize: 2, k: 6, size: 4}
	rc := math.Sqrt(w / (float64(p.centreSize) * p.centreP))
	l := math.Log(2 / p.delta1)
	tau := truncLevel(1, w/float64(p.size)+rc*rc, l, p.k)
	for _, script := range []struct {
		us   []float64
		used []int // reported unit samples of the centre and the k calls
		v    float64
	}{
		{[]float64{0.1 * tau, -0.5 * tau, 0.99 * tau, 1.5 * tau, -3 * tau, 40 * tau}, []int{2, 4, 4, 4, 4, 4, 4}, w/4 + rc*rc},
		{[]float64{2 * tau, 2 * tau, 2 * tau, -2 * tau, 0, 7 * tau}, []int{2, 4, 4, 2, 4, 4, 4}, w/2 + rc*rc},
	} {
		calls := 0
		eval := func(y []float64, size int) (int, error) {
			wantSize := p.size
			if calls == 0 {
				wantSize = p.centreSize
			}
			require.Equal(t, wantSize, size)
			clear(y)
			if calls > 0 {
				y[0] = script.us[calls-1]
			}
			calls++
			return script.used[calls-1], nil
		}
		dst := make([]float64, 3)
		rho, err := truncatedMean(dst, l2, w, p, nil, nil, eval)
		require.NoError(t, err)
		require.Equal(t, 1+p.k, calls)
		want, plain, bias := 0.0, 0.0, 0.0
		for _, u := range script.us {
			want += u * math.Min(1, tau/math.Abs(u)) / float64(p.k)
			plain += u / float64(p.k)
			bias += u * u / (4 * tau) / float64(p.k)
		}
		require.InDelta(t, want, dst[0], 1e-12*tau, "%v", script.us)
		require.Zero(t, dst[1])
		require.Zero(t, dst[2])
		require.LessOrEqual(t, math.Abs(plain-dst[0]), bias*(1+1e-12), "%v: the bias inequality", script.us)
		require.InDelta(t, truncRadius(1, 1, script.v, l, tau, rc, p.k), rho, 1e-12*rho, "%v", script.us)
	}
}

// TestCertifyRadiusCalls: CertifyRadius honours Certify.Calls. In ℓ2 at
// δ = 0.05, where it picks RuleVarianceTruncated on its own, one call gives
// the single Chebyshev bucket at ε = radius (p = momBucketFailure(1, δ))
// and five calls the median of means of five buckets at ε = radius/2; a
// bounded-noise certificate splits its size over the calls, drawing at
// least the size one call would.
func TestCertifyRadiusCalls(t *testing.T) {
	const delta, radius = 0.05, 0.05
	l2, err := NewLP(2, 4)
	require.NoError(t, err)
	x := make([]float64, 4)
	o := newCertOracle(4, []float64{0.1, 0, 0, 0}, lawStudentT, 0)
	o.declareVar = true
	p := Problem{Oracle: o, Norm: l2}
	w := l2.Kappa() * o.NoiseVariance(x, l2)
	for _, calls := range []int{0, 1, 5} {
		c, err := CertifyRadius(context.Background(), p, x, radius, 1, &Settings{Certify: CertifySettings{Delta: delta, Calls: calls}})
		require.NoError(t, err, "calls %d", calls)
		require.Equal(t, delta, c.Delta, "calls %d", calls)
		if calls == 0 {
			require.Equal(t, RuleVarianceTruncated, c.Rule)
			continue
		}
		require.Equal(t, RuleVarianceMoM, c.Rule, "calls %d", calls)
		require.Equal(t, int64(calls), c.Calls)
		eb := radius
		if calls > 1 {
			eb /= 2
		}
		size := math.Ceil(w / (momBucketFailure(calls, delta) * eb * eb))
		require.Equal(t, int64(calls)*int64(size), c.Samples, "calls %d", calls)
		if calls == 1 {
			require.LessOrEqual(t, c.Bound-c.Estimate, radius*(1+1e-12))
		}
	}
	b := newCertOracle(4, []float64{0.1, 0, 0, 0}, lawTwoPoint, 0.1)
	b.declareBound = true
	var one int64
	for _, calls := range []int{0, 1, 3} {
		c, err := CertifyRadius(context.Background(), Problem{Oracle: b, Norm: l2}, x, radius, 1, &Settings{Certify: CertifySettings{Delta: delta, Calls: calls}})
		require.NoError(t, err, "calls %d", calls)
		require.Equal(t, RuleBoundedNoise, c.Rule, "calls %d", calls)
		require.Equal(t, int64(max(calls, 1)), c.Calls, "calls %d", calls)
		require.LessOrEqual(t, c.Bound-c.Estimate, radius*(1+1e-12), "calls %d", calls)
		if calls <= 1 {
			one = c.Samples
			continue
		}
		require.GreaterOrEqual(t, c.Samples, one, "calls %d", calls)
		require.Less(t, c.Samples, one+int64(calls), "calls %d", calls)
	}
}
