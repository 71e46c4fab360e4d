package problems

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/solver"
)

// normExamples expands the norm families of Info.Norms into concrete names.
func normExamples(kind string) []string {
	switch kind {
	case "lp:P":
		return []string{"lp:4"}
	case "schatten:P":
		return []string{"schatten:2", "schatten:3", "schatten:inf"}
	}
	return []string{kind}
}

// suiteCase is one problem in one norm, at a small size.
type suiteCase struct {
	cfg  Config
	norm string // the name Config.Norm was parsed from
}

func (c suiteCase) String() string { return c.cfg.Name + "/" + c.norm }

// suiteCases returns every problem in every supported norm, small enough to
// test quickly, including the nonexpansive γ = 1 cases.
func suiteCases() []suiteCase {
	var out []suiteCase
	for _, info := range List() {
		for _, kind := range info.Norms {
			for _, n := range normExamples(kind) {
				dim := 7
				if info.Name == "matrix" {
					dim = 4
				}
				cfg := Config{Name: info.Name, Dim: dim, Seed: 11}
				norm, err := ParseNorm(cfg, n)
				if err != nil {
					panic(err)
				}
				cfg.Norm = norm
				out = append(out, suiteCase{cfg: cfg, norm: n})
			}
		}
	}
	return out
}

func mustNew(t testing.TB, c Config) *Problem {
	t.Helper()
	p, err := New(c)
	require.NoError(t, err, "%+v", c)
	return p
}

// newNamed builds the problem c describes in the norm named norm (the
// default for an empty name), as a command line would.
func newNamed(c Config, norm string) (*Problem, error) {
	if norm != "" {
		n, err := ParseNorm(c, norm)
		if err != nil {
			return nil, err
		}
		c.Norm = n
	}
	return New(c)
}

// mustNamed is newNamed for a valid configuration.
func mustNamed(t testing.TB, c Config, norm string) *Problem {
	t.Helper()
	p, err := newNamed(c, norm)
	require.NoError(t, err, "%+v in %s", c, norm)
	return p
}

func exactT(t testing.TB, p *Problem, x []float64) []float64 {
	t.Helper()
	tx := make([]float64, len(x))
	require.NoError(t, p.Oracle.EvalExact(tx, x))
	return tx
}

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func TestNewShapesAndDefaults(t *testing.T) {
	for _, info := range List() {
		p := mustNew(t, Config{Name: info.Name})
		require.Equal(t, info.Name, p.Name)
		require.Equal(t, info.DefaultDim, p.Config.Dim, info.Name)
		require.Equal(t, info.DefaultGamma, p.Gamma, info.Name)
		require.Equal(t, info.Model, p.Model, info.Name)
		require.Equal(t, info.Model, p.Oracle.Model(), info.Name)
		require.Equal(t, info.Norms, p.Norms, info.Name)
		n := p.Rows * p.Cols
		require.Equal(t, n, p.Oracle.Len(), info.Name)
		require.Equal(t, n, p.Norm.Len(), info.Name)
		require.Len(t, p.X0, n)
		require.Len(t, p.FixedPoint, n)
		require.Greater(t, p.Sigma, 0.0, info.Name)
		require.Equal(t, solver.Deterministic, p.Exact().Model())
	}
}

// TestFixedPointIndependent checks the LU / policy-iteration fixed point
// against the exact operator and against an independent route: the
// Krasnoselskii–Mann iteration x ← (x + T(x))/2 on the exact operator, which
// converges for every nonexpansive map with a unique fixed point.
func TestFixedPointIndependent(t *testing.T) {
	for _, c := range suiteCases() {
		t.Run(c.String(), func(t *testing.T) {
			p := mustNew(t, c.cfg)
			xs := p.FixedPoint
			scale := 1 + floats.Norm(xs, math.Inf(1))
			require.LessOrEqual(t, maxAbsDiff(exactT(t, p, xs), xs), 1e-10*scale, "T(x*) ≠ x*")
			x := append([]float64(nil), p.X0...)
			tx := make([]float64, len(x))
			for k := 0; k < 20000; k++ {
				require.NoError(t, p.Oracle.EvalExact(tx, x))
				if maxAbsDiff(tx, x) < 1e-13*scale {
					break
				}
				for i := range x {
					x[i] = (x[i] + tx[i]) / 2
				}
			}
			require.LessOrEqual(t, maxAbsDiff(x, xs), 1e-9*scale, "KM limit differs from FixedPoint")
			e, ok := p.FixedPointError(x)
			require.True(t, ok)
			require.LessOrEqual(t, e, 1e-8*scale)
			r, err := p.Residual(xs)
			require.NoError(t, err)
			require.LessOrEqual(t, r, 1e-9*scale)
		})
	}
}

