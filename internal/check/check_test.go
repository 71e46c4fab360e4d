package check

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNotNegative(t *testing.T) {
	require.NoError(t, NotNegative("p: S.N", 0))
	require.NoError(t, NotNegative("p: S.N", 3))
	require.EqualError(t, NotNegative("p: S.N", -2), "p: S.N = -2 must not be negative")
	require.EqualError(t, NotNegative("p: S.T", -time.Second), "p: S.T = -1s must not be negative")
	require.EqualError(t, NotNegative("p: S.X", -0.5), "p: S.X = -0.5 must not be negative")
}

func TestPositiveFinite(t *testing.T) {
	require.NoError(t, PositiveFinite("p: S.Tol", 0))
	require.NoError(t, PositiveFinite("p: S.Tol", 1e-9))
	for _, c := range []struct {
		v    float64
		text string
	}{{-1, "-1"}, {math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}} {
		require.EqualError(t, PositiveFinite("p: S.Tol", c.v), "p: S.Tol = "+c.text+" must be positive and finite")
	}
}
