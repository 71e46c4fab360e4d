package layers

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestDenseFork checks that a fork shares the cell's parameters, builds
// evaluators of its own that compute the same map, and that evaluators
// of the cell and of its fork run concurrently without a data race (go
// test -race), with the row teams of the float32 evaluators at work.
func TestDenseFork(t *testing.T) {
	for _, prec := range []Precision{Float64, Float32} {
		t.Run(prec.String(), func(t *testing.T) {
			const n, h, d = 64, 128, 16 // 64 rows of 128: 2^20 multiply–adds, the row split's threshold
			c, err := NewDense(DenseConfig{Hidden: h, Input: d, Precision: prec, Seed: 1})
			require.NoError(t, err)
			f := c.Fork().(*Dense)
			require.Equal(t, c.Params(), f.Params(), "the fork shares the parameters")
			ec, err := c.Evaluator(n)
			require.NoError(t, err)
			ef, err := f.Evaluator(n)
			require.NoError(t, err)
			require.NotSame(t, ec.(*denseEval), ef.(*denseEval), "the fork has evaluators of its own")
			rc, err := c.ReferenceEvaluator(n)
			require.NoError(t, err)
			rf, err := f.ReferenceEvaluator(n)
			require.NoError(t, err)
			if prec == Float32 {
				require.NotSame(t, rc.(*denseEval), rf.(*denseEval), "and reference evaluators of its own")
			}

			rng := rand.New(rand.NewPCG(2, 3))
			x, z := make([]float64, n*d), make([]float64, n*h)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			for i := range z {
				z[i] = rng.NormFloat64()
			}
			require.NoError(t, ec.SetInput(x))
			require.NoError(t, ef.SetInput(x))
			want := make([]float64, n*h)
			require.NoError(t, ec.EvalExact(want, z))

			got := [2][]float64{make([]float64, n*h), make([]float64, n*h)}
			vjp := [2][]float64{make([]float64, n*h), make([]float64, n*h)}
			var wg sync.WaitGroup
			for i, e := range []Evaluator{ec, ef} {
				wg.Go(func() {
					for range 20 {
						if err := e.EvalExact(got[i], z); err != nil {
							panic(err)
						}
						if _, err := e.VJPHidden(vjp[i], z, want, solver.Sample{}); err != nil {
							panic(err)
						}
					}
				})
			}
			wg.Wait()
			for i := range want {
				// The same products on the same operands; a tolerance
				// leaves the BLAS free to order a sum differently.
				require.InDelta(t, want[i], got[0][i], 1e-12*max(1, math.Abs(want[i])))
				require.InDelta(t, want[i], got[1][i], 1e-12*max(1, math.Abs(want[i])), "the fork evaluates the same map")
				require.InDelta(t, vjp[0][i], vjp[1][i], 1e-12*max(1, math.Abs(vjp[0][i])))
			}
		})
	}
}

// TestSplitVJP: the VJPs of a float32 dense cell's evaluator and of its
// fork's, prepared concurrently and committed in order, give bit for bit
// the parameter gradients and input cotangents of the two VJPs made one
// after the other, for every way of keeping W in check; a float64 cell
// does not split; a VJP between VJPPrepare and VJPCommit drops what the
// prepare kept.
func TestSplitVJP(t *testing.T) {
	const n, h, d = 32, 48, 12
	rng := rand.New(rand.NewPCG(5, 6))
	vec := func(k int) []float64 {
		v := make([]float64, k)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	var x, z, g [2][]float64
	for i := range 2 {
		x[i], z[i], g[i] = vec(n*d), vec(n*h), vec(n*h)
	}
	grads := func(c *Dense) [][]float64 {
		var out [][]float64
		for _, p := range c.Params() {
			out = append(out, append([]float64(nil), p.GradData()...))
		}
		return out
	}
	zero := func(c *Dense) {
		for _, p := range c.Params() {
			clear(p.GradData())
		}
	}
	for _, norm := range []Normalization{Projection, WeightNorm, SpectralNorm} {
		t.Run(norm.String(), func(t *testing.T) {
			c, err := NewDense(DenseConfig{Hidden: h, Input: d, Precision: Float32, Normalization: norm, Seed: 7})
			require.NoError(t, err)
			require.NoError(t, c.Project())
			evs := [2]Evaluator{}
			for i, cell := range []Cell{c, c.Fork()} {
				evs[i], err = cell.Evaluator(n)
				require.NoError(t, err)
				require.NoError(t, evs[i].SetInput(x[i]))
			}
			var dxSeq, dxSplit [2][]float64
			zero(c)
			for i, e := range evs {
				dxSeq[i] = make([]float64, n*d)
				require.NoError(t, e.VJP(nil, dxSeq[i], z[i], g[i]))
			}
			want := grads(c)

			zero(c)
			var wg sync.WaitGroup
			var ok [2]bool
			var errs [2]error
			for i, e := range evs {
				dxSplit[i] = make([]float64, n*d)
				wg.Go(func() { ok[i], errs[i] = e.(SplitVJPer).VJPPrepare(nil, dxSplit[i], z[i], g[i]) })
			}
			wg.Wait()
			for i, e := range evs {
				require.NoError(t, errs[i])
				require.True(t, ok[i])
				e.(SplitVJPer).VJPCommit()
				e.(SplitVJPer).VJPCommit() // a second commit adds nothing
			}
			got := grads(c)
			for k := range want {
				require.Equal(t, bitsOf(want[k]), bitsOf(got[k]), "parameter %d", k)
			}
			for i := range 2 {
				require.Equal(t, bitsOf(dxSeq[i]), bitsOf(dxSplit[i]), "dx of evaluator %d", i)
			}

			// A VJP after VJPPrepare: the commit adds nothing more.
			zero(c)
			s := evs[0].(SplitVJPer)
			_, err = s.VJPPrepare(nil, dxSplit[0], z[1], g[1])
			require.NoError(t, err)
			require.NoError(t, evs[0].VJP(nil, dxSplit[0], z[0], g[0]))
			s.VJPCommit()
			zero2 := grads(c)
			zero(c)
			require.NoError(t, evs[0].VJP(nil, dxSplit[0], z[0], g[0]))
			only := grads(c)
			for k := range only {
				require.Equal(t, bitsOf(only[k]), bitsOf(zero2[k]), "parameter %d", k)
			}
		})
	}
	c, err := NewDense(DenseConfig{Hidden: h, Input: d, Seed: 7})
	require.NoError(t, err)
	e, err := c.Evaluator(n)
	require.NoError(t, err)
	require.NoError(t, e.SetInput(x[0]))
	ok, err := e.(SplitVJPer).VJPPrepare(nil, make([]float64, n*d), z[0], g[0])
	require.NoError(t, err)
	require.False(t, ok, "a float64 cell does not split its VJP")
}

// bitsOf returns the bit patterns of x's values, to compare them exactly.
func bitsOf(x []float64) []uint64 {
	b := make([]uint64, len(x))
	for i, v := range x {
		b[i] = math.Float64bits(v)
	}
	return b
}
