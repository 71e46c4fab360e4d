package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/solver"
)

// The fused gonum VJPs of the built-in cells against their gorgonia graphs.

// setGraphPath makes an evaluator of a built-in cell compute VJPHidden and
// VJP with its gorgonia graphs (on) or its fused gonum code (off, the
// default).
func setGraphPath(e Evaluator, on bool) {
	e.(interface{ base() *evalBase }).base().useGraph = on
}

// requireClose requires ‖got − want‖∞ ≤ tol·max(‖want‖∞, ‖got‖∞).
func requireClose(t *testing.T, want, got []float64, tol float64, msg string, args ...any) {
	t.Helper()
	require.Len(t, got, len(want))
	scale := math.Max(floats.Norm(want, math.Inf(1)), floats.Norm(got, math.Inf(1)))
	d := 0.0
	for i := range want {
		d = math.Max(d, math.Abs(got[i]-want[i]))
	}
	require.False(t, math.IsNaN(d), fmt.Sprintf(msg, args...))
	require.LessOrEqual(t, d, tol*scale, fmt.Sprintf("%s: ‖Δ‖∞ = %g, scale %g", fmt.Sprintf(msg, args...), d, scale))
}

// fusedCells returns cells of every kind with both activations, vector and
// matrix states, for the batch sizes in ns.
func fusedCells() []testCell {
	var out []testCell
	for _, act := range []Activation{ReLU, Tanh} {
		for _, rows := range []int{1, 3} {
			for _, n := range []int{1, 4, 7} {
				seed := uint64(10*rows + n)
				name := func(kind string) string { return fmt.Sprintf("%s-%v-rows%d-n%d", kind, act, rows, n) }
				out = append(out,
					testCell{name("dense"), mustCell(NewDense(DenseConfig{Hidden: 6, Input: 4, Rows: rows, Activation: act, Seed: seed})), n},
					testCell{name("meanfield"), mustCell(NewMeanField(MeanFieldConfig{Hidden: 5, Input: 3, Units: 11, Rows: rows, Activation: act, Seed: seed})), n},
					testCell{name("experts"), mustCell(NewExperts(ExpertsConfig{Hidden: 4, Input: 15, Experts: 5, Rows: rows, Activation: act, Seed: seed})), n},
				)
			}
		}
	}
	return out
}

// vjpResult is everything VJP computes: dz, dx and the parameter
// gradients (added to zero gradients).
type vjpResult struct {
	dz, dx []float64
	grads  [][]float64
}

func runVJP(t *testing.T, tc testCell, e Evaluator, z, g []float64, graph bool) vjpResult {
	t.Helper()
	setGraphPath(e, graph)
	defer setGraphPath(e, false)
	ps := tc.cell.Params()
	ZeroGrads(ps)
	r := vjpResult{dz: make([]float64, len(z)), dx: make([]float64, e.Examples()*tc.cell.Shape().InputLen())}
	require.NoError(t, e.VJP(r.dz, r.dx, z, g))
	for _, p := range ps {
		r.grads = append(r.grads, slices.Clone(p.GradData()))
	}
	ZeroGrads(ps)
	return r
}

func runHidden(t *testing.T, e Evaluator, z, g []float64, s solver.Sample, graph bool) ([]float64, int) {
	t.Helper()
	setGraphPath(e, graph)
	defer setGraphPath(e, false)
	dst := make([]float64, len(z))
	k, err := e.VJPHidden(dst, z, g, s)
	require.NoError(t, err)
	return dst, k
}

// checkFusedMatchesGraph compares every fused VJP of e at (z, g) with the
// graph's: the exact VJP's dz, dx and parameter gradients, and VJPHidden
// for sampled and exact sizes.
func checkFusedMatchesGraph(t *testing.T, tc testCell, e Evaluator, z, g []float64) {
	t.Helper()
	const tol = 1e-10
	want := runVJP(t, tc, e, z, g, true)
	got := runVJP(t, tc, e, z, g, false)
	requireClose(t, want.dz, got.dz, tol, "VJP dz")
	requireClose(t, want.dx, got.dx, tol, "VJP dx")
	require.Greater(t, floats.Norm(want.dz, math.Inf(1)), 0.0, "dz must not be trivially zero")
	for i, p := range tc.cell.Params() {
		requireClose(t, want.grads[i], got.grads[i], tol, "VJP ∂%s", p.Name())
		require.Greater(t, floats.Norm(want.grads[i], math.Inf(1)), 0.0, "∂%s must not be trivially zero", p.Name())
	}
	for _, size := range []int{1, 2, 3, e.Terms(), e.Terms() + 5} {
		for _, seed := range []uint64{1, 2} {
			s := solver.Sample{Seed: seed, Size: size}
			w, kw := runHidden(t, e, z, g, s, true)
			f, kf := runHidden(t, e, z, g, s, false)
			require.Equal(t, kw, kf, "size %d", size)
			requireClose(t, w, f, tol, "VJPHidden size %d seed %d", size, seed)
		}
	}
}

