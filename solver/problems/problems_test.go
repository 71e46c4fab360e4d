package problems

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

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
