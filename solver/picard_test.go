package solver

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPicardScalarContraction(t *testing.T) {
	// T(x) = x/2 + 1 has fixed point 2.
	o := Func{N: 1, F: func(dst, x []float64) { dst[0] = x[0]/2 + 1 }}
	n, err := NewLP(2, 1)
	require.NoError(t, err)
	res, err := Solve(context.Background(), Problem{Oracle: o, Norm: n}, []float64{0}, &Settings{Tol: 1e-12}, Picard{})
	require.NoError(t, err)
	require.Equal(t, Success, res.Status)
	require.InDelta(t, 2, res.X[0], 1e-11)
	require.Equal(t, RuleExact, res.Certificate.Rule)
	require.LessOrEqual(t, res.Certificate.Bound, 1e-12)
	require.Equal(t, res.Stats.Iterations+1, int(res.Stats.Calls))
	require.False(t, math.IsNaN(res.Residual))
}

// TestPicardIsKMAlphaOne: Picard is KrasnoselskiiMann with α = 1, iterate
// for iterate, under its own name.
func TestPicardIsKMAlphaOne(t *testing.T) {
	p := newAffineL2(t, 7, 5, 0.9)
	prob := Problem{Oracle: p.oracle(), Norm: p.norm}
	x0 := []float64{1, -2, 3, -4, 5}
	a, err := Solve(context.Background(), prob, x0, &Settings{Tol: 1e-12}, Picard{})
	require.NoError(t, err)
	b, err := Solve(context.Background(), prob, x0, &Settings{Tol: 1e-12}, KrasnoselskiiMann{Alpha: 1})
	require.NoError(t, err)
	require.Equal(t, a.X, b.X)
	require.Equal(t, len(a.Stats.Trace), len(b.Stats.Trace))
	for i := range a.Stats.Trace {
		require.Equal(t, a.Stats.Trace[i].Residual, b.Stats.Trace[i].Residual)
	}
	require.Equal(t, "picard", Picard{}.String())
}