// TestLipschitz checks ‖T(x) − T(y)‖ ≤ γ‖x − y‖ on random pairs, and the
// same for τ(·; ξ) under a shared Sample when the model is samplewise.
func TestLipschitz(t *testing.T) {
	for _, c := range suiteCases() {
		t.Run(c.String(), func(t *testing.T) {
			p := mustNew(t, c.cfg)
			rng := rand.New(rand.NewPCG(3, 4))
			n := p.Oracle.Len()
			x, y, tx, ty, d := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			dist := func(a, b []float64) float64 {
				for i := range d {
					d[i] = a[i] - b[i]
				}
				return p.Norm.Norm(d)
			}
			for trial := 0; trial < 50; trial++ {
				scale := math.Pow(10, float64(trial%5)-2)
				for i := range x {
					x[i] = p.FixedPoint[i] + scale*rng.NormFloat64()
					y[i] = x[i] + scale*rng.NormFloat64()
				}
				require.NoError(t, p.Oracle.EvalExact(tx, x))
				require.NoError(t, p.Oracle.EvalExact(ty, y))
				require.LessOrEqual(t, dist(tx, ty), p.Gamma*dist(x, y)*(1+1e-9))
				if p.Model >= solver.SamplewiseLipschitz {
					s := solver.Sample{Seed: uint64(trial), Size: 1 + trial%3}
					_, err := p.Oracle.Eval(tx, x, s)
					require.NoError(t, err)
					_, err = p.Oracle.Eval(ty, y, s)
					require.NoError(t, err)
					require.LessOrEqual(t, dist(tx, ty), p.Gamma*dist(x, y)*(1+1e-9), "samplewise")
				}
			}
		})
	}
}

// extractLinear returns the matrix of the linear part of an affine exact
// operator, column j being T(e_j) − T(0).
func extractLinear(t *testing.T, p *Problem) *mat.Dense {
	n := p.Oracle.Len()
	zero := make([]float64, n)
	t0 := exactT(t, p, zero)
	m := mat.NewDense(n, n, nil)
	e := make([]float64, n)
	for j := 0; j < n; j++ {
		e[j] = 1
		tj := exactT(t, p, e)
		e[j] = 0
		for i := 0; i < n; i++ {
			m.Set(i, j, tj[i]-t0[i])
		}
	}
	return m
}

func spectralNorm(t *testing.T, m *mat.Dense) float64 {
	var svd mat.SVD
	require.True(t, svd.Factorize(m, mat.SVDNone))
	return svd.Values(nil)[0]
}

// TestGammaIsTheInducedNorm checks that γ is the induced norm of the linear
// part where the construction says it is exact, and the Riesz–Thorin
// condition ‖A‖1, ‖A‖∞ ≤ γ (with equality for one) for ℓp.
func TestGammaIsTheInducedNorm(t *testing.T) {
	const g = 0.7
	for _, tc := range []struct {
		name, norm string
		check      func(t *testing.T, a *mat.Dense, d int)
	}{
		{"affine", "l2", func(t *testing.T, a *mat.Dense, _ int) { require.InDelta(t, g, spectralNorm(t, a), 1e-12) }},
		{"affine-t", "linf", func(t *testing.T, a *mat.Dense, d int) {
			for i := 0; i < d; i++ {
				s := 0.0
				for j := 0; j < d; j++ {
					s += math.Abs(a.At(i, j))
				}
				require.InDelta(t, g, s, 1e-12, "row %d", i)
			}
		}},
		{"affine-switch", "lp:3", func(t *testing.T, a *mat.Dense, d int) {
			n1, ninf := mat.Norm(a, 1), mat.Norm(a, math.Inf(1))
			require.LessOrEqual(t, n1, g*(1+1e-12))
			require.LessOrEqual(t, ninf, g*(1+1e-12))
			require.InDelta(t, g, math.Max(n1, ninf), 1e-12)
		}},
		{"shift", "lp:5", func(t *testing.T, a *mat.Dense, _ int) { require.InDelta(t, g, spectralNorm(t, a), 1e-12) }},
		// For Frobenius, the operator X ↦ AXB has spectral norm ‖A‖op‖B‖op.
		{"matrix", "l2", func(t *testing.T, a *mat.Dense, _ int) { require.InDelta(t, g, spectralNorm(t, a), 1e-12) }},
	} {
		t.Run(tc.name+"/"+tc.norm, func(t *testing.T) {
			p := mustNamed(t, Config{Name: tc.name, Dim: 9, Gamma: g, Seed: 5}, tc.norm)
			if tc.name == "matrix" {
				p = mustNamed(t, Config{Name: tc.name, Dim: 3, Gamma: g, Seed: 5}, tc.norm)
			}
			a := extractLinear(t, p)
			r, _ := a.Dims()
			tc.check(t, a, r)
		})
	}
}

