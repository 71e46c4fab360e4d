package deq

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// normFor returns the per-example norm of the given name on cell's states.
func normFor(name string, cell layers.Cell) solver.Norm {
	sh := cell.Shape()
	return must(solver.ParseNorm(name, sh.Rows, sh.Hidden))
}

// constraint returns the cell constraint for the norm of the given name,
// with bound gamma.
func constraint(name string, gamma float64) layers.Constraint {
	c := must(layers.ConstraintFor(must(solver.ParseNorm(name, 1, 1))))
	c.Gamma = gamma
	return c
}

func randVec(rng *rand.Rand, n int, sd float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = sd * rng.NormFloat64()
	}
	return x
}

// loss is L(z) = ⟨c, z⟩ + ½‖z‖², with gradient c + z.
type loss struct{ c []float64 }

func (l loss) value(z []float64) float64 { return floats.Dot(l.c, z) + 0.5*floats.Dot(z, z) }
func (l loss) grad(z []float64) []float64 {
	g := slices.Clone(l.c)
	floats.Add(g, z)
	return g
}

// tight solves forward and adjoint problems to 1e-14.
var tight = Settings{
	ForwardSettings: solver.Settings{Tol: 1e-14, MaxIter: 1000},
	AdjointSettings: solver.Settings{Tol: 1e-14, MaxIter: 1000},
}

type gradCase struct {
	name string
	cell layers.Cell
	n    int
}

// gradCells are small smooth (tanh) cells contracting with γ̄ = 0.5.
func gradCells() []gradCase {
	con := layers.Constraint{Gamma: 0.5}
	return []gradCase{
		{"dense", must(layers.NewDense(layers.DenseConfig{Hidden: 3, Input: 2, Activation: layers.Tanh, Lipschitz: con, Seed: 1})), 2},
		{"dense-rows-linf", must(layers.NewDense(layers.DenseConfig{Hidden: 3, Input: 2, Rows: 2, Activation: layers.Tanh, Lipschitz: constraint("linf", 0.5), Seed: 2})), 2},
		{"meanfield", must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 3, Input: 2, Units: 4, Activation: layers.Tanh, Lipschitz: con, Seed: 3})), 2},
		{"experts", must(layers.NewExperts(layers.ExpertsConfig{Hidden: 3, Input: 4, Experts: 2, Activation: layers.Tanh, Lipschitz: con, Seed: 4})), 2},
	}
}

// gradients runs a forward and backward pass of L and returns ∂L/∂x and
// ∂L/∂θ (concatenated in Params order).
func gradients(t *testing.T, l *Layer, x []float64, lo loss) (dx, dtheta []float64, sol *Solution) {
	t.Helper()
	ps := l.Params()
	layers.ZeroGrads(ps)
	sol, err := l.Forward(context.Background(), x)
	require.NoError(t, err)
	dx = make([]float64, len(x))
	_, err = l.Backward(context.Background(), sol, lo.grad(sol.Z), dx)
	require.NoError(t, err)
	for _, p := range ps {
		dtheta = append(dtheta, p.GradData()...)
	}
	layers.ZeroGrads(ps)
	return dx, dtheta, sol
}

// fdGradients returns central finite differences of x, θ ↦ L(z*(x, θ)),
// each evaluation a forward solve.
func fdGradients(t *testing.T, l *Layer, x []float64, lo loss) (dx, dtheta []float64) {
	t.Helper()
	value := func(x []float64) float64 {
		sol, err := l.Forward(context.Background(), x)
		require.NoError(t, err)
		require.Equal(t, solver.Success, sol.Result.Status)
		return lo.value(sol.Z)
	}
	set := &fd.Settings{Formula: fd.Central, Step: 1e-5}
	dx = make([]float64, len(x))
	fd.Gradient(dx, value, slices.Clone(x), set)
	for _, p := range l.Params() {
		d := p.Data()
		orig := slices.Clone(d)
		g := make([]float64, len(d))
		fd.Gradient(g, func(v []float64) float64 { copy(d, v); return value(x) }, slices.Clone(d), set)
		copy(d, orig)
		dtheta = append(dtheta, g...)
	}
	return dx, dtheta
}

