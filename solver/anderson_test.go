package solver

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// TestAndersonBorderedSolve compares the weights of the bordered normal
// equations with the closed form of the ridge-regularised constrained least
// squares, α = (H + μI)⁻¹1 / 1ᵀ(H + μI)⁻¹1 with μ = Ridge·tr(H)/c, computed
// with gonum, on full-rank and rank-deficient residual histories.
func TestAndersonBorderedSolve(t *testing.T) {
	const memory, n = 6, 40
	rng := rand.New(rand.NewPCG(41, 0))
	for _, c := range []struct {
		name  string
		cols  int
		rank  int
		ridge float64
	}{
		{"full", 6, 6, 1e-4},
		{"partial-memory", 3, 3, 1e-4},
		{"rank-1", 5, 1, 1e-4},
		{"rank-3", 6, 3, 1e-8},
		{"large-ridge", 4, 4, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := randDense(rng, n, c.rank)
			mix := randDense(rng, c.rank, c.cols)
			var g mat.Dense
			g.Mul(base, mix) // n×cols residual history of rank c.rank
			gram := make([]float64, memory*memory)
			var h mat.Dense
			h.Mul(g.T(), &g)
			for i := 0; i < c.cols; i++ {
				for j := 0; j < c.cols; j++ {
					gram[i*memory+j] = h.At(i, j)
				}
			}
			ls := newBordered(new(Workspace), memory)
			require.True(t, ls.solve(gram, memory, c.cols, c.ridge))

			mu := c.ridge * mat.Trace(&h) / float64(c.cols)
			reg := mat.DenseCopyOf(&h)
			for i := 0; i < c.cols; i++ {
				reg.Set(i, i, reg.At(i, i)+mu)
			}
			ones := mat.NewVecDense(c.cols, nil)
			for i := 0; i < c.cols; i++ {
				ones.SetVec(i, 1)
			}
			var w mat.VecDense
			require.NoError(t, w.SolveVec(reg, ones))
			want := make([]float64, c.cols)
			sum := mat.Sum(&w)
			for i := range want {
				want[i] = w.AtVec(i) / sum
			}
			// Both solutions carry rounding errors of order κ·ε, where
			// κ ≤ 1 + c/Ridge bounds the condition number of the scaled
			// system H/(tr H/c) + Ridge·I.
			tol := 100 * (1 + float64(c.cols)/c.ridge) * epsRound
			total := 0.0
			for i, a := range ls.alpha[:c.cols] {
				require.InDelta(t, want[i], a, tol*(1+math.Abs(want[i])), "weight %d", i)
				total += a
			}
			require.InDelta(t, 1, total, 1e-12)
		})
	}
}

// TestAndersonBorderedSolveFails checks that a Gram matrix that is zero or
// not finite makes the solve report failure rather than weights.
func TestAndersonBorderedSolveFails(t *testing.T) {
	ls := newBordered(new(Workspace), 3)
	require.False(t, ls.solve(make([]float64, 9), 3, 2, 1e-4))
	gram := []float64{math.Inf(1), 1, 0, 1, 1, 0, 0, 0, 0}
	require.False(t, ls.solve(gram, 3, 2, 1e-4))
	gram[0] = math.NaN()
	require.False(t, ls.solve(gram, 3, 2, 1e-4))
}

// TestAndersonMemoryOneIsMixing checks that with a single stored iterate
// Anderson is the mixing iteration x ← x + β(T(x) − x), which is
// Krasnoselskii–Mann with α = β.
func TestAndersonMemoryOneIsMixing(t *testing.T) {
	p := newAffineL2(t, 42, 8, 0.9)
	x0 := make([]float64, 8)
	prob := Problem{Oracle: p.oracle(), Norm: p.norm}
	s := &Settings{Tol: 1e-10}
	km, err := Solve(context.Background(), prob, x0, s, KrasnoselskiiMann{Alpha: 0.5})
	require.NoError(t, err)
	aa, err := Solve(context.Background(), prob, x0, s, Anderson{Memory: 1, Mixing: 0.5})
	require.NoError(t, err)
	require.Equal(t, Success, aa.Status)
	require.Equal(t, len(km.Stats.Trace), len(aa.Stats.Trace))
	for i := range km.Stats.Trace {
		require.InDelta(t, km.Stats.Trace[i].Residual, aa.Stats.Trace[i].Residual, 1e-14, "iteration %d", i)
	}
}

