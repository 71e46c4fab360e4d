package solver

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClipDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, norm := range []Norm{mustLP(2, 4), mustLP(3, 4), mustLP(math.Inf(1), 4)} {
		for trial := range 500 {
			delta := make([]float64, 4)
			for i := range delta {
				delta[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3))
			}
			nd := norm.Norm(delta)
			radius := nd * 2 * rng.Float64() // clipped about half the time
			dst := make([]float64, 4)
			f := clipDifference(dst, delta, radius, norm)
			// Never longer than the radius (up to rounding).
			require.LessOrEqual(t, norm.Norm(dst), radius*(1+1e-14), "%v trial %d", norm, trial)
			if nd <= radius {
				// Identity when the difference is within the radius.
				require.Equal(t, 1.0, f)
				require.Equal(t, delta, dst)
				continue
			}
			// Otherwise a positive multiple of Δ of norm exactly the radius.
			require.InDelta(t, radius/nd, f, 1e-15*radius/nd)
			require.InDelta(t, radius, norm.Norm(dst), 1e-13*radius)
			for i := range dst {
				require.InDelta(t, f*delta[i], dst[i], 1e-15*math.Abs(delta[i]))
			}
		}
	}
}

func TestClipDifferenceZeroAndInPlace(t *testing.T) {
	l2, _ := NewLP(2, 3)
	dst := []float64{7, 7, 7}
	require.Equal(t, 1.0, clipDifference(dst, []float64{0, 0, 0}, 0, l2))
	require.Equal(t, []float64{0, 0, 0}, dst, "Cl(0) = 0")
	require.Equal(t, 1.0, clipDifference(dst, []float64{0, 0, 0}, 5, l2))
	require.Equal(t, []float64{0, 0, 0}, dst)

	// Zero radius (x = y) clips every difference to zero.
	d := []float64{1, -2, 2}
	require.Equal(t, 0.0, clipDifference(d, d, 0, l2))
	require.Equal(t, []float64{0, 0, 0}, d)

	// In place: ‖(3, 4, 0)‖ = 5 clipped to 1.
	d = []float64{3, 4, 0}
	require.InDelta(t, 0.2, clipDifference(d, d, 1, l2), 1e-16) // 1/‖d‖, a few ulps
	require.InDeltaSlice(t, []float64{0.6, 0.8, 0}, d, 1e-15)

	require.Panics(t, func() { clipDifference(make([]float64, 2), d, 1, l2) })
	require.Panics(t, func() { clipDifference(d, d, -1, l2) })
	require.Panics(t, func() { clipDifference(d, d, math.NaN(), l2) })
}
