package bench

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuantileNearestRank(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{[]float64{5, 1, 3, 2, 4}, 0.5, 3},
		{[]float64{5, 1, 3, 2, 4}, 0.9, 5},
		{[]float64{4, 1, 3, 2}, 0.5, 2}, // ⌈0.5·4⌉ = 2nd smallest
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9, 9},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.1, 1},
		{[]float64{inf, 1, inf}, 0.5, inf}, // two of three unreached
		{[]float64{inf, 1, 2}, 0.5, 2},
		{[]float64{7}, 0.9, 7},
	} {
		require.Equal(t, tc.want, quantile(tc.xs, tc.q), "%v q=%v", tc.xs, tc.q)
	}
	require.True(t, math.IsNaN(quantile(nil, 0.5)))
	require.True(t, math.IsNaN(quantile([]float64{1, math.NaN(), 3}, 0.5)))
	// quantile must not reorder its argument.
	xs := []float64{3, 1, 2}
	quantile(xs, 0.5)
	require.Equal(t, []float64{3, 1, 2}, xs)
}

func TestFitSlopeRecoversPowerLaw(t *testing.T) {
	x := []float64{10, 31.6, 100, 316, 1000}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = 7 * math.Pow(v, 2.25)
	}
	s, n := fitSlope(x, y)
	require.Equal(t, 5, n)
	require.InDelta(t, 2.25, s, 1e-12)

	// Unreached (+Inf) and missing points are left out.
	y[1], y[3] = math.Inf(1), math.NaN()
	s, n = fitSlope(x, y)
	require.Equal(t, 3, n)
	require.InDelta(t, 2.25, s, 1e-12)

	s, n = fitSlope(x[:1], y[:1])
	require.Equal(t, 1, n)
	require.True(t, math.IsNaN(s))
}

func TestDeriveSeedDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for a := range uint64(4) {
		for b := range uint64(50) {
			s := deriveSeed(1, a, b)
			require.False(t, seen[s], "seed collision at %d, %d", a, b)
			seen[s] = true
		}
	}
	require.Equal(t, deriveSeed(9, 2, 3), deriveSeed(9, 2, 3))
	require.NotEqual(t, deriveSeed(9, 2, 3), deriveSeed(10, 2, 3))
}
