package deq

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

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

// The gorgonia Op of a Layer: its gradients against Backward, and the
// Lipschitz bound along training.

// matrixNode returns a named rows×cols input node holding data.
func matrixNode(g *G.ExprGraph, name string, rows, cols int, data []float64) *G.Node {
	t := tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(data))
	return G.NewMatrix(g, tensor.Float64, G.WithShape(rows, cols), G.WithName(name), G.WithValue(t))
}

func TestGraphGradientsMatchBackward(t *testing.T) {
	for _, tc := range gradCells() {
		t.Run(tc.name, func(t *testing.T) {
			sh := tc.cell.Shape()
			rng := rand.New(rand.NewPCG(31, 31))
			x := randVec(rng, tc.n*sh.InputLen(), 1)
			lo := loss{randVec(rng, tc.n*sh.HiddenLen(), 1)}
			l := must(New(tc.cell, &tight))
			wantX, wantTh, sol := gradients(t, l, x, lo)

			// The same loss in a gorgonia graph: L = ⟨c, z⟩ + ½‖z‖².
			g := G.NewGraph()
			xn := matrixNode(g, "x", tc.n, sh.InputLen(), slices.Clone(x))
			a, err := l.Apply(context.Background(), xn)
			require.NoError(t, err)
			c := matrixNode(g, "c", tc.n, sh.HiddenLen(), slices.Clone(lo.c))
			half := G.NewConstant(0.5)
			cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(a.Z, c)))),
				G.Must(G.Mul(half, G.Must(G.Sum(G.Must(G.Square(a.Z))))))))
			learn := append(G.Nodes{xn}, a.Params...)
			_, err = G.Grad(cost, learn...)
			require.NoError(t, err)
			vm := G.NewTapeMachine(g, G.BindDualValues(learn...))
			defer vm.Close()
			layers.ZeroGrads(l.Params())
			for run := range 2 {
				vm.Reset()
				require.NoError(t, vm.RunAll())
				require.InDeltaSlice(t, sol.Z, a.Solution().Z, 1e-15)
				require.InDelta(t, lo.value(sol.Z), cost.Value().Data().(float64), 1e-12)
				gx, err := xn.Grad()
				require.NoError(t, err)
				// Gradients accumulate over runs until a solver step zeroes them.
				scale := float64(run + 1)
				require.InDeltaSlice(t, scaled(wantX, scale), gx.Data().([]float64), 1e-12)
				var gth []float64
				for _, p := range a.Params {
					gp, err := p.Grad()
					require.NoError(t, err)
					gth = append(gth, gp.Data().([]float64)...)
				}
				require.InDeltaSlice(t, scaled(wantTh, scale), gth, 1e-12)
			}
			require.Equal(t, Implicit, a.BackwardStats().Mode)
			require.Equal(t, solver.Success, a.BackwardStats().Adjoint.Status)
			for _, p := range l.Params() {
				require.Equal(t, 0.0, floats.Norm(p.GradData(), 1), "the graph leaves Param gradients alone")
			}
		})
	}
}

func scaled(x []float64, f float64) []float64 {
	y := slices.Clone(x)
	floats.Scale(f, y)
	return y
}

// model is a tiny encoder → DEQ → readout regression model in a gorgonia
// graph: loss = mean((tanh(X·We)·… → z*)·Wr − Y)².
type model struct {
	vm    G.VM
	layer *Layer
	learn G.Nodes
	loss  G.Value
	cell  layers.Cell
}

