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

// meanFieldCells returns MeanField and Experts cells with both
// activations, vector and matrix states, for several batch sizes.
func meanFieldCells() []testCell {
	var out []testCell
	for _, act := range []Activation{ReLU, Tanh} {
		for _, rows := range []int{1, 3} {
			for _, n := range []int{1, 4} {
				seed := uint64(10*rows + n)
				name := func(kind string) string { return fmt.Sprintf("%s-%v-rows%d-n%d", kind, act, rows, n) }
				out = append(out,
					testCell{name("meanfield"), mustCell(NewMeanField(MeanFieldConfig{Hidden: 5, Input: 3, Units: 11, Rows: rows, Activation: act, Seed: seed})), n},
					testCell{name("experts"), mustCell(NewExperts(ExpertsConfig{Hidden: 4, Input: 3, Experts: 5, Rows: rows, Activation: act, Seed: seed})), n},
				)
			}
		}
	}
	return out
}

func TestMeanFieldGraphAndFusedAgree(t *testing.T) {
	for _, tc := range meanFieldCells() {
		t.Run(tc.name, func(t *testing.T) {
			e, _, z, g := setup(t, tc, 3)
			a := make([]float64, e.Len())
			b := make([]float64, e.Len())
			require.NoError(t, e.EvalExact(a, z))
			require.NoError(t, e.EvalGraph(b, z))
			requireClose(t, b, a, 1e-12, "EvalGraph against EvalExact")
			checkFusedMatchesGraph(t, tc, e, z, g)
		})
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
	tc := testCell{"meanfield", mustCell(NewMeanField(MeanFieldConfig{Hidden: 4, Input: 3, Units: 6, Activation: Tanh, Seed: 2})), 3}
	e, _, z, _ := setup(t, tc, 6)
	mf := testCell{"meanfield", mustCell(NewMeanField(MeanFieldConfig{Hidden: 4, Input: 3, Units: 6, Activation: Tanh, Seed: 2})), 3}
	em, _, zm, _ := setup(t, mf, 6)
	exact, err := TermRelVar(em, zm, 0, 0)
	require.NoError(t, err)
	est, err := TermRelVar(struct{ Evaluator }{em}, zm, 40000, 9)
	require.NoError(t, err)
	require.InEpsilon(t, exact, est, 0.05)
	w, err := TermRelVar(e, z, 2000, 1)
	require.NoError(t, err)
	require.Greater(t, w, 0.0)
	d, err := NewDense(DenseConfig{Hidden: 4, Input: 3})
	require.NoError(t, err)
	de, _, dz, _ := setup(t, testCell{"dense", d, 2}, 1)
	v, err := TermRelVar(de, dz, 10, 1)
	require.NoError(t, err)
	require.Zero(t, v)
}

// TestMeanFieldProject checks that Project enforces the mean-square bound
// (MeanField) and the per-expert bound (Experts) after the weights grow.
func TestMeanFieldProject(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []float64{2, 4, math.Inf(1)} {
		mf := mustCell(NewMeanField(MeanFieldConfig{Hidden: 5, Input: 2, Units: 9, Lipschitz: Constraint{P: p, Gamma: 0.7}, Seed: 1}))
		require.LessOrEqual(t, mf.Lipschitz(), 0.7*(1+1e-12))
		for _, q := range mf.Params() {
			for i := range q.Data() {
				q.Data()[i] *= 1 + 3*rng.Float64()
			}
		}
		require.NoError(t, mf.Project())
		require.LessOrEqual(t, mf.Lipschitz(), 0.7*(1+1e-12), "p = %v", p)
		ex := mustCell(NewExperts(ExpertsConfig{Hidden: 5, Input: 2, Experts: 4, Lipschitz: Constraint{P: p, Gamma: 0.6}, Seed: 1}))
		for i := range ex.w.Data() {
			ex.w.Data()[i] *= 1 + 3*rng.Float64()
		}
		require.NoError(t, ex.Project())
		require.LessOrEqual(t, ex.Bound(), 0.6*(1+1e-9), "p = %v", p)
	}
	mf := mustCell(NewMeanField(MeanFieldConfig{Hidden: 2, Input: 2, Units: 3}))
	mf.v.Data()[0] = math.NaN()
	require.Error(t, mf.Project())
}

func TestMeanFieldConfigErrors(t *testing.T) {
	_, err := NewMeanField(MeanFieldConfig{Hidden: 2, Input: 2})
	require.ErrorContains(t, err, "Units")
	_, err = NewExperts(ExpertsConfig{Hidden: 2, Input: 2})
	require.ErrorContains(t, err, "Experts")
	_, err = NewExperts(ExpertsConfig{Hidden: 2, Experts: 2})
	require.ErrorContains(t, err, "Input")
}

func TestMeanFieldFusedDoesNotAllocate(t *testing.T) {
	for _, tc := range []testCell{
		{"meanfield", mustCell(NewMeanField(MeanFieldConfig{Hidden: 16, Input: 8, Units: 64, Activation: Tanh, Seed: 1})), 8},
		{"experts", mustCell(NewExperts(ExpertsConfig{Hidden: 16, Input: 8, Experts: 32, Activation: Tanh, Seed: 1})), 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, x, z, g := setup(t, tc, 7)
			dz := make([]float64, len(z))
			dx := make([]float64, len(x))
			f := make([]float64, len(z))
			for _, s := range []solver.Sample{{Seed: 3, Size: 4}, {Seed: 4, Size: e.Terms()}} {
				_, err := e.VJPHidden(dz, z, g, s)
				require.NoError(t, err)
				require.Zero(t, testing.AllocsPerRun(10, func() { _, _ = e.VJPHidden(dz, z, g, s) }), "VJPHidden size %d", s.Size)
				require.Zero(t, testing.AllocsPerRun(10, func() { _, _ = e.Eval(f, z, s) }), "Eval size %d", s.Size)
			}
			require.NoError(t, e.VJP(dz, dx, z, g))
			require.Zero(t, testing.AllocsPerRun(10, func() { _ = e.VJP(dz, dx, z, g) }), "VJP")
			ZeroGrads(tc.cell.Params())
		})
	}
}
