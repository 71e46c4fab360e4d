package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/diff/fd"
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/solver"
)

// testCell is a small cell with its batch size.
type testCell struct {
	name string
	cell Cell
	n    int
}

func mustCell[C Cell](c C, err error) C {
	if err != nil {
		panic(err)
	}
	return c
}

// smallCells returns the cells the tests run on, with tanh (smooth, for
// finite differences) and ReLU, vector and matrix states.
func smallCells() []testCell {
	return []testCell{
		{"dense-tanh", mustCell(NewDense(DenseConfig{Hidden: 5, Input: 3, Activation: Tanh, Seed: 1})), 3},
		{"dense-relu-rows", mustCell(NewDense(DenseConfig{Hidden: 4, Input: 3, Rows: 3, Seed: 2, Lipschitz: Constraint{P: math.Inf(1), Gamma: 0.8}})), 2},
		{"meanfield-tanh", mustCell(NewMeanField(MeanFieldConfig{Hidden: 4, Input: 3, Units: 7, Activation: Tanh, Seed: 3})), 3},
		{"meanfield-relu-rows", mustCell(NewMeanField(MeanFieldConfig{Hidden: 3, Input: 2, Units: 6, Rows: 2, Seed: 4, Lipschitz: Constraint{P: 4}})), 2},
		{"experts-tanh", mustCell(NewExperts(ExpertsConfig{Hidden: 4, Input: 6, Experts: 3, Activation: Tanh, Seed: 5})), 3},
		{"experts-relu-rows", mustCell(NewExperts(ExpertsConfig{Hidden: 3, Input: 8, Experts: 4, Rows: 2, Seed: 6})), 2},
	}
}

func randVec(rng *rand.Rand, n int, sd float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = sd * rng.NormFloat64()
	}
	return x
}

// setup returns an evaluator with a random input set, a random point and a
// random cotangent.
func setup(t *testing.T, tc testCell, seed uint64) (e Evaluator, x, z, g []float64) {
	t.Helper()
	e, err := tc.cell.Evaluator(tc.n)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 99))
	sh := tc.cell.Shape()
	x = randVec(rng, tc.n*sh.InputLen(), 1)
	z = randVec(rng, tc.n*sh.HiddenLen(), 1)
	g = randVec(rng, tc.n*sh.HiddenLen(), 1)
	require.NoError(t, e.SetInput(x))
	return e, x, z, g
}

func TestEvalGraphMatchesGonum(t *testing.T) {
	for _, tc := range smallCells() {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, _ := setup(t, tc, 1)
			a := make([]float64, e.Len())
			b := make([]float64, e.Len())
			require.NoError(t, e.EvalExact(a, z))
			require.NoError(t, e.(GraphEvaluator).EvalGraph(b, z))
			require.InDeltaSlice(t, b, a, 1e-12)
			require.Greater(t, floats.Norm(a, 2), 0.1, "the output must not be trivially zero")
			// The oracle with a sample of size ≥ M is the exact operator.
			n, err := e.Eval(b, z, solver.Sample{Seed: 3, Size: e.Terms()})
			require.NoError(t, err)
			require.Equal(t, e.Terms(), n)
			require.Equal(t, a, b)
		})
	}
}

// dot returns ⟨a, b⟩.
func dot(a, b []float64) float64 { return floats.Dot(a, b) }

// fdGrad returns the central finite-difference gradient of f at x. f may
// store its argument where x lives; fdGrad calls it at x last.
func fdGrad(f func([]float64) float64, x []float64) []float64 {
	grad := make([]float64, len(x))
	x0 := slices.Clone(x)
	fd.Gradient(grad, f, slices.Clone(x0), &fd.Settings{Formula: fd.Central, Step: 1e-6})
	f(x0)
	return grad
}

func TestVJPMatchesFiniteDifferences(t *testing.T) {
	for _, tc := range smallCells() {
		t.Run(tc.name, func(t *testing.T) { checkVJPFiniteDifferences(t, tc) })
	}
}