func newModel(cell layers.Cell, n int, seed uint64) (*model, error) {
	const in, out = 4, 2
	rng := rand.New(rand.NewPCG(seed, 1))
	xs := randVec(rng, n*in, 1)
	ys := make([]float64, n*out)
	for i := 0; i < n; i++ {
		ys[i*out] = math.Sin(xs[i*in] + xs[i*in+1])
		ys[i*out+1] = math.Cos(xs[i*in+2] - xs[i*in+3])
	}
	l, err := New(cell, &Settings{ForwardSettings: solver.Settings{Tol: 1e-8}, AdjointSettings: solver.Settings{Tol: 1e-8}})
	if err != nil {
		return nil, err
	}
	d, h := cell.Shape().InputLen(), cell.Shape().HiddenLen()
	g := G.NewGraph()
	x := matrixNode(g, "X", n, in, xs)
	y := matrixNode(g, "Y", n, out, ys)
	we := matrixNode(g, "We", in, d, randVec(rng, in*d, 0.5))
	wr := matrixNode(g, "Wr", h, out, randVec(rng, h*out, 0.5))
	enc := G.Must(G.Tanh(G.Must(G.Mul(x, we))))
	a, err := l.Apply(context.Background(), enc)
	if err != nil {
		return nil, err
	}
	pred := G.Must(G.Mul(a.Z, wr))
	cost := G.Must(G.Mean(G.Must(G.Square(G.Must(G.Sub(pred, y))))))
	m := &model{layer: l, cell: cell, learn: append(G.Nodes{we, wr}, a.Params...)}
	G.Read(cost, &m.loss)
	if _, err := G.Grad(cost, m.learn...); err != nil {
		return nil, err
	}
	m.vm = G.NewTapeMachine(g, G.BindDualValues(m.learn...))
	return m, nil
}

// step runs one forward/backward pass and returns the loss.
func (m *model) step() (float64, error) {
	m.vm.Reset()
	if err := m.vm.RunAll(); err != nil {
		return 0, err
	}
	return m.loss.Data().(float64), nil
}

// spectral returns ‖W‖₂, the largest singular value of W.
func spectral(w []float64, h int) float64 {
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(h, h, slices.Clone(w)), mat.SVDNone) {
		panic("singular value decomposition failed")
	}
	return svd.Values(nil)[0]
}

// rowSumT returns ‖Wᵀ‖_∞, the largest absolute row sum of Wᵀ.
func rowSumT(w []float64, h int) float64 {
	return mat.Norm(mat.DenseCopyOf(mat.NewDense(h, h, slices.Clone(w)).T()), math.Inf(1))
}

func TestLipschitzHoldsAfterEveryAdamUpdate(t *testing.T) {
	const h, gamma, steps = 6, 0.7, 25
	for _, norm := range []string{"l2", "linf"} {
		t.Run(norm, func(t *testing.T) {
			cell := must(layers.NewDense(layers.DenseConfig{Hidden: h, Input: 3, Activation: layers.Tanh, Lipschitz: constraint(norm, gamma), Seed: 5}))
			m := must(newModel(cell, 16, 3))
			// A large learning rate pushes W off the constraint at every step.
			adam := G.NewAdamSolver(G.WithLearnRate(0.1))
			measure := map[string]func([]float64, int) float64{"l2": spectral, "linf": rowSumT}[norm]
			violated := 0
			first, last := 0.0, 0.0
			for s := range steps {
				loss, err := m.step()
				require.NoError(t, err)
				if s == 0 {
					first = loss
				}
				last = loss
				require.NoError(t, adam.Step(G.NodesToValueGrads(m.learn)))
				if measure(cell.W().Data(), h) > gamma*(1+1e-9) {
					violated++
				}
				require.NoError(t, cell.Project())
				require.LessOrEqual(t, measure(cell.W().Data(), h), gamma*(1+1e-9), "step %d", s)
			}
			require.Positive(t, violated, "the optimiser must have left the constraint set")
			require.Less(t, last, first, "training must make progress")
		})
	}
}