// TestShiftIsometry: the shift map stretches every difference by exactly γ in
// every ℓp norm.
func TestShiftIsometry(t *testing.T) {
	for _, norm := range []string{"l2", "lp:3", "linf"} {
		p := mustNamed(t, Config{Name: "shift", Dim: 10, Seed: 2}, norm)
		require.Equal(t, 1.0, p.Gamma)
		rng := rand.New(rand.NewPCG(1, 1))
		x, y := gaussVec(rng, 10), gaussVec(rng, 10)
		tx, ty := exactT(t, p, x), exactT(t, p, y)
		dx, dt := make([]float64, 10), make([]float64, 10)
		for i := range dx {
			dx[i], dt[i] = x[i]-y[i], tx[i]-ty[i]
		}
		require.InDelta(t, p.Norm.Norm(dx), p.Norm.Norm(dt), 1e-12, norm)
	}
}

// TestMDPTightLipschitz: T(Q + c·1) = T(Q) + γc·1, so γ is exact in ℓ∞.
func TestMDPTightLipschitz(t *testing.T) {
	p := mustNew(t, Config{Name: "mdp", Dim: 6, Gamma: 0.8, Seed: 1})
	q := make([]float64, len(p.X0))
	q2 := make([]float64, len(q))
	for i := range q2 {
		q2[i] = 2.5
	}
	a, b := exactT(t, p, q), exactT(t, p, q2)
	for i := range a {
		require.InDelta(t, 0.8*2.5, b[i]-a[i], 1e-12)
	}
}

// TestMDPValueIteration compares the policy-iteration Q* with value
// iteration run to machine precision.
func TestMDPValueIteration(t *testing.T) {
	for _, s := range []int{4, 30} {
		p := mustNew(t, Config{Name: "mdp", Dim: s, Actions: 3, Gamma: 0.9, Seed: uint64(s)})
		q := make([]float64, len(p.X0))
		tq := make([]float64, len(q))
		for k := 0; k < 500; k++ { // 0.9^500 ≈ 1e-23
			require.NoError(t, p.Oracle.EvalExact(tq, q))
			q, tq = tq, q
		}
		require.LessOrEqual(t, maxAbsDiff(q, p.FixedPoint), 1e-10)
	}
}

// stats accumulates per-coordinate deviations τ − T over independent calls.
type stats struct {
	n                 int
	sum, sumSq, sumQu []float64
}

func newStats(d int) *stats {
	return &stats{sum: make([]float64, d), sumSq: make([]float64, d), sumQu: make([]float64, d)}
}

func (s *stats) add(tau, tx []float64) {
	s.n++
	for i := range tau {
		e := tau[i] - tx[i]
		s.sum[i] += e
		s.sumSq[i] += e * e
		s.sumQu[i] += e * e * e * e
	}
}

// sample draws n independent evaluations of size m at x.
func sample(t *testing.T, p *Problem, x []float64, n, m int, seed uint64) *stats {
	tx := exactT(t, p, x)
	tau := make([]float64, len(x))
	st := newStats(len(x))
	rng := rand.New(rand.NewPCG(seed, 99))
	for k := 0; k < n; k++ {
		used, err := p.Oracle.Eval(tau, x, solver.Sample{Seed: rng.Uint64(), Size: m})
		require.NoError(t, err)
		require.Equal(t, m, used)
		st.add(tau, tx)
	}
	return st
}