func TestImplicitGradientsMatchFiniteDifferences(t *testing.T) {
	for _, tc := range gradCells() {
		t.Run(tc.name, func(t *testing.T) {
			l := must(New(tc.cell, &tight))
			rng := rand.New(rand.NewPCG(7, 7))
			x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
			lo := loss{randVec(rng, tc.n*tc.cell.Shape().HiddenLen(), 1)}
			dx, dth, sol := gradients(t, l, x, lo)
			require.Equal(t, solver.Success, sol.Result.Status)
			wx, wth := fdGradients(t, l, x, lo)
			require.InDeltaSlice(t, wx, dx, 1e-7, "∂L/∂x")
			require.InDeltaSlice(t, wth, dth, 1e-7, "∂L/∂θ")

			// The Jacobian-free direction is not the gradient: the test
			// above can fail.
			s := tight
			s.Backward = JacobianFree
			_, jth, _ := gradients(t, must(New(tc.cell, &s)), x, lo)
			d := slices.Clone(jth)
			floats.Sub(d, wth)
			require.Greater(t, floats.Norm(d, math.Inf(1)), 1e-3)
		})
	}
}

// unrolled returns ∂L(z_K)/∂x and ∂L(z_K)/∂θ for K Picard steps
// z_{k+1} = f(z_k, x) from z_0 = 0, by reverse-mode differentiation
// through every step with the evaluator's VJPs.
func unrolled(t *testing.T, cell layers.Cell, n int, x []float64, lo loss, K int) (dx, dtheta []float64) {
	t.Helper()
	e := must(cell.Evaluator(n))
	require.NoError(t, e.SetInput(x))
	zs := make([][]float64, K+1)
	zs[0] = make([]float64, e.Len())
	for k := 0; k < K; k++ {
		zs[k+1] = make([]float64, e.Len())
		require.NoError(t, e.EvalExact(zs[k+1], zs[k]))
	}
	ps := cell.Params()
	layers.ZeroGrads(ps)
	g := lo.grad(zs[K])
	dx = make([]float64, len(x))
	dxk := make([]float64, len(x))
	dz := make([]float64, e.Len())
	for k := K - 1; k >= 0; k-- {
		require.NoError(t, e.VJP(dz, dxk, zs[k], g))
		floats.Add(dx, dxk)
		copy(g, dz)
	}
	for _, p := range ps {
		dtheta = append(dtheta, p.GradData()...)
	}
	layers.ZeroGrads(ps)
	return dx, dtheta
}

func TestImplicitMatchesUnrolledPicard(t *testing.T) {
	const K = 120 // 0.5^120 ≈ 1e-36: the unrolled map is at its fixed point.
	for _, tc := range gradCells() {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(8, 8))
			x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
			lo := loss{randVec(rng, tc.n*tc.cell.Shape().HiddenLen(), 1)}
			ux, uth := unrolled(t, tc.cell, tc.n, x, lo, K)
			dx, dth, _ := gradients(t, must(New(tc.cell, &tight)), x, lo)
			require.InDeltaSlice(t, ux, dx, 1e-11)
			require.InDeltaSlice(t, uth, dth, 1e-11)

			// Many phantom steps converge to the same gradient, damped or not.
			for _, lam := range []float64{1, 0.6} {
				s := tight
				s.Backward, s.PhantomSteps, s.PhantomDamping = Phantom, 150, lam
				px, pth, _ := gradients(t, must(New(tc.cell, &s)), x, lo)
				require.InDeltaSlice(t, ux, px, 1e-9, "phantom λ=%v", lam)
				require.InDeltaSlice(t, uth, pth, 1e-9, "phantom λ=%v", lam)
			}
		})
	}
}

