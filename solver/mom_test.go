package solver

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// bruteMoM computes the Hsu–Sabato selection straight from its definition:
// r_i is the least candidate radius r ∈ {‖η_j − η_i‖} such that more than
// k/2 means lie within r of η_i; the selection is the first minimiser.
func bruteMoM(means [][]float64, norm Norm) (int, float64) {
	k := len(means)
	diff := make([]float64, norm.Len())
	d := func(i, j int) float64 {
		subInto(diff, means[i], means[j])
		return norm.Norm(diff)
	}
	best, bestR := -1, math.Inf(1)
	for i := range k {
		ri := math.Inf(1)
		for c := range k {
			r := d(i, c)
			count := 0
			for j := range k {
				if d(i, j) <= r {
					count++
				}
			}
			if 2*count > k && r < ri {
				ri = r
			}
		}
		if ri < bestR {
			best, bestR = i, ri
		}
	}
	return best, bestR
}

func TestMedianOfMeansMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, norm := range []Norm{mustLP(2, 3), mustLP(4, 3), mustLP(math.Inf(1), 3)} {
		for trial := range 200 {
			k := 1 + trial%12
			means := make([][]float64, k)
			for i := range means {
				means[i] = make([]float64, 3)
				for j := range means[i] {
					if trial%2 == 0 {
						// Small integers: many exactly tied distances, to
						// exercise the lowest-index rule.
						means[i][j] = float64(rng.IntN(3))
					} else {
						means[i][j] = rng.NormFloat64()
						if rng.IntN(5) == 0 {
							means[i][j] *= 100 // outliers
						}
					}
				}
			}
			wantI, wantR := bruteMoM(means, norm)
			dst := make([]float64, 3)
			work := make([]float64, MedianOfMeansWork(k, 3))
			gotI, gotR := MedianOfMeans(dst, means, norm, work)
			require.Equal(t, wantI, gotI, "%v trial %d", norm, trial)
			require.Equal(t, wantR, gotR, "%v trial %d", norm, trial)
			require.Equal(t, means[gotI], dst)
			i2, r2 := MedianOfMeans(nil, means, norm, nil) // allocating form
			require.Equal(t, gotI, i2)
			require.Equal(t, gotR, r2)
		}
	}
}

func TestMedianOfMeansIgnoresOutliers(t *testing.T) {
	// Five means near (1, 1) and four far outliers: the selection is one of
	// the five, and its radius is at most the spread of the five.
	means := [][]float64{{1e6, 0}, {1, 1.1}, {-1e6, 3}, {0.9, 1}, {1, 1}, {0, 1e9}, {1.05, 0.95}, {5e5, 5e5}, {1.1, 1}}
	l2, _ := NewLP(2, 2)
	i, r := MedianOfMeans(nil, means, l2, nil)
	require.Equal(t, 4, i) // (1, 1) is within 0.1 of all four others
	require.InDelta(t, 0.1, r, 1e-12)
}

func TestMoMBuckets(t *testing.T) {
	// ⌈18 ln(1/δ)⌉, hand-computed.
	for _, tc := range []struct {
		delta float64
		want  int
	}{{0.05, 54}, {0.0125, 79}, {0.5, 13}, {0.99, 1}, {1e-6, 249}} {
		require.Equal(t, tc.want, MoMBuckets(tc.delta), "δ = %v", tc.delta)
	}
	require.Panics(t, func() { MoMBuckets(0) })
	require.Panics(t, func() { MoMBuckets(1) })
}

func TestMedianOfMeansPanics(t *testing.T) {
	l2, _ := NewLP(2, 2)
	require.Panics(t, func() { MedianOfMeans(nil, nil, l2, nil) })
	require.Panics(t, func() { MedianOfMeans(make([]float64, 3), [][]float64{{1, 2}}, l2, nil) })
	require.Panics(t, func() { MedianOfMeans(nil, [][]float64{{1, 2}, {3, 4}}, l2, make([]float64, 3)) })
}

func TestMedianOfMeansAllocs(t *testing.T) {
	var l2 Norm
	l2, _ = NewLP(2, 4)
	means := make([][]float64, 9)
	for i := range means {
		means[i] = []float64{float64(i), 1, 2, 3}
	}
	dst := make([]float64, 4)
	work := make([]float64, MedianOfMeansWork(9, 4))
	allocs := testing.AllocsPerRun(10, func() { MedianOfMeans(dst, means, l2, work) })
	require.Zero(t, allocs)
}