// TestGaussianNoiseLaw checks that Gaussian-noise oracles are unbiased with
// per-coordinate variance σ²/m: every coordinate mean within 5.5 standard
// errors (false alarm ≤ d·4e-8) and the pooled variance within 6 of its
// standard deviations √(2/(dN)).
func TestGaussianNoiseLaw(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		m   int
	}{
		{Config{Name: "affine", Dim: 10, Noise: 0.5, Seed: 1}, 1},
		{Config{Name: "affine", Dim: 10, Noise: 0.5, Seed: 1}, 37},
		{Config{Name: "affine-switch", Dim: 10, Noise: 2, Seed: 2}, 5},
		{Config{Name: "shift", Dim: 10, Noise: 1, Seed: 3}, 1000},
		{Config{Name: "matrix", Dim: 3, Noise: 0.3, Seed: 4}, 3},
	} {
		t.Run(fmt.Sprintf("%s/m=%d", tc.cfg.Name, tc.m), func(t *testing.T) {
			p := mustNew(t, tc.cfg)
			const n = 4000
			d := p.Oracle.Len()
			x := gaussVec(rand.New(rand.NewPCG(8, 8)), d)
			st := sample(t, p, x, n, tc.m, 1)
			v := tc.cfg.Noise * tc.cfg.Noise / float64(tc.m)
			pooled := 0.0
			for i := 0; i < d; i++ {
				mean := st.sum[i] / n
				require.LessOrEqual(t, math.Abs(mean), 5.5*math.Sqrt(v/n), "coordinate %d", i)
				pooled += st.sumSq[i] / float64(n*d)
			}
			require.InDelta(t, 1, pooled/v, 6*math.Sqrt(2/float64(n*d)))
			require.InDelta(t, tc.cfg.Noise*math.Sqrt(float64(d)), p.Sigma, 1e-12)
		})
	}
}

// TestStudentNoiseLaw checks the Student-t oracle: unbiased (pooled mean
// within 6 standard errors, which Chebyshev alone bounds by 1/36), unit
// samples with E|ε| = σ·E|t_ν|/√5 (|ε| has finite variance σ² − (E|ε|)², so
// the check is within 6 of its standard errors), and sizes past
// StudentTExactDraws still unbiased.
func TestStudentNoiseLaw(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds under -race; single-goroutine numerics, run by the full suite")
	}
	const sigma = 0.8
	p := mustNew(t, Config{Name: "affine-t", Dim: 10, Noise: sigma, Seed: 6})
	x := gaussVec(rand.New(rand.NewPCG(8, 8)), 10)
	nu := studentDF
	lg := func(v float64) float64 { r, _ := math.Lgamma(v); return r }
	eAbsT := 2 * math.Sqrt(nu) * math.Exp(lg((nu+1)/2)-lg(nu/2)) / (math.Sqrt(math.Pi) * (nu - 1))
	eAbs := sigma * eAbsT / math.Sqrt(nu/(nu-2))
	for _, m := range []int{1, 3, StudentTExactDraws + 300} {
		const n = 3000
		tx := exactT(t, p, x)
		tau := make([]float64, 10)
		rng := rand.New(rand.NewPCG(uint64(m), 5))
		sum, sumAbs := 0.0, 0.0
		for k := 0; k < n; k++ {
			used, err := p.Oracle.Eval(tau, x, solver.Sample{Seed: rng.Uint64(), Size: m})
			require.NoError(t, err)
			require.Equal(t, m, used)
			for i := range tau {
				sum += tau[i] - tx[i]
				sumAbs += math.Abs(tau[i] - tx[i])
			}
		}
		cnt := float64(n * 10)
		sd := sigma / math.Sqrt(float64(m)) / math.Sqrt(cnt)
		require.LessOrEqual(t, math.Abs(sum/cnt), 6*sd, "m=%d mean", m)
		if m == 1 {
			se := math.Sqrt((sigma*sigma - eAbs*eAbs) / cnt)
			require.InDelta(t, eAbs, sumAbs/cnt, 6*se, "E|ε|")
		}
	}
}

// TestAveragedNoiseLaw checks unbiasedness of the averaged maps with the
// exact per-coordinate variance (enumerating the family), and Sigma against a
// Monte Carlo estimate of E‖τ₁(x*) − x*‖₂².
func TestAveragedNoiseLaw(t *testing.T) {
	p := mustNew(t, Config{Name: "averaged", Dim: 8, Terms: 16, Gamma: 0.9, Seed: 3})
	o := p.Oracle.(*averagedOracle)
	x := gaussVec(rand.New(rand.NewPCG(1, 2)), 8)
	tx := exactT(t, p, x)
	varc := make([]float64, 8)
	tau := make([]float64, 8)
	for i := 0; i < o.m; i++ {
		clear(tau)
		o.addTerm(tau, x, i)
		for r := range tau {
			e := tau[r] - tx[r]
			varc[r] += e * e / float64(o.m)
		}
	}
	const n, m = 4000, 4
	st := sample(t, p, x, n, m, 2)
	for r := 0; r < 8; r++ {
		require.LessOrEqual(t, math.Abs(st.sum[r]/n), 5.5*math.Sqrt(varc[r]/m/n), "coordinate %d", r)
	}
	checkSigma(t, p)
}