// checkVJPFiniteDifferences checks every exact VJP of tc's cell (dz, dx,
// each parameter gradient, accumulation, and the exact VJPHidden) against
// central finite differences of the gonum forward path.
func checkVJPFiniteDifferences(t *testing.T, tc testCell) {
	e, x, z, g := setup(t, tc, 2)
	// Build the graphs, then change every parameter in place: the
	// graphs must see the new values (they share the storage).
	require.NoError(t, e.VJP(nil, nil, z, g))
	_, err := e.VJPHidden(make([]float64, len(z)), z, g, solver.Sample{Seed: 1, Size: e.Terms()})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(77, 77))
	for _, p := range tc.cell.Params() {
		for i := range p.Data() {
			p.Data()[i] += 0.1 * rng.NormFloat64()
		}
	}
	require.NoError(t, e.SetInput(x))
	f := make([]float64, e.Len())
	// φ(z, x, θ) = ⟨g, f(z, x; θ)⟩ evaluated by the gonum path.
	phi := func() float64 {
		require.NoError(t, e.SetInput(x))
		require.NoError(t, e.EvalExact(f, z))
		return dot(g, f)
	}
	ps := tc.cell.Params()
	ZeroGrads(ps)
	dz := make([]float64, len(z))
	dx := make([]float64, len(x))
	require.NoError(t, e.VJP(dz, dx, z, g))

	wantZ := fdGrad(func(v []float64) float64 { copy(z, v); return phi() }, z)
	require.InDeltaSlice(t, wantZ, dz, 1e-6, "∂/∂z")
	wantX := fdGrad(func(v []float64) float64 { copy(x, v); return phi() }, x)
	require.InDeltaSlice(t, wantX, dx, 1e-6, "∂/∂x")
	for _, p := range ps {
		d := p.Data()
		want := fdGrad(func(v []float64) float64 { copy(d, v); return phi() }, d)
		require.InDeltaSlice(t, want, p.GradData(), 1e-6, "∂/∂%s", p.Name())
	}
	require.NoError(t, e.SetInput(x))

	// VJP accumulates: a second call doubles the gradients.
	first := slices.Clone(ps[0].GradData())
	require.NoError(t, e.VJP(nil, nil, z, g))
	floats.Scale(2, first)
	require.InDeltaSlice(t, first, ps[0].GradData(), 1e-12)
	ZeroGrads(ps)

	// The exact hidden VJP agrees with the full one.
	dh := make([]float64, len(z))
	n, err := e.VJPHidden(dh, z, g, solver.Sample{Seed: 1, Size: e.Terms()})
	require.NoError(t, err)
	require.Equal(t, e.Terms(), n)
	require.InDeltaSlice(t, dz, dh, 1e-12)
}

func TestSampledVJPHiddenMatchesFiniteDifferences(t *testing.T) {
	for _, tc := range smallCells() {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, g := setup(t, tc, 3)
			if e.Terms() == 1 {
				t.Skip("deterministic cell")
			}
			// Sizes are rounded up to powers of two; 8 is at least M for
			// every test cell, which gives the exact average.
			for _, sz := range []struct{ size, drawn int }{{1, 1}, {2, 2}, {5, 8}} {
				size := sz.size
				s := solver.Sample{Seed: 11 + uint64(size), Size: size}
				f := make([]float64, e.Len())
				want := fdGrad(func(v []float64) float64 {
					_, err := e.Eval(f, v, s)
					require.NoError(t, err)
					return dot(g, f)
				}, z)
				got := make([]float64, len(z))
				n, err := e.VJPHidden(got, z, g, s)
				require.NoError(t, err)
				require.Equal(t, min(sz.drawn, e.Terms()), n)
				require.InDeltaSlice(t, want, got, 1e-6, "size %d", size)
			}
		})
	}
}

