package solver_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// This file holds the helpers shared by the reliability tests (faults,
// concurrency, reproducibility), the tests of input validation at the
// package's entry points, and VR-GHAL's reliability on every problem class
// of package problems (TestVRGHALOnEveryProblemClass).

// relMethod is a method under the reliability tests. Deterministic methods
// run on a suite problem's exact operator, stochastic ones on its oracle.
type relMethod struct {
	name       string
	stochastic bool
	method     solver.Method
}

// relMethods returns every method of the package, configured for a problem
// with Lipschitz constant gamma and noise scale sigma. The stochastic
// baselines get explicit accuracies, so that their minibatches stay small
// whatever Settings.Tol is.
func relMethods(gamma, sigma float64) []relMethod {
	return []relMethod{
		{"picard", false, solver.Picard{}},
		{"km", false, solver.KrasnoselskiiMann{}},
		{"halpern", false, solver.Halpern{}},
		{"ghal", false, solver.GHAL{Gamma: gamma}},
		{"anderson", false, solver.Anderson{}},
		{"broyden", false, solver.Broyden{}},
		{"minibatch-km", true, solver.MinibatchKM{MaxBatch: 256}},
		{"stochastic-halpern", true, solver.StochasticHalpern{Eps: 0.1, C: sigma * sigma, MaxBatch: 256}},
		{"page-halpern", true, solver.PAGEHalpern{Eps: 0.1, C1: sigma * sigma, C2: gamma * gamma, MaxBatch: 256}},
		{"vrghal", true, solver.VRGHAL{Gamma: gamma}},
	}
}

// problem returns the solver.Problem m runs on for p.
func (m relMethod) problem(p *problems.Problem) solver.Problem {
	if m.stochastic {
		return p.OracleProblem()
	}
	return p.ExactProblem()
}

// relSettings returns the settings of the concurrency and reproducibility
// tests for m: a tolerance the deterministic methods reach in about a
// hundred iterations, a looser one for the stochastic methods, and a sample
// budget that keeps every stochastic solve under a second.
func relSettings(m relMethod, seed uint64) *solver.Settings {
	s := &solver.Settings{Tol: 1e-9, MaxIter: 200, Seed: seed}
	if m.stochastic {
		s.Tol, s.MaxSamples = 0.05, 1_000_000
	}
	return s
}

// relNew builds a suite problem or fails the test.
func relNew(t testing.TB, c problems.Config) *problems.Problem {
	t.Helper()
	p, err := problems.New(c)
	require.NoError(t, err)
	return p
}

// relRequireSame fails unless a and b agree bit for bit in everything but
// wall-clock time: the point, the residual, the status, the work counts, the
// trace and the certificate.
func relRequireSame(t testing.TB, a, b *solver.Result, msg string) {
	t.Helper()
	require.Equal(t, len(a.X), len(b.X), msg)
	for i := range a.X {
		require.Equal(t, math.Float64bits(a.X[i]), math.Float64bits(b.X[i]), "%s: X[%d] = %v and %v", msg, i, a.X[i], b.X[i])
	}
	require.Equal(t, math.Float64bits(a.Residual), math.Float64bits(b.Residual), msg)
	require.Equal(t, a.Status, b.Status, msg)
	require.Equal(t, a.Stats.Iterations, b.Stats.Iterations, msg)
	require.Equal(t, a.Stats.Calls, b.Stats.Calls, msg)
	require.Equal(t, a.Stats.Samples, b.Stats.Samples, msg)
	require.Equal(t, relUntimed(a.Stats.Trace), relUntimed(b.Stats.Trace), msg)
	require.Equal(t, a.Certificate == nil, b.Certificate == nil, msg)
	if a.Certificate != nil {
		ca, cb := *a.Certificate, *b.Certificate
		require.Equal(t, math.Float64bits(ca.Delta), math.Float64bits(cb.Delta), msg) // NaN for RuleEstimate
		ca.Delta, cb.Delta = 0, 0
		require.Equal(t, ca, cb, msg)
	}
}