// checkSigma compares Sigma² with the mean of ‖τ₁(x*) − x*‖₂² over unit
// samples, within 6 standard errors of the empirical second moment.
func checkSigma(t *testing.T, p *Problem) {
	const n = 4000
	xs := p.FixedPoint
	tau := make([]float64, len(xs))
	vals := make([]float64, n)
	mean := 0.0
	for k := 0; k < n; k++ {
		_, err := p.Oracle.Eval(tau, xs, solver.Sample{Seed: uint64(k) + 1000, Size: 1})
		require.NoError(t, err)
		s := 0.0
		for i := range tau {
			e := tau[i] - xs[i]
			s += e * e
		}
		vals[k] = s
		mean += s / n
	}
	v := 0.0
	for _, s := range vals {
		v += (s - mean) * (s - mean) / (n - 1)
	}
	require.InDelta(t, p.Sigma*p.Sigma, mean, 6*math.Sqrt(v/n))
}

// TestMDPNoiseLaw checks the generative-model oracle: unbiased (each entry
// within 5.5 standard errors, from the exact variance γ²Var V(s')) and Sigma.
func TestMDPNoiseLaw(t *testing.T) {
	p, o, q := mdpAtRandomQ(t, 3)
	const n = 4000
	varc := mdpVariances(t, p, o, q)
	// m = 2 draws next state by next state, the larger sizes draw
	// multinomial counts (mdpDirectDraws): both must have the law of m
	// independent draws, so the pooled variance is also checked, within
	// 6 of its standard deviations, estimated from the fourth moments.
	for _, m := range []int{2, mdpDirectDraws + 1, 5000} {
		st := sample(t, p, q, n, m, 7)
		got, want, v4 := 0.0, 0.0, 0.0
		for sa := range varc {
			require.LessOrEqual(t, math.Abs(st.sum[sa]/n), 5.5*math.Sqrt(varc[sa]/float64(m)/n)+1e-12, "m = %d, entry %d", m, sa)
			got += st.sumSq[sa] / n
			want += varc[sa] / float64(m)
			v4 += st.sumQu[sa] / n
		}
		require.InDelta(t, want, got, 6*math.Sqrt(v4/n), "m = %d", m)
	}
	checkSigma(t, p)
}

// TestSwitchNotLipschitzInExpectation shows why affine-switch only has
// bounded variance: under a shared Sample, two points straddling the
// hyperplane through x* differ by about 2σ‖ξ‖ however close they are.
func TestSwitchNotLipschitzInExpectation(t *testing.T) {
	p := mustNew(t, Config{Name: "affine-switch", Dim: 6, Noise: 1, Seed: 9})
	o := p.Oracle.(*affineOracle)
	x, y := make([]float64, 6), make([]float64, 6)
	for i := range x {
		x[i] = p.FixedPoint[i] + 1e-6*o.u[i]
		y[i] = p.FixedPoint[i] - 1e-6*o.u[i]
	}
	tx, ty := make([]float64, 6), make([]float64, 6)
	s := solver.Sample{Seed: 1, Size: 1}
	_, err := p.Oracle.Eval(tx, x, s)
	require.NoError(t, err)
	_, err = p.Oracle.Eval(ty, y, s)
	require.NoError(t, err)
	d := make([]float64, 6)
	dx := make([]float64, 6)
	for i := range d {
		d[i], dx[i] = tx[i]-ty[i], x[i]-y[i]
	}
	require.Greater(t, p.Norm.Norm(d), 1e3*p.Norm.Norm(dx))
}