func TestCheapBackwardModes(t *testing.T) {
	tc := gradCells()[0]
	rng := rand.New(rand.NewPCG(9, 9))
	x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
	lo := loss{randVec(rng, tc.n*tc.cell.Shape().HiddenLen(), 1)}
	s := tight
	s.Backward = JacobianFree
	jl := must(New(tc.cell, &s))
	jx, jth, sol := gradients(t, jl, x, lo)

	// Jacobian-free: one VJP with cotangent ∂L/∂z*.
	e := must(tc.cell.Evaluator(tc.n))
	require.NoError(t, e.SetInput(x))
	wx := make([]float64, len(x))
	require.NoError(t, e.VJP(nil, wx, sol.Z, lo.grad(sol.Z)))
	var wth []float64
	for _, p := range tc.cell.Params() {
		wth = append(wth, p.GradData()...)
	}
	layers.ZeroGrads(tc.cell.Params())
	require.Equal(t, wx, jx)
	require.Equal(t, wth, jth)

	// One undamped phantom step is the Jacobian-free gradient.
	s.Backward, s.PhantomSteps = Phantom, 1
	pl := must(New(tc.cell, &s))
	px, pth, _ := gradients(t, pl, x, lo)
	require.InDeltaSlice(t, jx, px, 1e-15)
	require.InDeltaSlice(t, jth, pth, 1e-15)

	sol, err := pl.Forward(context.Background(), x)
	require.NoError(t, err)
	st, err := pl.Backward(context.Background(), sol, lo.grad(sol.Z), nil)
	require.NoError(t, err)
	require.Equal(t, 1, st.VJPs)
	require.Nil(t, st.Adjoint)
	layers.ZeroGrads(tc.cell.Params())
}

func TestForwardExposesSolverResult(t *testing.T) {
	tc := gradCells()[2] // the mean-field cell: stochastic, solved exactly by Picard
	l := must(New(tc.cell, &Settings{ForwardSettings: solver.Settings{Tol: 1e-9}, AdjointSettings: solver.Settings{Tol: 1e-9}}))
	rng := rand.New(rand.NewPCG(1, 1))
	x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
	sol, err := l.Forward(context.Background(), x)
	require.NoError(t, err)
	require.Equal(t, solver.Success, sol.Result.Status)
	require.False(t, sol.Sampled, "Picard gets the exact operator under Auto")
	require.True(t, sol.Proven)
	require.Nil(t, sol.Lipschitz, "proven cells are not monitored by default")
	require.Equal(t, solver.RuleExact, sol.Result.Certificate.Rule)
	require.LessOrEqual(t, sol.Result.Certificate.Bound, 1e-9)
	require.Len(t, sol.Result.Certificate.PerExample, tc.n)
	require.Equal(t, int64(tc.cell.(*layers.MeanField).Units())*sol.Result.Stats.Calls, sol.Result.Stats.Samples,
		"an exact evaluation of the mean-field cell counts its M units")
	st, err := l.Backward(context.Background(), sol, make([]float64, len(sol.Z)), nil)
	require.NoError(t, err)
	require.Equal(t, solver.Success, st.Adjoint.Status)
	require.Equal(t, solver.RuleExact, st.Adjoint.Certificate.Rule)

	// Forcing the sampled oracle on Picard is rejected by its validation.
	l = must(New(tc.cell, &Settings{ForwardOracle: Sampled}))
	_, err = l.Forward(context.Background(), x)
	require.ErrorContains(t, err, "deterministic oracle")
}