// relUntimed returns tr with the Elapsed fields zeroed.
func relUntimed(tr []solver.TracePoint) []solver.TracePoint {
	out := make([]solver.TracePoint, len(tr))
	for i, p := range tr {
		p.Elapsed = 0
		out[i] = p
	}
	return out
}

func relRequireFinite(t testing.TB, x []float64, msg string) {
	t.Helper()
	for i, v := range x {
		require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "%s: X[%d] = %v", msg, i, v)
	}
}

// TestValidateMalformedProblem calls every method's Validate on its own, and
// Solve, with malformed problems: both return an error naming the field at
// fault instead of panicking.
func TestValidateMalformedProblem(t *testing.T) {
	l2, err := solver.NewLP(2, 3)
	require.NoError(t, err)
	three := solver.Func{N: 3, F: func(dst, x []float64) { copy(dst, x) }}
	four := solver.Func{N: 4, F: func(dst, x []float64) { copy(dst, x) }}
	cases := []struct {
		name string
		p    solver.Problem
		want string
	}{
		{"zero", solver.Problem{}, "Problem.Oracle is nil"},
		{"no norm", solver.Problem{Oracle: three}, "Problem.Norm is nil"},
		{"zero norm", solver.Problem{Oracle: three, Norm: solver.LP{}}, "Problem.Norm.Len() = 0 must be positive"},
		{"empty batch", solver.Problem{Oracle: three, Norm: &solver.Batched{}}, "Problem.Norm.Len() = 0 must be positive"},
		{"lengths", solver.Problem{Oracle: four, Norm: l2}, "Problem.Oracle.Len() = 4 does not match Problem.Norm.Len() = 3"},
	}
	for _, m := range relMethods(0.9, 1) {
		v, ok := m.method.(solver.Validator)
		require.True(t, ok, "%s implements Validator", m.name)
		for _, c := range cases {
			require.NotPanics(t, func() { err = v.Validate(c.p) }, "%s: %s", m.name, c.name)
			require.ErrorContains(t, err, c.want, "%s: %s", m.name, c.name)
			require.NotPanics(t, func() { _, err = solver.Solve(context.Background(), c.p, make([]float64, 3), nil, m.method) })
			require.ErrorContains(t, err, c.want, "Solve with %s: %s", m.name, c.name)
		}
		// A well-formed problem of the right kind passes.
		p := relNew(t, problems.Config{Name: "affine", Dim: 3, Seed: 1})
		require.NoError(t, v.Validate(m.problem(p)), m.name)
	}
}

func TestSolveNilArguments(t *testing.T) {
	l2, err := solver.NewLP(2, 1)
	require.NoError(t, err)
	p := solver.Problem{Oracle: solver.Func{N: 1, F: func(dst, x []float64) { dst[0] = x[0] / 2 }}, Norm: l2}
	var ctx context.Context // nil
	_, err = solver.Solve(ctx, p, []float64{0}, nil, solver.Picard{})
	require.ErrorContains(t, err, "nil context")
	_, err = solver.Solve(context.Background(), p, nil, nil, solver.Picard{})
	require.ErrorContains(t, err, "x0 has length 0, want Problem.Norm.Len() = 1")
}

// TestHistoryTooLarge: a Memory whose history cannot be addressed is an
// error naming the field, not a panic in make.
func TestHistoryTooLarge(t *testing.T) {
	p := relNew(t, problems.Config{Name: "affine", Dim: 3, Seed: 1}).ExactProblem()
	for _, c := range []struct {
		m    solver.Method
		want string
	}{
		{solver.Anderson{Memory: 1 << 62}, "Anderson.Memory = 4611686018427387904 too large"},
		{solver.Anderson{Memory: math.MaxInt}, "Anderson.Memory"},
		{solver.Anderson{Memory: 1 << 30}, "Anderson.Memory = 1073741824 too large"}, // 2^61 floats for the Gram matrices
		{solver.Broyden{Memory: 1 << 62}, "Broyden.Memory = 4611686018427387904 too large"},
		{solver.Broyden{Memory: math.MaxInt}, "Broyden.Memory"},
	} {
		var err error
		require.NotPanics(t, func() { _, err = solver.Solve(context.Background(), p, make([]float64, 3), nil, c.m) })
		require.ErrorContains(t, err, c.want)
	}
}