func TestGraphsLeaveParamsAndInputsAlone(t *testing.T) {
	for _, tc := range smallCells() {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, g := setup(t, tc, 4)
			var before [][]float64
			for _, p := range tc.cell.Params() {
				before = append(before, slices.Clone(p.Data()))
			}
			z0, g0 := slices.Clone(z), slices.Clone(g)
			out := make([]float64, len(z))
			for range 2 {
				require.NoError(t, e.VJP(out, nil, z, g))
				_, err := e.VJPHidden(out, z, g, solver.Sample{Seed: 5, Size: 2})
				require.NoError(t, err)
				require.NoError(t, e.(GraphEvaluator).EvalGraph(out, z))
			}
			for i, p := range tc.cell.Params() {
				require.Equal(t, before[i], p.Data(), p.Name())
			}
			require.Equal(t, z0, z)
			require.Equal(t, g0, g)
			ZeroGrads(tc.cell.Params())
		})
	}
}

func TestOracleSameSampleSameOutput(t *testing.T) {
	for _, tc := range smallCells()[2:] {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, _ := setup(t, tc, 5)
			rng := rand.New(rand.NewPCG(8, 8))
			z2 := randVec(rng, len(z), 1)
			s := solver.Sample{Seed: 42, Size: 2}
			a := make([]float64, len(z))
			b := make([]float64, len(z))
			a2 := make([]float64, len(z))
			b2 := make([]float64, len(z))
			_, err := e.Eval(a, z, s)
			require.NoError(t, err)
			_, err = e.Eval(a2, z2, s)
			require.NoError(t, err)
			_, err = e.Eval(b, z2, solver.Sample{Seed: 43, Size: 2})
			require.NoError(t, err)
			_, err = e.Eval(b, z, s)
			require.NoError(t, err)
			require.Equal(t, a, b, "same seed, same point")
			_, err = e.Eval(b2, z2, s)
			require.NoError(t, err)
			require.Equal(t, a2, b2, "same seed at a second point")
			// A different seed draws different terms (with these fixed seeds).
			_, err = e.Eval(b, z, solver.Sample{Seed: 43, Size: 2})
			require.NoError(t, err)
			require.NotEqual(t, a, b)
			_, err = e.Eval(b, z, solver.Sample{Seed: 1, Size: 0})
			require.ErrorContains(t, err, "Sample.Size")
		})
	}
}

func TestOracleUnbiased(t *testing.T) {
	// Over K independent seeds, each coordinate's mean of τ(z; ξ) must lie
	// within 5 standard errors of T(z): a two-sided normal tail of 5.7e-7
	// per coordinate. The test is not vacuous: the standard errors are
	// required to be below 1% of ‖T(z)‖∞, so a bias of 5% would fail.
	const K = 40000
	for _, tc := range smallCells()[2:] {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, _ := setup(t, tc, 6)
			requireUnbiased(t, e, z, K, 2)
		})
	}
}

// requireUnbiased draws K evaluations τ(z; ξ_k) of e with Samples of size
// unit samples (seeds 1000, 1001, …) and requires each to report size unit
// samples, each coordinate's mean to lie within 5 standard errors
// (estimated from the draws) of the exact map T(z), and the standard errors
// to be positive (the oracle is random) and below 1% of ‖T(z)‖∞, so that a
// bias of 5% would fail.
func requireUnbiased(t *testing.T, e Evaluator, z []float64, K, size int) {
	t.Helper()
	exact := make([]float64, len(z))
	require.NoError(t, e.EvalExact(exact, z))
	sum := make([]float64, len(z))
	sq := make([]float64, len(z))
	tau := make([]float64, len(z))
	for k := range K {
		n, err := e.Eval(tau, z, solver.Sample{Seed: uint64(1000 + k), Size: size})
		require.NoError(t, err)
		require.Equal(t, size, n)
		for i, v := range tau {
			sum[i] += v
			sq[i] += v * v
		}
	}
	worst := 0.0
	fk := float64(K)
	for i := range sum {
		mean := sum[i] / fk
		se := math.Sqrt(math.Max(sq[i]/fk-mean*mean, 0) / (fk - 1))
		worst = math.Max(worst, se)
		require.LessOrEqual(t, math.Abs(mean-exact[i]), 5*se+1e-15, "coordinate %d", i)
	}
	require.Less(t, worst, 0.01*floats.Norm(exact, math.Inf(1)))
	require.Greater(t, worst, 0.0, "the oracle must be random")
}

