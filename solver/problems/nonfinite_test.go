package problems

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestSolveAffineNonFinite: a NaN or ±Inf in A or b is refused before the
// LU factorisation with an error wrapping solver.ErrNonFinite.
func TestSolveAffineNonFinite(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		a := []float64{0.1, 0, 0, 0.2}
		b := []float64{1, 2}
		a[2] = v
		_, err := solveAffine(a, b, 2)
		require.ErrorIs(t, err, solver.ErrNonFinite)
		require.ErrorContains(t, err, "A[2]")
		a[2] = 0
		b[1] = v
		_, err = solveAffine(a, b, 2)
		require.ErrorIs(t, err, solver.ErrNonFinite)
		require.ErrorContains(t, err, "b[1]")
	}
}