func TestDeterministicGivenSeed(t *testing.T) {
	for _, c := range suiteCases() {
		t.Run(c.String(), func(t *testing.T) {
			p1, p2 := mustNew(t, c.cfg), mustNew(t, c.cfg)
			require.Equal(t, p1.FixedPoint, p2.FixedPoint)
			x := gaussVec(rand.New(rand.NewPCG(1, 1)), p1.Oracle.Len())
			a, b, a2 := make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
			s := solver.Sample{Seed: 42, Size: 3}
			_, err := p1.Oracle.Eval(a, x, s)
			require.NoError(t, err)
			_, err = p2.Oracle.Eval(b, x, s)
			require.NoError(t, err)
			_, err = p1.Oracle.Eval(a2, x, s)
			require.NoError(t, err)
			require.Equal(t, a, b, "two problems, same Config and Sample")
			require.Equal(t, a, a2, "same oracle, same Sample")
			_, err = p1.Oracle.Eval(b, x, solver.Sample{Seed: 43, Size: 3})
			require.NoError(t, err)
			require.NotEqual(t, a, b, "another Sample seed")
			other := c.cfg
			other.Seed++
			p3 := mustNew(t, other)
			require.NotEqual(t, p1.FixedPoint, p3.FixedPoint, "another Config.Seed")
		})
	}
}

func TestEvalAllocationFree(t *testing.T) {
	for _, c := range suiteCases() {
		p := mustNew(t, c.cfg)
		x := append([]float64(nil), p.FixedPoint...)
		dst := make([]float64, len(x))
		s := solver.Sample{Seed: 1, Size: 4}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := p.Oracle.Eval(dst, x, s); err != nil {
				t.Fatal(err)
			}
			if err := p.Oracle.EvalExact(dst, x); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, c.String())
	}
}

func TestEvalErrors(t *testing.T) {
	p := mustNew(t, Config{Name: "affine", Dim: 4})
	x, dst := make([]float64, 4), make([]float64, 4)
	for _, tc := range []struct {
		name   string
		dst, x []float64
		s      solver.Sample
		want   string
	}{
		{"size", dst, x, solver.Sample{Size: 0}, "Sample.Size"},
		{"point", dst, x[:3], solver.Sample{Size: 1}, "point has length 3"},
		{"dst", dst[:2], x, solver.Sample{Size: 1}, "destination has length 2"},
		{"alias", x, x, solver.Sample{Size: 1}, "share memory"},
	} {
		_, err := p.Oracle.Eval(tc.dst, tc.x, tc.s)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	require.ErrorContains(t, p.Oracle.EvalExact(x, x), "share memory")
}

// TestConfigErrors: New reports a bad Config field as a *ConfigError
// naming the field, its text "Config.<Field>: <Reason>"; where a row gives
// one, the Reason starts with the offending value, as its documentation
// promises, so that a command line can print "--flag: Reason".
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg                 Config
		norm, field, reason string
	}{
		{Config{Name: "nope"}, "", "Name", ""},
		{Config{Name: "Affine"}, "", "Name", `unknown problem "Affine"`},
		{Config{Name: "affine", Dim: -1}, "", "Dim", ""},
		{Config{Name: "affine", Dim: -7}, "", "Dim", "-7 outside [1, 1000]"},
		{Config{Name: "affine", Dim: 5000}, "", "Dim", ""},
		{Config{Name: "matrix", Dim: 33}, "", "Dim", ""},
		{Config{Name: "matrix", Dim: math.MaxInt}, "", "Dim", "9223372036854775807 outside [1, 32]"},
		{Config{Name: "mdp", Dim: 1}, "", "Dim", ""},
		{Config{Name: "affine", Gamma: 1.5}, "", "Gamma", ""},
		{Config{Name: "affine", Gamma: -0.5}, "", "Gamma", ""},
		{Config{Name: "affine", Gamma: math.NaN()}, "", "Gamma", "NaN outside (0, 1]"},
		{Config{Name: "affine", Gamma: math.Inf(1)}, "", "Gamma", "+Inf outside (0, 1]"},
		{Config{Name: "mdp", Gamma: 1}, "", "Gamma", ""},
		{Config{Name: "affine", Noise: -1}, "", "Noise", ""},
		{Config{Name: "affine", Noise: math.Inf(1)}, "", "Noise", ""},
		{Config{Name: "affine", Noise: math.NaN()}, "", "Noise", "NaN must be positive"},
		{Config{Name: "affine", Noise: math.Inf(-1)}, "", "Noise", "-Inf must be positive"},
		{Config{Name: "mdp", Noise: 0.5}, "", "Noise", ""},
		{Config{Name: "affine"}, "schatten:2", "Norm", ""},
		{Config{Name: "mdp"}, "l2", "Norm", ""},
		{Config{Name: "matrix"}, "linf", "Norm", ""},
		{Config{Name: "affine"}, "lp:1", "Norm", `norm "lp:1": ℓp norm exponent p = 1`},
		{Config{Name: "affine"}, "lp:x", "Norm", `norm "lp:x": exponent "x" is not a number`},
		{Config{Name: "matrix"}, "lp:4", "Norm", `"lp:4" not supported by matrix`},
		{Config{Name: "affine"}, "l7", "Norm", ""},
		{Config{Name: "affine", Actions: 3}, "", "Actions", ""},
		{Config{Name: "mdp", Actions: 100}, "", "Actions", ""},
		{Config{Name: "mdp", Actions: -2}, "", "Actions", "-2 outside [1, 64]"},
		{Config{Name: "mdp", Terms: 3}, "", "Terms", ""},
		{Config{Name: "averaged", Terms: -2}, "", "Terms", ""},
		{Config{Name: "averaged", Terms: 1 << 20}, "", "Terms", "1048576 outside [1, 65536]"},
	} {
		_, err := newNamed(tc.cfg, tc.norm)
		require.ErrorContains(t, err, "Config."+tc.field+":", "%+v", tc.cfg)
		var ce *ConfigError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, tc.field, ce.Field, "%+v", tc.cfg)
		require.True(t, strings.HasPrefix(ce.Reason, tc.reason), "%+v: reason %q", tc.cfg, ce.Reason)
	}
}