// pairRatio returns the largest ratio ‖f(z₁) − f(z₂)‖/‖z₁ − z₂‖ over random
// pairs, in norm n, for the oracle evaluated with Sample s.
func pairRatio(t *testing.T, e Evaluator, n solver.Norm, s solver.Sample, pairs int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 5))
	f1 := make([]float64, e.Len())
	f2 := make([]float64, e.Len())
	d := make([]float64, e.Len())
	worst := 0.0
	for range pairs {
		z1 := randVec(rng, e.Len(), 2)
		z2 := slices.Clone(z1)
		// Nearby and distant pairs.
		sd := math.Pow(10, -3*rng.Float64())
		for i := range z2 {
			z2[i] += sd * rng.NormFloat64()
		}
		_, err := e.Eval(f1, z1, s)
		require.NoError(t, err)
		_, err = e.Eval(f2, z2, s)
		require.NoError(t, err)
		floats.SubTo(d, f1, f2)
		num := n.Norm(d)
		floats.SubTo(d, z1, z2)
		worst = math.Max(worst, num/n.Norm(d))
	}
	return worst
}

func TestProvenLipschitz(t *testing.T) {
	// For every cell and norm where Proven is true, random pairs never show
	// a ratio above γ̄; the cells are initialised at the bound (W is scaled
	// up first), so the ratios come close to it.
	for _, tc := range []struct {
		name  string
		cell  Cell
		norms []string
		size  int // sample size (0: exact)
	}{
		{"dense-l2", mustCell(NewDense(DenseConfig{Hidden: 6, Input: 2, Rows: 2, Lipschitz: Constraint{Gamma: 0.7}, Seed: 1})), []string{"l2", "schatten:2"}, 0},
		{"dense-l2-vector", mustCell(NewDense(DenseConfig{Hidden: 6, Input: 2, Lipschitz: Constraint{Gamma: 0.7}, Seed: 1})), []string{"l2", "schatten:4", "schatten:inf"}, 0},
		{"dense-linf", mustCell(NewDense(DenseConfig{Hidden: 6, Input: 2, Rows: 2, Lipschitz: Constraint{P: math.Inf(1), Gamma: 0.7}, Seed: 2})), []string{"linf"}, 0},
		{"dense-lp4", mustCell(NewDense(DenseConfig{Hidden: 6, Input: 2, Rows: 2, Lipschitz: Constraint{P: 4, Gamma: 0.7}, Seed: 3})), []string{"lp:4"}, 0},
		{"meanfield-l2", mustCell(NewMeanField(MeanFieldConfig{Hidden: 5, Input: 2, Units: 9, Rows: 3, Lipschitz: Constraint{Gamma: 0.7}, Seed: 4})), []string{"l2", "schatten:2", "schatten:4", "schatten:inf"}, 0},
		{"meanfield-linf", mustCell(NewMeanField(MeanFieldConfig{Hidden: 5, Input: 2, Units: 9, Lipschitz: Constraint{P: math.Inf(1), Gamma: 0.7}, Seed: 5})), []string{"linf"}, 0},
		{"experts-l2-sampled", mustCell(NewExperts(ExpertsConfig{Hidden: 5, Input: 8, Experts: 4, Rows: 2, Lipschitz: Constraint{Gamma: 0.7}, Seed: 6})), []string{"l2", "schatten:2"}, 1},
		{"experts-linf-sampled", mustCell(NewExperts(ExpertsConfig{Hidden: 5, Input: 8, Experts: 4, Lipschitz: Constraint{P: math.Inf(1), Gamma: 0.7}, Seed: 7})), []string{"linf"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.cell.Params() {
				if p.Name() == "W" || p.Name() == "V" {
					floats.Scale(10, p.Data())
				}
			}
			require.NoError(t, tc.cell.Project())
			e, err := tc.cell.Evaluator(3)
			require.NoError(t, err)
			sh := tc.cell.Shape()
			rng := rand.New(rand.NewPCG(3, 3))
			require.NoError(t, e.SetInput(randVec(rng, 3*sh.InputLen(), 1)))
			for _, name := range tc.norms {
				ex, err := solver.ParseNorm(name, sh.Rows, sh.Hidden)
				require.NoError(t, err)
				n, err := solver.NewBatched(ex, 3)
				require.NoError(t, err)
				require.True(t, tc.cell.Proven(n), name)
				s := solver.Sample{Seed: 9, Size: tc.size}
				if tc.size == 0 {
					s.Size = e.Terms()
				}
				r := pairRatio(t, e, n, s, 200, 1)
				require.LessOrEqual(t, r, tc.cell.Gamma()*(1+1e-9), name)
				require.Greater(t, r, 0.05*tc.cell.Gamma(), "%s: ratios must not be trivially small", name)
			}
		})
	}
}