// TestAndersonOverflowFallsBack runs Anderson on T(x) = x/2 + 1e160, whose
// residuals near the start are so large that their Gram matrix overflows to
// +Inf: every small system is rejected and each step falls back to the mixing
// step, which for Mixing = 1 is Picard's, so the trace must be Picard's until
// the residuals are small enough for the Gram matrix to be finite.
func TestAndersonOverflowFallsBack(t *testing.T) {
	const n = 4
	o := Func{N: n, F: func(dst, x []float64) {
		for i, v := range x {
			dst[i] = v/2 + 1e160
		}
	}}
	norm, err := NewLP(2, n)
	require.NoError(t, err)
	s := &Settings{Tol: 1e-12, Relative: true}
	prob := Problem{Oracle: o, Norm: norm}
	x0 := make([]float64, n)
	pic, err := Solve(context.Background(), prob, x0, s, Picard{})
	require.NoError(t, err)
	aa, err := Solve(context.Background(), prob, x0, s, Anderson{})
	require.NoError(t, err)
	require.Equal(t, Success, aa.Status)
	checkBest(t, aa)
	overflowing := 0
	for i, p := range pic.Stats.Trace {
		if p.Residual*p.Residual/n < math.MaxFloat64/4 { // the Gram matrix of the first i+1 residuals is finite from here on
			break
		}
		require.Equal(t, p.Residual, aa.Stats.Trace[i].Residual, "iteration %d", i)
		overflowing++
	}
	require.Greater(t, overflowing, 2)
	require.InDeltaSlice(t, []float64{2e160, 2e160, 2e160, 2e160}, aa.X, 1e-10*2e160)
}

// TestAndersonDotsFixedBlocks: the Gram row of Anderson's residual pass is,
// bit for bit, the sum in block order of the inner products over blocks of
// parBlock entries (dotsStrided, the kernels of the pass), for every
// number of workers, and within rounding of floats.Dot. The residual is
// f − x exactly.
func TestAndersonDotsFixedBlocks(t *testing.T) {
	const memory = 4
	for _, n := range parLens {
		rng := rand.New(rand.NewPCG(uint64(n), 9))
		fs, gs, x := randVec(rng, memory*n), randVec(rng, memory*n), randVec(rng, n)
		const head, count = 2, memory
		g := make([]float64, n)
		subInto(g, fs[head*n:(head+1)*n], x)
		slots := make([][]float64, count)
		for j := range slots {
			slots[j] = gs[j*n : (j+1)*n]
		}
		slots[head] = g
		want, part := make([]float64, count), make([]float64, count)
		for lo := 0; lo < n; lo += parBlock {
			hi := min(lo+parBlock, n)
			dotsStrided(part, 1, slots, lo, hi, g[lo:hi])
			for j := range count {
				if lo == 0 {
					want[j] = part[j]
				} else {
					want[j] += part[j]
				}
			}
		}
		for j := range count {
			require.InDelta(t, floats.Dot(g, slots[j]), want[j], 1e-12*floats.Norm(g, 2)*floats.Norm(slots[j], 2), "n = %d", n)
		}
		for _, workers := range []int{1, 2, 3, 5} {
			gsw := append([]float64(nil), gs...)
			dots, _ := newAndersonPasses(fs, gsw, x, memory, 1, make([]float64, memory*blocks(n)))
			gram := make([]float64, memory*memory)
			dots.residual(&parallel{workers: workers}, head, count, gram, memory)
			require.Equal(t, bitsOf(g), bitsOf(gsw[head*n:(head+1)*n]), "n = %d, %d workers: residual", n, workers)
			for j := range count {
				require.Equal(t, math.Float64bits(want[j]), math.Float64bits(gram[head*memory+j]), "n = %d, %d workers: row, slot %d", n, workers, j)
				require.Equal(t, math.Float64bits(want[j]), math.Float64bits(gram[j*memory+head]), "n = %d, %d workers: column, slot %d", n, workers, j)
			}
		}
	}
}