// TestResidualErrors: Residual reports a point of the wrong length as an
// error, for every problem of the suite, instead of panicking.
func TestResidualErrors(t *testing.T) {
	for _, name := range Names() {
		p := mustNew(t, Config{Name: name, Dim: 3})
		for _, n := range []int{0, len(p.X0) - 1, len(p.X0) + 1} {
			var err error
			require.NotPanics(t, func() { _, err = p.Residual(make([]float64, n)) }, name)
			require.ErrorContains(t, err, "point has length", name)
		}
		r, err := p.Residual(p.X0)
		require.NoError(t, err)
		require.False(t, math.IsNaN(r) || math.IsInf(r, 0), name)
		// The deterministic view of the oracle reports a destination of the
		// wrong length.
		_, err = p.Exact().Eval(make([]float64, 2*len(p.X0)), p.X0, solver.Sample{Size: 1})
		require.ErrorContains(t, err, "destination has length", name)
	}
}

// TestConfigTypedNorm: New rejects a norm of the wrong dimension or shape, or
// of a family the problem does not support, naming Config.Norm; a nil Norm is
// the problem's default norm.
func TestConfigTypedNorm(t *testing.T) {
	l2of4, err := solver.NewLP(2, 4)
	require.NoError(t, err)
	s23, err := solver.NewSchatten(4, 2, 3)
	require.NoError(t, err)
	s32, err := solver.NewSchatten(4, 3, 2)
	require.NoError(t, err)
	linf6, err := solver.NewLInf(6)
	require.NoError(t, err)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "affine", Dim: 5, Norm: l2of4}, "l2 of dimension 4, want 5"},
		{Config{Name: "matrix", Dim: 2, Norm: l2of4}, ""}, // 2×2 points: fine
		{Config{Name: "mdp", Dim: 2, Actions: 3, Norm: linf6}, ""},
		{Config{Name: "mdp", Dim: 3, Actions: 2, Norm: l2of4}, `"l2" not supported by mdp`},
		{Config{Name: "matrix", Dim: 2, Norm: s23}, "schatten:4 on 2×3 matrices, want 2×2"},
		{Config{Name: "affine", Dim: 6, Norm: s32}, `"schatten:4" not supported by affine`},
	} {
		p, err := New(tc.cfg)
		if tc.want == "" {
			require.NoError(t, err, "%+v", tc.cfg)
			require.Equal(t, tc.cfg.Norm.String(), p.Norm.String())
			continue
		}
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%+v: %v", tc.cfg, err)
		require.Equal(t, "Norm", ce.Field)
		require.Contains(t, ce.Reason, tc.want)
	}
	for _, info := range List() {
		p := mustNew(t, Config{Name: info.Name})
		require.Equal(t, info.DefaultNorm, p.Norm.String(), info.Name)
		require.Equal(t, p.Norm, p.Config.Norm, info.Name)
	}
}