func TestProvenTable(t *testing.T) {
	dense := func(norm string, rows int) Cell {
		return mustCell(NewDense(DenseConfig{Hidden: 3, Input: 1, Rows: rows, Lipschitz: Constraint{P: constraintP(norm)}}))
	}
	meanField := func(norm string) Cell {
		return mustCell(NewMeanField(MeanFieldConfig{Hidden: 3, Input: 1, Units: 2, Rows: 2, Lipschitz: Constraint{P: constraintP(norm)}}))
	}
	for _, tc := range []struct {
		cell Cell
		norm string
		want bool
	}{
		{dense("l2", 1), "l2", true},
		{dense("l2", 1), "linf", false},
		{dense("l2", 1), "schatten:4", true},
		{dense("l2", 2), "schatten:2", true},
		{dense("l2", 2), "schatten:4", false},
		{dense("linf", 2), "linf", true},
		{dense("linf", 2), "l2", false},
		{dense("lp:4", 2), "lp:4", true},
		{dense("lp:4", 2), "lp:3", false},
		{meanField("l2"), "schatten:4", true},
		{meanField("l2"), "linf", false},
		{meanField("linf"), "linf", true},
		{meanField("lp:3"), "lp:3", true},
	} {
		sh := tc.cell.Shape()
		n, err := solver.ParseNorm(tc.norm, sh.Rows, sh.Hidden)
		require.NoError(t, err)
		require.Equal(t, tc.want, tc.cell.Proven(n), "%T rows %d constraint vs %s", tc.cell, sh.Rows, tc.norm)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{second(NewDense(DenseConfig{Input: 1})), "DenseConfig.Hidden"},
		{second(NewDense(DenseConfig{Hidden: 1})), "DenseConfig.Input"},
		{second(NewDense(DenseConfig{Hidden: 1, Input: 1, Rows: -1})), "DenseConfig.Rows"},
		{second(NewDense(DenseConfig{Hidden: 1, Input: 1, Activation: 7})), "Activation"},
		{second(NewDense(DenseConfig{Hidden: 1, Input: 1, Lipschitz: Constraint{Gamma: -1}})), "Constraint.Gamma"},
		{second(NewDense(DenseConfig{Hidden: 1, Input: 1, Lipschitz: Constraint{P: 1}})), "Constraint.P"},
		{second(NewDense(DenseConfig{Hidden: 1, Input: 1, Lipschitz: Constraint{P: -2}})), "Constraint.P"},
		{second(NewDense(DenseConfig{Hidden: 1, Input: 1, Lipschitz: Constraint{P: math.NaN()}})), "Constraint.P"},
		{second(NewMeanField(MeanFieldConfig{Hidden: 1, Input: 1, Units: 1, Lipschitz: Constraint{P: math.Inf(-1)}})), "Constraint.P"},
		{second(NewMeanField(MeanFieldConfig{Hidden: 1, Input: 1})), "MeanFieldConfig.Units"},
		{second(NewExperts(ExpertsConfig{Hidden: 1, Experts: 2})), "ExpertsConfig.Input"},
		{second(NewExperts(ExpertsConfig{Hidden: 1, Input: 2})), "ExpertsConfig.Experts"},
	} {
		require.ErrorContains(t, tc.err, tc.want)
	}
	c := mustCell(NewDense(DenseConfig{Hidden: 2, Input: 1}))
	_, err := c.Evaluator(0)
	require.ErrorContains(t, err, "batch size")
	e, err := c.Evaluator(1)
	require.NoError(t, err)
	require.ErrorContains(t, e.EvalExact(make([]float64, 2), make([]float64, 2)), "SetInput")
}