func TestParseModel(t *testing.T) {
	for _, m := range []solver.Model{solver.BoundedVariance, solver.LipschitzInExpectation, solver.SamplewiseLipschitz, solver.Deterministic} {
		got, err := solver.ParseModel(m.String())
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
	for _, s := range []string{"", "Deterministic", " deterministic", "bounded", "Model(4)", "lipschitz"} {
		_, err := solver.ParseModel(s)
		require.ErrorContains(t, err, "unknown oracle model \""+s+"\"", "%q", s)
		require.ErrorContains(t, err, "bounded-variance, lipschitz-expectation, samplewise-lipschitz or deterministic")
	}
	require.Equal(t, "Model(7)", solver.Model(7).String())
	require.Equal(t, "Model(-1)", solver.Model(-1).String())
	require.Equal(t, "Status(42)", solver.Status(42).String())
}

// TestNormShapeLimits: shapes whose size overflows an int, examples of
// dimension zero and exponents beyond float64 are errors naming the value.
func TestNormShapeLimits(t *testing.T) {
	big := 1 << 40
	for _, c := range []struct {
		name string
		f    func() error
		want string
	}{
		{"schatten overflow", func() error { _, err := solver.NewSchatten(2, big, big); return err }, "shape 1099511627776×1099511627776 overflows"},
		{"schatten max", func() error { _, err := solver.NewSchatten(4, math.MaxInt, 2); return err }, "overflows"},
		{"parse overflow", func() error { _, err := solver.ParseNorm("l2", big, big); return err }, "shape 1099511627776×1099511627776 overflows"},
		{"parse schatten overflow", func() error { _, err := solver.ParseNorm("schatten:4", big, big); return err }, "overflows"},
		{"batched overflow", func() error {
			l, err := solver.NewLP(2, big)
			require.NoError(t, err)
			_, err = solver.NewBatched(l, big)
			return err
		}, "1099511627776 examples of dimension 1099511627776"},
		{"batched zero example", func() error { _, err := solver.NewBatched(solver.LInf{}, 3); return err }, "3 examples of dimension 0"},
		{"batched negative", func() error { _, err := solver.NewBatched(solver.LInf{}, -3); return err }, "examples = -3 must be positive"},
		{"exponent overflow", func() error { _, err := solver.ParseNorm("lp:1e400", 3, 1); return err }, `exponent "1e400" out of the range of float64`},
		{"exponent underflow", func() error { _, err := solver.ParseNorm("schatten:1e-400", 3, 3); return err }, "p = 0 out of range"},
		{"lp negative p", func() error { _, err := solver.NewLP(-2, 3); return err }, "p = -2 out of range"},
		{"lp negative d", func() error { _, err := solver.NewLP(2, -3); return err }, "d = -3 must be positive"},
		{"linf negative d", func() error { _, err := solver.NewLInf(-1); return err }, "d = -1 must be positive"},
		{"schatten -inf", func() error { _, err := solver.NewSchatten(math.Inf(-1), 2, 2); return err }, "p = -Inf out of range"},
	} {
		var err error
		require.NotPanics(t, func() { err = c.f() }, c.name)
		require.ErrorContains(t, err, c.want, c.name)
	}
}

// TestVRGHALOnEveryProblemClass runs VR-GHAL on every problem class of the
// suite over many seeds (a new problem instance and solver seed each time)
// and counts two failures against their exact operators: the true residual
// ‖T(x̂) − x̂‖ above ε = Settings.Tol, and the certificate's bound below the
// true residual. Each may happen with probability at most δ; the test
// allows δN plus a binomial 3-sigma slack, which a method that fails a
// fixed fraction 3δ of its runs would exceed with overwhelming probability.
// Every problem declares what it knows (a variance bound, the MDP an
// almost-sure bound, "averaged" a finite sum), so every run ends with
// Success, a proven residual ≤ ε, except that "averaged" (no variance
// declared: VR-GHAL stops on its estimate) is Success only when its exact
// certificate is ≤ ε, and ToleranceEstimated otherwise.
//
// VR-GHAL runs with the paper's constants (SampleScale 1) everywhere but on
// the MDP, whose value scale makes them cost about 1e8 samples (25 s) per
// solve even at ε = 0.5; there it runs with SampleScale 0.01, where the
// Master Theorem no longer promises ε but the certificate, drawn
// independently, still covers the residual with probability 1 − δ.
func TestVRGHALOnEveryProblemClass(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical; in the full suite")
	}
	const delta = 0.05
	cases := []struct {
		cfg   problems.Config
		norm  string
		eps   float64
		scale float64
		runs  int
	}{
		{problems.Config{Name: "affine", Dim: 6, Noise: 0.3}, "l2", 0.05, 1, 40},
		{problems.Config{Name: "affine", Dim: 6, Noise: 0.3}, "linf", 0.05, 1, 40},
		{problems.Config{Name: "affine-t", Dim: 6, Noise: 0.3}, "lp:4", 0.05, 1, 40},
		{problems.Config{Name: "affine-switch", Dim: 6, Noise: 0.3}, "l2", 0.1, 1, 40},
		{problems.Config{Name: "matrix", Dim: 3, Noise: 0.3}, "schatten:4", 0.05, 1, 40},
		{problems.Config{Name: "averaged", Dim: 6, Noise: 0.3}, "l2", 0.05, 1, 40},
		{problems.Config{Name: "shift", Dim: 6, Noise: 0.3}, "linf", 0.1, 1, 40},
		{problems.Config{Name: "mdp", Dim: 4}, "linf", 0.3, 0.01, 20},
	}
	for _, c := range cases {
		t.Run(c.cfg.Name+"/"+c.norm, func(t *testing.T) {
			runs := c.runs
			slack := delta*float64(runs) + 3*math.Sqrt(float64(runs)*delta*(1-delta))
			missed, uncovered := 0, 0
			for seed := uint64(1); seed <= uint64(runs); seed++ {
				cfg := c.cfg
				cfg.Seed = seed
				norm, err := problems.ParseNorm(cfg, c.norm)
				require.NoError(t, err)
				cfg.Norm = norm
				p := relNew(t, cfg)
				m := solver.VRGHAL{Gamma: p.Gamma, Delta: delta, SampleScale: c.scale}
				s := &solver.Settings{Tol: c.eps, Seed: 1000 + seed, NoTrace: true,
					Certify: solver.CertifySettings{Delta: delta}}
				res, err := solver.Solve(context.Background(), p.OracleProblem(), p.X0, s, m)
				require.NoError(t, err)
				r, err := p.Residual(res.X)
				require.NoError(t, err)
				if cfg.Name == "averaged" {
					require.Equal(t, solver.RuleFiniteSum, res.Certificate.Rule)
					require.Equal(t, res.Certificate.Bound <= c.eps, res.Status == solver.Success, "seed %d: %v", seed, res.Status)
					require.Contains(t, []solver.Status{solver.Success, solver.ToleranceEstimated}, res.Status)
				} else {
					require.Equal(t, solver.Success, res.Status, "seed %d", seed)
					require.True(t, res.Certificate.Rigorous(), "seed %d", seed)
				}
				if r > c.eps {
					missed++
				}
				if res.Certificate.Bound < r {
					uncovered++
				}
			}
			t.Logf("%s/%s: %d/%d runs above ε = %v, %d/%d certificates below the true residual (allowed %.1f)",
				c.cfg.Name, c.norm, missed, runs, c.eps, uncovered, runs, slack)
			require.LessOrEqual(t, float64(missed), slack, "runs whose true residual exceeds ε")
			require.LessOrEqual(t, float64(uncovered), slack, "certificates that do not cover the true residual")
		})
	}
}