func TestFusedVJPMatchesGraph(t *testing.T) {
	for _, tc := range fusedCells() {
		t.Run(tc.name, func(t *testing.T) {
			e, x, z, g := setup(t, tc, 21)
			checkFusedMatchesGraph(t, tc, e, z, g)

			// The fused Dense path keeps σ′ between calls at the same
			// point: changing W in place, the input (through SetInput) or z
			// must each be seen.
			rng := rand.New(rand.NewPCG(5, 5))
			for _, p := range tc.cell.Params() {
				if p.Name() == "W" {
					for i := range p.Data() {
						p.Data()[i] *= 1 + 0.2*rng.NormFloat64()
					}
				}
			}
			checkFusedMatchesGraph(t, tc, e, z, g)
			for i := range x {
				x[i] += rng.NormFloat64()
			}
			require.NoError(t, e.SetInput(x))
			checkFusedMatchesGraph(t, tc, e, z, g)
			z[0] += 0.5
			checkFusedMatchesGraph(t, tc, e, z, g)
		})
	}
}

func TestFusedVJPDoesNotAllocate(t *testing.T) {
	// After the first call for a batch size, the fused VJPs allocate
	// nothing. The cells are small enough that gonum's matrix multiply stays
	// serial; the medium ones have 64×64 outputs, below its parallel
	// threshold of four 64×64 blocks.
	cells := append(smallCells(),
		testCell{"dense-medium", mustCell(NewDense(DenseConfig{Hidden: 64, Input: 32, Activation: Tanh, Seed: 1})), 64},
		testCell{"meanfield-medium", mustCell(NewMeanField(MeanFieldConfig{Hidden: 64, Input: 32, Units: 64, Seed: 1})), 64},
		testCell{"experts-medium", mustCell(NewExperts(ExpertsConfig{Hidden: 16, Input: 32, Experts: 64, Seed: 1})), 64},
	)
	for _, tc := range cells {
		t.Run(tc.name, func(t *testing.T) {
			e, x, z, g := setup(t, tc, 7)
			dz := make([]float64, len(z))
			dx := make([]float64, len(x))
			z2 := slices.Clone(z)
			z2[0]++
			for _, s := range []solver.Sample{{Seed: 3, Size: 2}, {Seed: 4, Size: e.Terms()}} {
				_, err := e.VJPHidden(dz, z, g, s) // first call: allocate the scratch
				require.NoError(t, err)
				require.Zero(t, testing.AllocsPerRun(10, func() { _, _ = e.VJPHidden(dz, z, g, s) }), "VJPHidden size %d", s.Size)
				f := make([]float64, len(z))
				_, err = e.Eval(f, z, s)
				require.NoError(t, err)
				require.Zero(t, testing.AllocsPerRun(10, func() { _, _ = e.Eval(f, z, s) }), "Eval size %d", s.Size)
				// At alternating points (no reuse of the last derivative).
				require.Zero(t, testing.AllocsPerRun(10, func() {
					_, _ = e.VJPHidden(dz, z, g, s)
					_, _ = e.VJPHidden(dz, z2, g, s)
				}), "VJPHidden size %d at two points", s.Size)
			}
			require.NoError(t, e.VJP(dz, dx, z, g))
			require.Zero(t, testing.AllocsPerRun(10, func() { _ = e.VJP(dz, dx, z2, g) }), "VJP")
			require.Zero(t, testing.AllocsPerRun(10, func() { _ = e.VJP(nil, nil, z, g) }), "VJP without dz, dx")
			ZeroGrads(tc.cell.Params())
		})
	}
}