// Example_training trains an encoder → DEQ → readout model in one gorgonia
// graph with gorgonia's Adam solver, projecting the DEQ cell back onto its
// Lipschitz constraint after every step.
func Example_training() {
	cell, err := layers.NewDense(layers.DenseConfig{
		Hidden: 8, Input: 3, Activation: layers.Tanh,
		Lipschitz: layers.Constraint{P: 2, Gamma: 0.8}, Seed: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := newModel(cell, 32, 7)
	if err != nil {
		fmt.Println(err)
		return
	}
	adam := G.NewAdamSolver(G.WithLearnRate(0.05))
	var losses []float64
	for range 40 {
		loss, err := m.step()
		if err != nil {
			fmt.Println(err)
			return
		}
		losses = append(losses, loss)
		if err := adam.Step(G.NodesToValueGrads(m.learn)); err != nil {
			fmt.Println(err)
			return
		}
		if err := cell.Project(); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Printf("loss fell below a tenth: %v\n", losses[len(losses)-1] < losses[0]/10)
	fmt.Printf("‖W‖₂ ≤ 0.8: %v\n", cell.Bound() <= 0.8*(1+1e-9))
	// Output:
	// loss fell below a tenth: true
	// ‖W‖₂ ≤ 0.8: true
}

// Tests of the training aids: DEQ dropout, fixed-point correction, and the
// finite-difference helpers they share with Jacobian regularisation.

// fdSettings are the central differences of the training aids' tests.
var fdSettings = &fd.Settings{Formula: fd.Central, Step: 1e-5}

// fdOf returns the central finite-difference gradient of value with
// respect to the entries of v, changed in place and restored.
func fdOf(value func() float64, v []float64) []float64 {
	orig := slices.Clone(v)
	g := make([]float64, len(v))
	fd.Gradient(g, func(p []float64) float64 { copy(v, p); return value() }, slices.Clone(v), fdSettings)
	copy(v, orig)
	return g
}

// fdParams returns the finite-difference gradients of value with respect
// to every parameter, concatenated in ps order.
func fdParams(value func() float64, ps []*layers.Param) []float64 {
	var g []float64
	for _, p := range ps {
		g = append(g, fdOf(value, p.Data())...)
	}
	return g
}

// paramGrads returns the parameter gradients of ps, concatenated, and
// zeroes them.
func paramGrads(ps []*layers.Param) []float64 {
	var g []float64
	for _, p := range ps {
		g = append(g, p.GradData()...)
	}
	layers.ZeroGrads(ps)
	return g
}

// requireClose checks got against want entry by entry, to tol relative to
// max(1, |want|).
func requireClose(t *testing.T, want, got []float64, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i, w := range want {
		require.InDelta(t, w, got[i], tol*max(1, abs(w)), "%s[%d]: want %.10g, got %.10g", what, i, w, got[i])
	}
}

func abs(x float64) float64 { return max(x, -x) }

func TestDropoutMaskFixedAcrossIterations(t *testing.T) {
	// Picard's iterates are z_k = f̃(z_{k−1}) = m ⊙ f(z_{k−1}): the mask read
	// off iteration 1 (entries 0 or 1/(1 − p)) must give iteration 6 too,
	// and the returned z* is a fixed point of the same masked map.
	const p = 0.4
	c := must(layers.NewDense(layers.DenseConfig{Hidden: 8, Input: 3, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.5}, Seed: 2}))
	rec := &iterates{}
	s := Settings{Dropout: p, ForwardSettings: solver.Settings{Tol: 1e-13, Seed: 9, Recorder: rec}}
	l := must(New(c, &s))
	n := 3
	x := randVec(rand.New(rand.NewPCG(1, 1)), n*c.Shape().InputLen(), 1)
	sol := must(l.Forward(context.Background(), x))
	require.True(t, sol.Dropout)
	require.Greater(t, len(rec.xs), 7)
	e := must(c.Evaluator(n))
	require.NoError(t, e.SetInput(x))
	f := func(z []float64) []float64 {
		out := make([]float64, len(z))
		require.NoError(t, e.EvalExact(out, z))
		return out
	}
	f0 := f(rec.xs[0])
	m := make([]float64, len(f0))
	dropped := 0
	for i, v := range rec.xs[1] {
		m[i] = v / f0[i]
		if v == 0 {
			dropped++
		} else {
			require.InDelta(t, 1/(1-p), m[i], 1e-12)
		}
	}
	require.Equal(t, []float64(sol.mask), roundMask(m, p))
	require.Greater(t, dropped, 0)
	require.Less(t, dropped, len(m))
	want := f(rec.xs[5])
	floats.Mul(want, roundMask(m, p))
	require.InDeltaSlice(t, want, rec.xs[6], 1e-12)
	fz := f(sol.Z)
	floats.Mul(fz, sol.mask)
	require.InDeltaSlice(t, fz, sol.Z, 1e-12)

	// Same seeds, same mask; new seeds, a new mask.
	rec.xs = nil
	again := must(l.Forward(context.Background(), x))
	require.Equal(t, sol.mask, again.mask)
	l.SetSeeds(10, 0)
	rec.xs = nil
	other := must(l.Forward(context.Background(), x))
	require.NotEqual(t, sol.mask, other.mask)
}

// roundMask returns the mask m with its entries snapped to 0 or 1/(1 − p).
func roundMask(m []float64, p float64) []float64 {
	out := make([]float64, len(m))
	for i, v := range m {
		if v > 0.5 {
			out[i] = 1 / (1 - p)
		}
	}
	return out
}

func TestDropoutOffInEvaluation(t *testing.T) {
	c := must(layers.NewDense(layers.DenseConfig{Hidden: 5, Input: 2, Activation: layers.Tanh, Seed: 3}))
	x := randVec(rand.New(rand.NewPCG(2, 2)), 2*c.Shape().InputLen(), 1)
	plain := must(must(New(c, &tight)).Forward(context.Background(), x))
	s := tight
	s.Dropout = 0.3
	l := must(New(c, &s))
	l.SetEvaluation(true)
	sol := must(l.Forward(context.Background(), x))
	require.False(t, sol.Dropout)
	require.Nil(t, sol.mask)
	require.Equal(t, plain.Z, sol.Z)
	l.SetEvaluation(false)
	sol = must(l.Forward(context.Background(), x))
	require.True(t, sol.Dropout)
	require.NotEqual(t, plain.Z, sol.Z)
	for _, p := range []float64{-0.1, 1, 1.5} {
		_, err := New(c, &Settings{Dropout: p})
		require.ErrorContains(t, err, "Dropout")
	}
}

func TestDropoutGradientsMatchFiniteDifferences(t *testing.T) {
	// With the mask fixed (the same seeds for every solve), the implicit
	// gradient of L(z*) is that of the masked map's fixed point, for every
	// cell kind; the Jacobian penalty and the correction gradients see the
	// mask too.
	for _, tc := range gradCells() {
		t.Run(tc.name, func(t *testing.T) {
			s := tight
			s.Dropout = 0.25
			s.ForwardSettings.Seed = 5
			s.CorrectionStates = 2
			l := must(New(tc.cell, &s))
			rng := rand.New(rand.NewPCG(8, 8))
			x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
			lo := loss{randVec(rng, tc.n*tc.cell.Shape().HiddenLen(), 1)}
			dx, dth, sol := gradients(t, l, x, lo)
			require.True(t, sol.Dropout)
			fx, fth := fdGradients(t, l, x, lo)
			requireClose(t, fx, dx, 1e-6, "dx")
			requireClose(t, fth, dth, 1e-6, "dθ")

			gs := [][]float64{randVec(rng, len(sol.Z), 1), randVec(rng, len(sol.Z), 1)}
			ps := l.Params()
			layers.ZeroGrads(ps)
			_, err := l.CorrectionBackward(sol, gs, nil)
			require.NoError(t, err)
			got := paramGrads(ps)
			value := func() float64 {
				fs, err := l.CorrectionForward(sol)
				require.NoError(t, err)
				return floats.Dot(gs[0], fs[0]) + floats.Dot(gs[1], fs[1])
			}
			requireClose(t, fdParams(value, ps), got, 1e-7, "correction dθ")

			if _, ok := tc.cell.(*layers.Dense); !ok {
				return
			}
			opts := &JacobianRegOptions{Probes: 2, Seed: 3}
			layers.ZeroGrads(ps)
			_, err = l.JacobianRegularize(sol, 1, opts, nil, nil)
			require.NoError(t, err)
			got = paramGrads(ps)
			pen := func() float64 { return must(l.JacobianRegularize(sol, 0, opts, nil, nil)).Value }
			requireClose(t, fdParams(pen, ps), got, 1e-6, "Jacobian dθ")
			// The masked penalty is that of the masked Jacobian: dropped
			// rows of J contribute nothing.
			plain := *sol
			plain.mask = nil
			require.NotEqual(t, pen(), must(l.JacobianRegularize(&plain, 0, opts, nil, nil)).Value)
		})
	}
}

func TestDropoutCheapBackwardModes(t *testing.T) {
	// Jacobian-free and phantom differentiate the masked map: phantom with
	// many steps approaches the implicit gradient of the masked fixed point.
	c := gradCells()[0]
	s := tight
	s.Dropout = 0.3
	s.ForwardSettings.Seed = 4
	rng := rand.New(rand.NewPCG(3, 3))
	x := randVec(rng, c.n*c.cell.Shape().InputLen(), 1)
	lo := loss{randVec(rng, c.n*c.cell.Shape().HiddenLen(), 1)}
	idx, ith, _ := gradients(t, must(New(c.cell, &s)), x, lo)
	s.Backward, s.PhantomSteps = Phantom, 80
	pdx, pth, _ := gradients(t, must(New(c.cell, &s)), x, lo)
	requireClose(t, idx, pdx, 1e-8, "phantom dx")
	requireClose(t, ith, pth, 1e-8, "phantom dθ")
	s.Backward = JacobianFree
	l := must(New(c.cell, &s))
	jdx, _, sol := gradients(t, l, x, lo)
	// JFB: dx = (∂f/∂x)ᵀ(m ⊙ ∂L/∂z*).
	e := must(c.cell.Evaluator(c.n))
	require.NoError(t, e.SetInput(x))
	g := lo.grad(sol.Z)
	floats.Mul(g, sol.mask)
	want := make([]float64, len(x))
	require.NoError(t, e.VJP(nil, want, sol.Z, g))
	layers.ZeroGrads(c.cell.Params())
	require.Equal(t, want, jdx)
}

// iterates is a PointRecorder keeping a copy of every recorded iterate.
type iterates struct{ xs [][]float64 }

func (r *iterates) Record(solver.TracePoint) error { panic("Record called on a PointRecorder") }
func (r *iterates) RecordPoint(p solver.TracePoint, x []float64) error {
	if p.Iter != len(r.xs) {
		panic("iterations out of order")
	}
	r.xs = append(r.xs, slices.Clone(x))
	return nil
}

func TestCorrectionStatesAreSolverIterates(t *testing.T) {
	// Every method that records its iterates gives K states (fewer only on
	// short solves): each one bit for bit the iterate the solver recorded at
	// its Iter, about evenly spaced (within the kept stride, at most
	// T/(K − 1), of k·T/K), the last being the returned z*. The caller's
	// own Recorder still sees every point.
	dense := must(layers.NewDense(layers.DenseConfig{Hidden: 4, Input: 3, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.9}, Seed: 5}))
	meanField := manyTermCells("l2", 1)["meanfield"]
	cases := []struct {
		name string
		cell layers.Cell
		m    solver.Method
		tol  float64
		mode OracleMode
	}{
		{"picard", dense, solver.Picard{}, 1e-12, Auto},
		{"km", dense, solver.KrasnoselskiiMann{}, 1e-12, Auto},
		{"halpern", dense, solver.Halpern{}, 1e-4, Auto},
		{"ghal", dense, solver.GHAL{Gamma: 0.9}, 1e-10, Auto},
		{"anderson", dense, solver.Anderson{}, 1e-12, Auto},
		{"broyden", dense, solver.Broyden{}, 1e-12, Auto},
		{"vrghal", meanField, solver.VRGHAL{Gamma: meanField.Gamma()}, 5e-3, Sampled},
	}
	for _, c := range cases {
		for _, K := range []int{1, 2, 5} {
			t.Run(c.name, func(t *testing.T) {
				rec := &iterates{}
				s := Settings{
					Forward:          c.m,
					ForwardOracle:    c.mode,
					ForwardSettings:  solver.Settings{Tol: c.tol, MaxIter: 100000, Seed: 1, Recorder: rec},
					CorrectionStates: K,
				}
				l := must(New(c.cell, &s))
				x := randVec(rand.New(rand.NewPCG(2, 2)), 2*c.cell.Shape().InputLen(), 1)
				sol := must(l.Forward(context.Background(), x))
				require.Equal(t, solver.Success, sol.Result.Status)
				T := sol.Result.Stats.Iterations
				require.Len(t, rec.xs, T+1, "the caller's recorder sees every point")
				st := sol.States
				require.NotEmpty(t, st)
				require.LessOrEqual(t, len(st), K)
				if T >= 4*K {
					require.Len(t, st, K, "T = %d", T)
				}
				last := st[len(st)-1]
				require.Equal(t, sol.Z, last.Z)
				require.Equal(t, rec.xs[last.Iter], sol.Z, "the last state is the iterate the solver returned")
				for k, s := range st[:len(st)-1] {
					require.Equal(t, rec.xs[s.Iter], s.Z, "state %d (iteration %d)", k, s.Iter)
					require.Less(t, s.Iter, st[k+1].Iter)
					if len(st) == K {
						target := float64(k+1) * float64(T) / float64(K)
						require.LessOrEqual(t, math.Abs(float64(s.Iter)-target), float64(T)/float64(K-1), "state %d of %d iterations", k, T)
					}
				}
			})
		}
	}
}

// silent is a method that evaluates the oracle without recording.
type silent struct{}

func (silent) String() string { return "silent" }
func (silent) Run(e *solver.Env) error {
	return e.Eval(make([]float64, e.Len()), e.X0(), solver.Sample{Size: 1})
}

func TestCorrectionRefusesMethodsWithoutIterates(t *testing.T) {
	c := must(layers.NewDense(layers.DenseConfig{Hidden: 3, Input: 2, Seed: 1}))
	l := must(New(c, &Settings{Forward: silent{}, CorrectionStates: 3}))
	_, err := l.Forward(context.Background(), make([]float64, 2))
	require.ErrorContains(t, err, "CorrectionStates")
	_, err = New(c, &Settings{CorrectionStates: -1})
	require.ErrorContains(t, err, "CorrectionStates")
	// Without collection the helpers refuse, naming the field.
	l = must(New(c, nil))
	sol := must(l.Forward(context.Background(), make([]float64, 2)))
	require.Nil(t, sol.States)
	_, err = l.CorrectionForward(sol)
	require.ErrorContains(t, err, "CorrectionStates")
}

func TestCorrectionBackwardMatchesFiniteDifferences(t *testing.T) {
	// The gradient of Σ_k ⟨g_k, f(sg(z_k), x)⟩ in θ and x, the states held
	// fixed, for every cell kind.
	for _, tc := range gradCells() {
		t.Run(tc.name, func(t *testing.T) {
			s := tight
			s.ForwardSettings.Tol = 1e-8
			s.CorrectionStates = 3
			l := must(New(tc.cell, &s))
			rng := rand.New(rand.NewPCG(4, 4))
			x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
			sol := must(l.Forward(context.Background(), x))
			require.Len(t, sol.States, 3)
			gs := make([][]float64, len(sol.States))
			for k := range gs {
				gs[k] = randVec(rng, len(sol.Z), 1)
			}
			ps := l.Params()
			layers.ZeroGrads(ps)
			dx := make([]float64, len(x))
			st, err := l.CorrectionBackward(sol, gs, dx)
			require.NoError(t, err)
			require.Equal(t, 3, st.VJPs)
			ev := must(tc.cell.Evaluator(sol.Examples))
			require.Equal(t, int64(3*ev.Terms()), st.TermEvals, "one full VJP, Terms() term evaluations, per state")
			got := paramGrads(ps)
			value := func() float64 {
				fs, err := l.CorrectionForward(sol)
				require.NoError(t, err)
				v := 0.0
				for k, f := range fs {
					v += floats.Dot(gs[k], f)
				}
				return v
			}
			requireClose(t, fdParams(value, ps), got, 1e-7, "dθ")
			requireClose(t, fdOf(value, sol.X), dx, 1e-7, "dx")
			_, err = l.CorrectionBackward(sol, gs[:1], nil)
			require.ErrorContains(t, err, "cotangents")
		})
	}
}
