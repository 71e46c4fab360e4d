package layers

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/solver"
)

func TestSampleSizesRoundUpToPowersOfTwo(t *testing.T) {
	// With M = 20 terms, sizes round up to 1, 2, 4, 8, 16 or the exact
	// average (20 samples reported); Eval and VJPHidden (fused and graph)
	// agree on the count, a size and its rounded-up size draw the same
	// terms, and the graph path builds and keeps one hidden graph per
	// rounded size.
	const m = 20
	sizes := []struct{ size, drawn int }{
		{1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {7, 8}, {8, 8}, {9, 16}, {16, 16},
		{17, m}, {20, m}, {25, m},
	}
	for _, tc := range []testCell{
		{"meanfield", mustCell(NewMeanField(MeanFieldConfig{Hidden: 3, Input: 2, Units: m, Activation: Tanh, Seed: 8})), 2},
		{"experts", mustCell(NewExperts(ExpertsConfig{Hidden: 3, Input: m, Experts: m, Activation: Tanh, Seed: 9})), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, g := setup(t, tc, 10)
			exact := make([]float64, len(z))
			require.NoError(t, e.EvalExact(exact, z))
			got := make([]float64, len(z))
			ref := make([]float64, len(z))
			for _, sz := range sizes {
				s := solver.Sample{Seed: 21, Size: sz.size}
				n, err := e.Eval(got, z, s)
				require.NoError(t, err)
				require.Equal(t, sz.drawn, n, "Eval, size %d", sz.size)
				n, err = e.Eval(ref, z, solver.Sample{Seed: 21, Size: sz.drawn})
				require.NoError(t, err)
				require.Equal(t, sz.drawn, n)
				require.Equal(t, ref, got, "size %d draws the terms of size %d", sz.size, sz.drawn)
				if sz.drawn == m {
					require.Equal(t, exact, got, "size %d", sz.size)
				} else {
					require.NotEqual(t, exact, got, "size %d", sz.size)
				}
				n, err = e.VJPHidden(got, z, g, s)
				require.NoError(t, err)
				require.Equal(t, sz.drawn, n, "VJPHidden, size %d", sz.size)
				setGraphPath(e, true)
				n, err = e.VJPHidden(got, z, g, s)
				setGraphPath(e, false)
				require.NoError(t, err)
				require.Equal(t, sz.drawn, n, "graph VJPHidden, size %d", sz.size)
			}
			var keys []int
			collect := func(k int, _ any) { keys = append(keys, k) }
			switch e := e.(type) {
			case *mfEval:
				e.graphs.hidden.Each(func(k int, g *mfGraph) { collect(k, g) })
			case *expEval:
				e.graphs.hidden.Each(func(k int, g *expGraph) { collect(k, g) })
			}
			slices.Sort(keys)
			require.Equal(t, []int{1, 2, 4, 8, 16, m}, keys)
		})
	}
}

func TestExpertsGraphSizeIndependentOfTerms(t *testing.T) {
	// The full graphs of cells with 2 and 64 experts have the same number
	// of nodes, and so have their hidden graphs for 1 to 64 sampled
	// experts.
	var full, hidden []int
	for _, m := range []int{2, 64} {
		c := mustCell(NewExperts(ExpertsConfig{Hidden: 3, Input: 2, Experts: m, Seed: 1}))
		ev, err := c.Evaluator(2)
		require.NoError(t, err)
		e := ev.(*expEval)
		mg, err := e.graph(true, m)
		require.NoError(t, err)
		full = append(full, len(mg.out.Graph().AllNodes()))
		for _, k := range []int{1, 32, m} {
			mg, err := e.graph(false, k)
			require.NoError(t, err)
			hidden = append(hidden, len(mg.out.Graph().AllNodes()))
		}
	}
	require.Equal(t, []int{full[0], full[0]}, full)
	require.Equal(t, slices.Repeat([]int{hidden[0]}, len(hidden)), hidden)
}

func TestExpertsGraphsOnDegenerateShapes(t *testing.T) {
	// The stacked graphs handle one hidden feature, one expert, one input
	// feature and one row (where gorgonia's matrices are 1×1 or vectors):
	// the graph agrees with the gonum path, the exact hidden VJP with the
	// full one, and a one-term sampled VJP with finite differences.
	for _, h := range []int{1, 2} {
		for _, m := range []int{1, 3} {
			for _, d := range []int{1, 2} {
				for _, n := range []int{1, 2} {
					tc := testCell{fmt.Sprintf("h%d-m%d-d%d-n%d", h, m, d, n), mustCell(NewExperts(ExpertsConfig{Hidden: h, Input: d, Experts: m, Activation: Tanh, Seed: 3})), n}
					t.Run(tc.name, func(t *testing.T) {
						e, _, z, g := setup(t, tc, 1)
						a := make([]float64, len(z))
						b := make([]float64, len(z))
						require.NoError(t, e.EvalExact(a, z))
						require.NoError(t, e.(GraphEvaluator).EvalGraph(b, z))
						require.InDeltaSlice(t, a, b, 1e-12)
						require.NoError(t, e.VJP(a, nil, z, g))
						_, err := e.VJPHidden(b, z, g, solver.Sample{Size: m})
						require.NoError(t, err)
						require.InDeltaSlice(t, a, b, 1e-12)
						ZeroGrads(tc.cell.Params())
						s := solver.Sample{Seed: 3, Size: 1}
						f := make([]float64, len(z))
						want := fdGrad(func(v []float64) float64 {
							_, err := e.Eval(f, v, s)
							require.NoError(t, err)
							return dot(g, f)
						}, z)
						_, err = e.VJPHidden(b, z, g, s)
						require.NoError(t, err)
						require.InDeltaSlice(t, want, b, 1e-6)
					})
				}
			}
		}
	}
}