func second[T any](_ T, err error) error { return err }

func TestEvaluatorCacheIsBounded(t *testing.T) {
	c := mustCell(NewDense(DenseConfig{Hidden: 2, Input: 1}))
	first, err := c.Evaluator(1)
	require.NoError(t, err)
	again, err := c.Evaluator(1)
	require.NoError(t, err)
	require.Same(t, first, again)
	for n := 2; n <= MaxCachedBatches+1; n++ {
		_, err := c.Evaluator(n)
		require.NoError(t, err)
	}
	require.Equal(t, MaxCachedBatches, c.evals.Len())
	evicted, err := c.Evaluator(1)
	require.NoError(t, err)
	require.NotSame(t, first, evicted, "the least recently used batch size is evicted")
}

func ExampleDense() {
	cell, err := NewDense(DenseConfig{Hidden: 3, Input: 2, Activation: Tanh, Lipschitz: Constraint{P: math.Inf(1), Gamma: 0.5}, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := cell.Evaluator(2) // a batch of two examples
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := e.SetInput([]float64{1, 0, 0, 1}); err != nil {
		fmt.Println(err)
		return
	}
	// Picard iteration z ← f(z, x) on the batch; the cell is a 0.5-contraction in ℓ∞.
	z := make([]float64, e.Len())
	fz := make([]float64, e.Len())
	for range 60 {
		if err := e.EvalExact(fz, z); err != nil {
			fmt.Println(err)
			return
		}
		z, fz = fz, z
	}
	_ = e.EvalExact(fz, z)
	res := 0.0
	for i := range z {
		res = math.Max(res, math.Abs(fz[i]-z[i]))
	}
	fmt.Printf("bound %.2f, residual below 1e-12: %v\n", cell.Bound(), res < 1e-12)
	// Output:
	// bound 0.50, residual below 1e-12: true
}

func TestEvalDoesNotAllocate(t *testing.T) {
	// Below the sizes at which gonum's matrix multiply goes parallel (and
	// allocates for its goroutines), the forward path allocates nothing.
	for _, tc := range smallCells() {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, _ := setup(t, tc, 7)
			dst := make([]float64, len(z))
			s := solver.Sample{Seed: 3, Size: 2}
			_, err := e.Eval(dst, z, s) // grow the sampler's buffer
			require.NoError(t, err)
			require.Zero(t, testing.AllocsPerRun(10, func() { _, _ = e.Eval(dst, z, s) }))
			require.Zero(t, testing.AllocsPerRun(10, func() { _ = e.EvalExact(dst, z) }))
		})
	}
}