func TestListAndLookup(t *testing.T) {
	list := List()
	require.Equal(t, Names(), func() []string {
		var s []string
		for _, i := range list {
			s = append(s, i.Name)
		}
		return s
	}())
	for _, info := range list {
		got, err := Lookup(info.Name)
		require.NoError(t, err)
		require.Equal(t, info.Summary, got.Summary)
		require.NotEmpty(t, info.Norms)
		require.NotEmpty(t, info.Summary)
	}
	// List returns copies: editing them does not change the suite.
	list[0].Norms[0] = "edited"
	require.NotEqual(t, "edited", List()[0].Norms[0])
	_, err := Lookup("nope")
	require.ErrorContains(t, err, strings.Join(Names(), ", "))
}

func BenchmarkEvalAffine(b *testing.B)   { benchmarkEval(b, Config{Name: "affine", Dim: 64}, 16) }
func BenchmarkEvalAffineT(b *testing.B)  { benchmarkEval(b, Config{Name: "affine-t", Dim: 64}, 16) }
func BenchmarkEvalMatrix(b *testing.B)   { benchmarkEval(b, Config{Name: "matrix", Dim: 16}, 16) }
func BenchmarkEvalAveraged(b *testing.B) { benchmarkEval(b, Config{Name: "averaged", Dim: 64}, 16) }
func BenchmarkEvalMDP(b *testing.B)      { benchmarkEval(b, Config{Name: "mdp", Dim: 100}, 16) }

func benchmarkEval(b *testing.B, c Config, size int) {
	p := mustNew(b, c)
	x := append([]float64(nil), p.FixedPoint...)
	dst := make([]float64, len(x))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := p.Oracle.Eval(dst, x, solver.Sample{Seed: uint64(i), Size: size}); err != nil {
			b.Fatal(err)
		}
	}
}

// mdpAtRandomQ returns a small mdp problem, its oracle and a Q-function
// with entries uniform on [0, 5) drawn from seed.
func mdpAtRandomQ(t *testing.T, seed uint64) (*Problem, *mdpOracle, []float64) {
	p := mustNew(t, Config{Name: "mdp", Dim: 5, Actions: 2, Gamma: 0.9, Seed: 4})
	rng := rand.New(rand.NewPCG(seed, seed))
	q := make([]float64, len(p.X0))
	for i := range q {
		q[i] = 5 * rng.Float64()
	}
	return p, p.Oracle.(*mdpOracle), q
}

// mdpVariances returns γ²Var V(s') of every entry at q, checking on the way
// that T(q) = r + γE V(s').
func mdpVariances(t *testing.T, p *Problem, o *mdpOracle, q []float64) []float64 {
	tx := exactT(t, p, q)
	o.values(q)
	varc := make([]float64, len(q))
	for sa := range varc {
		e, e2 := 0.0, 0.0
		for j := sa * o.k; j < (sa+1)*o.k; j++ {
			w := o.v[o.next[j]]
			e += o.prob[j] * w
			e2 += o.prob[j] * w * w
		}
		require.InDelta(t, tx[sa], o.r[sa]+o.gamma*e, 1e-12)
		varc[sa] = o.gamma * o.gamma * (e2 - e*e)
	}
	return varc
}

// TestMDPCoordinateNoise checks the coordinatewise declaration: the
// variance bounds equal γ²Var V(s') entry by entry and every unit sample
// deviates by at most b entrywise, with b attained (the bound is tight).
func TestMDPCoordinateNoise(t *testing.T) {
	p, o, q := mdpAtRandomQ(t, 5)
	b, v := make([]float64, len(q)), make([]float64, len(q))
	require.True(t, o.CoordinateNoise(b, v, q))
	require.False(t, o.CoordinateNoise(b[1:], v, q))
	tx := exactT(t, p, q)
	o.values(q)
	varc := mdpVariances(t, p, o, q)
	for sa := range v {
		require.InDelta(t, varc[sa], v[sa], 1e-12)
	}
	tau := make([]float64, len(q))
	worst := make([]float64, len(q))
	for k := range 2000 {
		_, err := o.Eval(tau, q, solver.Sample{Seed: uint64(k), Size: 1})
		require.NoError(t, err)
		for sa := range tau {
			dev := math.Abs(tau[sa] - tx[sa])
			require.LessOrEqual(t, dev, b[sa]+1e-12, "entry %d", sa)
			worst[sa] = math.Max(worst[sa], dev)
		}
	}
	for sa := range b {
		require.InDelta(t, b[sa], worst[sa], 1e-12, "entry %d", sa)
	}
}