// TestMeanFieldTermCounts checks the accounting of term evaluations: a
// Sample of size m uses the next power of two below M and reports it, a
// size of M or more the exact average and reports M, and the injection
// xU + b is part of every evaluation, sampled or exact.
func TestMeanFieldTermCounts(t *testing.T) {
	for _, tc := range []testCell{
		{"meanfield", mustCell(NewMeanField(MeanFieldConfig{Hidden: 4, Input: 3, Units: 20, Activation: Tanh, Seed: 1})), 3},
		{"experts", mustCell(NewExperts(ExpertsConfig{Hidden: 4, Input: 3, Experts: 20, Activation: Tanh, Seed: 1})), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, _ := setup(t, tc, 4)
			require.Equal(t, 20, e.Terms())
			fs, ok := e.(solver.FiniteSum)
			require.True(t, ok, "the evaluator must declare its finite sum")
			require.Equal(t, 20, fs.Terms())
			dst := make([]float64, e.Len())
			for _, c := range []struct{ size, want int }{{1, 1}, {2, 2}, {3, 4}, {9, 16}, {16, 16}, {17, 20}, {20, 20}, {1000, 20}} {
				k, err := e.Eval(dst, z, solver.Sample{Seed: 7, Size: c.size})
				require.NoError(t, err)
				require.Equal(t, c.want, k, "Sample.Size %d", c.size)
			}
			// With a zero recurrent part, f is the injection whatever the
			// sample.
			zero := make([]float64, e.Len())
			exact := make([]float64, e.Len())
			require.NoError(t, e.EvalExact(exact, zero))
			_, err := e.Eval(dst, zero, solver.Sample{Seed: 1, Size: 1})
			require.NoError(t, err)
			require.Greater(t, floats.Norm(exact, 2), 0.0)
		})
	}
}

// TestTermVarianceExact compares the exact single-term variance with its
// definition, (1/M) Σ_m ‖τ(z; m) − f̄(z)‖², computed from one-term samples
// that enumerate the terms.
func TestTermVarianceExact(t *testing.T) {
	for _, tc := range []testCell{
		{"meanfield", mustCell(NewMeanField(MeanFieldConfig{Hidden: 4, Input: 3, Units: 6, Rows: 2, Activation: Tanh, Seed: 2})), 3},
		{"experts", mustCell(NewExperts(ExpertsConfig{Hidden: 3, Input: 2, Experts: 5, Seed: 3})), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, _ := setup(t, tc, 5)
			mean := make([]float64, e.Len())
			require.NoError(t, e.EvalExact(mean, z))
			// Find, for every term, a seed whose one-term sample draws it.
			one := make([]float64, e.Len())
			seen := map[int][]float64{}
			base := e.(interface{ base() *evalBase }).base()
			for seed := uint64(0); len(seen) < e.Terms(); seed++ {
				idx, err := base.sp.draw(solver.Sample{Seed: seed, Size: 1}, e.Terms())
				require.NoError(t, err)
				if _, ok := seen[idx[0]]; ok {
					continue
				}
				_, err = e.Eval(one, z, solver.Sample{Seed: seed, Size: 1})
				require.NoError(t, err)
				seen[idx[0]] = slices.Clone(one)
				require.Less(t, seed, uint64(10000))
			}
			want := 0.0
			for _, v := range seen {
				for i := range v {
					d := v[i] - mean[i]
					want += d * d
				}
			}
			want /= float64(e.Terms())
			got, err := e.(TermVariancer).TermVariance(z)
			require.NoError(t, err)
			require.InDelta(t, want, got, 1e-10*want)
			rel, err := TermRelVar(e, z, 0, 0)
			require.NoError(t, err)
			require.InDelta(t, want/(floats.Norm(z, 2)*floats.Norm(z, 2)), rel, 1e-10*rel)
		})
	}
}

// TestTermRelVarMonteCarlo checks the sampled estimate of TermRelVar (used
// for evaluators without an exact variance) against the exact one.
func TestTermRelVarMonteCarlo(t *testing.T) {
	mf := testCell{"meanfield", mustCell(NewMeanField(MeanFieldConfig{Hidden: 4, Input: 3, Units: 6, Activation: Tanh, Seed: 2})), 3}
	em, _, zm, _ := setup(t, mf, 6)
	exact, err := TermRelVar(em, zm, 0, 0)
	require.NoError(t, err)
	est, err := TermRelVar(struct{ Evaluator }{em}, zm, 40000, 9)
	require.NoError(t, err)
	require.InEpsilon(t, exact, est, 0.05)
	d, err := NewDense(DenseConfig{Hidden: 4, Input: 3})
	require.NoError(t, err)
	de, _, dz, _ := setup(t, testCell{"dense", d, 2}, 1)
	v, err := TermRelVar(de, dz, 10, 1)
	require.NoError(t, err)
	require.Zero(t, v)
}
