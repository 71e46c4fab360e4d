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