func TestSettingsErrors(t *testing.T) {
	cell := gradCells()[0].cell
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{Backward: 9}, "Settings.Backward"},
		{Settings{ForwardOracle: -1}, "Settings.ForwardOracle"},
		{Settings{AdjointOracle: 5}, "Settings.AdjointOracle"},
		{Settings{PhantomSteps: -1}, "Settings.PhantomSteps"},
		{Settings{PhantomDamping: 1.5}, "Settings.PhantomDamping"},
		{Settings{Monitor: 4}, "Settings.Monitor"},
		{Settings{Norm: must(solver.NewLInf(5))}, "Settings.Norm"},
		{Settings{AdjointNorm: must(solver.NewSchatten(2, 3, 1))}, "Settings.AdjointNorm"},
	} {
		_, err := New(cell, &tc.s)
		require.ErrorContains(t, err, tc.want)
	}
	_, err := New(nil, nil)
	require.ErrorContains(t, err, "nil cell")
	l := must(New(cell, nil))
	_, err = l.Forward(context.Background(), make([]float64, 3))
	require.ErrorContains(t, err, "multiple")
	sol, err := l.Forward(context.Background(), make([]float64, 4))
	require.NoError(t, err)
	_, err = l.Backward(context.Background(), sol, make([]float64, 5), nil)
	require.ErrorContains(t, err, "gz has length")
	_, err = l.Backward(context.Background(), sol, make([]float64, 6), make([]float64, 1))
	require.ErrorContains(t, err, "dx has length")
}

func TestSettingsNormDefaultsAndClones(t *testing.T) {
	cell := must(layers.NewDense(layers.DenseConfig{Hidden: 3, Input: 2, Rows: 2, Seed: 1}))
	l := must(New(cell, nil))
	s := l.Settings()
	require.Equal(t, must(solver.NewLP(2, 6)), s.Norm, "nil means ℓ2 on Rows·Hidden entries")
	require.Equal(t, must(solver.NewLP(2, 6)), s.AdjointNorm)
	sch := must(solver.NewSchatten(4, 2, 3))
	l = must(New(cell, &Settings{Norm: sch}))
	require.NotSame(t, sch, l.Settings().Norm, "the layer keeps a clone")
	require.Equal(t, "schatten:4", l.Settings().Norm.String())
	sol, err := l.Forward(context.Background(), make([]float64, 3*cell.Shape().InputLen()))
	require.NoError(t, err)
	require.Len(t, sol.Result.Certificate.PerExample, 3, "a batch is measured example by example")
}

func TestForwardMethodsGiveTheImplicitGradient(t *testing.T) {
	// Swapping the forward and adjoint solvers must not change the implicit
	// gradient: each method is compared with Picard's (itself checked against
	// finite differences in layer_test.go). Halpern converges at rate O(1/k)
	// even on contractions, so it gets a reachable tolerance and a tolerance
	// on the gradient that follows from it (‖Δg‖ ≲ tol/(1−γ̄) times the VJP
	// norm); the others are held to the tight settings.
	cases := []struct {
		name    string
		m       solver.Method
		tol     float64
		gradTol float64
	}{
		{"broyden", solver.Broyden{}, 0, 1e-9},
		{"anderson", solver.Anderson{}, 0, 1e-9},
		{"ghal", solver.GHAL{Gamma: 0.5}, 0, 1e-9},
		{"km", solver.KrasnoselskiiMann{}, 0, 1e-9},
		{"halpern", solver.Halpern{}, 1e-4, 1e-3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range gradCells() {
				s := tight
				s.Forward, s.Adjoint = c.m, c.m
				s.ForwardSettings.MaxIter, s.AdjointSettings.MaxIter = 100000, 100000
				if c.tol > 0 {
					s.ForwardSettings.Tol, s.AdjointSettings.Tol = c.tol, c.tol
				}
				l := must(New(tc.cell, &s))
				rng := rand.New(rand.NewPCG(7, 7))
				x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
				lo := loss{randVec(rng, tc.n*tc.cell.Shape().HiddenLen(), 1)}
				dx, dth, sol := gradients(t, l, x, lo)
				require.Equal(t, solver.Success, sol.Result.Status, tc.name)
				px, pth, _ := gradients(t, must(New(tc.cell, &tight)), x, lo)
				require.InDeltaSlice(t, px, dx, c.gradTol, tc.name)
				require.InDeltaSlice(t, pth, dth, c.gradTol, tc.name)
			}
		})
	}
}
