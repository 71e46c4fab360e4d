package solver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBroydenSecantTerminates checks that on a scalar affine map Broyden is
// the secant method, which lands on the root of g(x) = T(x) − x in two steps
// (exactly, in this arithmetic, for T(x) = 2x + 1 from 0: x = 0, 1, −1).
func TestBroydenSecantTerminates(t *testing.T) {
	o := Func{N: 1, F: func(dst, x []float64) { dst[0] = 2*x[0] + 1 }}
	norm, err := NewLP(2, 1)
	require.NoError(t, err)
	res, err := Solve(context.Background(), Problem{Oracle: o, Norm: norm}, []float64{0}, &Settings{Tol: 1e-15}, Broyden{})
	require.NoError(t, err)
	require.Equal(t, Success, res.Status)
	require.Equal(t, 2, res.Stats.Iterations)
	require.Equal(t, []float64{-1}, res.X)
	require.Zero(t, res.Residual)
}

// TestBroydenProtect runs Broyden on g(x) = −(x + x⁵) from 1.2, where the first
// (Picard) step lands at −2.488 with residual 98 > Protect·3.69: the method
// restarts from the start point, takes the same step again, and must then
// stop with Diverged, returning the start point.
func TestBroydenProtect(t *testing.T) {
	o := Func{N: 1, F: func(dst, x []float64) {
		v := x[0]
		dst[0] = v - (v + v*v*v*v*v)
	}}
	norm, err := NewLP(2, 1)
	require.NoError(t, err)
	res, err := Solve(context.Background(), Problem{Oracle: o, Norm: norm}, []float64{1.2}, &Settings{Tol: 1e-10}, Broyden{Protect: 10})
	require.NoError(t, err)
	require.Equal(t, Diverged, res.Status)
	require.Equal(t, 2, res.Stats.Iterations)
	require.Equal(t, []float64{1.2}, res.X)
	checkBest(t, res)
	// With the default Protect the large residual is tolerated and Broyden
	// solves the problem.
	res, err = Solve(context.Background(), Problem{Oracle: o, Norm: norm}, []float64{1.2}, &Settings{Tol: 1e-10}, Broyden{})
	require.NoError(t, err)
	require.Equal(t, Success, res.Status)
	require.InDelta(t, 0, res.X[0], 1e-10)
}

// TestBroydenPatience checks the stall break on the translation x ↦ x + 1,
// whose residual never changes: Broyden skips every update (Δg = 0) and stops
// with Stagnated after Patience iterations.
func TestBroydenPatience(t *testing.T) {
	o := Func{N: 2, F: func(dst, x []float64) { dst[0], dst[1] = x[0]+1, x[1]+1 }}
	norm, err := NewLP(2, 2)
	require.NoError(t, err)
	res, err := Solve(context.Background(), Problem{Oracle: o, Norm: norm}, []float64{0, 0}, nil, Broyden{Patience: 7})
	require.NoError(t, err)
	require.Equal(t, Stagnated, res.Status)
	require.Equal(t, 7, res.Stats.Iterations)
	require.Equal(t, []float64{0, 0}, res.X)
}

// TestBroydenSmallMemory runs Broyden with rings of 1, 2 and 5 pairs, each
// overwritten many times over, on an ℓ2 contraction. No theory covers the
// overwritten ring (nor the full-memory method on this problem beyond local
// superlinear convergence); the test pins down that the ring bookkeeping keeps
// the method converging to the tolerance.
func TestBroydenSmallMemory(t *testing.T) {
	p := newAffineL2(t, 43, 30, 0.9)
	for _, mem := range []int{1, 2, 5} {
		res, err := Solve(context.Background(), Problem{Oracle: p.oracle(), Norm: p.norm}, make([]float64, 30), &Settings{Tol: 1e-10, MaxIter: 5000}, Broyden{Memory: mem})
		require.NoError(t, err)
		require.Equal(t, Success, res.Status, "memory %d: residual %g after %d iterations", mem, res.Residual, res.Stats.Iterations)
		t.Logf("memory %d: %d iterations", mem, res.Stats.Iterations)
	}
}
