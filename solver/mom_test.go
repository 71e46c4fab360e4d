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
			work := make([]float64, medianOfMeansWork(k, 3))
			gotI, gotR := medianOfMeans(dst, means, norm, work)
			require.Equal(t, wantI, gotI, "%v trial %d", norm, trial)
			require.Equal(t, wantR, gotR, "%v trial %d", norm, trial)
			require.Equal(t, means[gotI], dst)
			i2, r2 := medianOfMeans(nil, means, norm, nil) // allocating form
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
	i, r := medianOfMeans(nil, means, l2, nil)
	require.Equal(t, 4, i) // (1, 1) is within 0.1 of all four others
	require.InDelta(t, 0.1, r, 1e-12)
}

func TestMoMBuckets(t *testing.T) {
	// ⌈18 ln(1/δ)⌉, hand-computed.
	for _, tc := range []struct {
		delta float64
		want  int
	}{{0.05, 54}, {0.0125, 79}, {0.5, 13}, {0.99, 1}, {1e-6, 249}} {
		require.Equal(t, tc.want, momBuckets(tc.delta), "δ = %v", tc.delta)
	}
	require.Panics(t, func() { momBuckets(0) })
	require.Panics(t, func() { momBuckets(1) })
}

func TestMedianOfMeansPanics(t *testing.T) {
	l2, _ := NewLP(2, 2)
	require.Panics(t, func() { medianOfMeans(nil, nil, l2, nil) })
	require.Panics(t, func() { medianOfMeans(make([]float64, 3), [][]float64{{1, 2}}, l2, nil) })
	require.Panics(t, func() { medianOfMeans(nil, [][]float64{{1, 2}, {3, 4}}, l2, make([]float64, 3)) })
}

func TestMedianOfMeansAllocs(t *testing.T) {
	var l2 Norm
	l2, _ = NewLP(2, 4)
	means := make([][]float64, 9)
	for i := range means {
		means[i] = []float64{float64(i), 1, 2, 3}
	}
	dst := make([]float64, 4)
	work := make([]float64, medianOfMeansWork(9, 4))
	allocs := testing.AllocsPerRun(10, func() { medianOfMeans(dst, means, l2, work) })
	require.Zero(t, allocs)
}

// binomialTail returns P(Binomial(k, p) ≥ t) as the plain sum of its terms
// C(k, j) p^j (1 − p)^{k−j}, j = t, …, k, each from its log-gamma form:
// the tail momBucketFailure compares with δ, written out in full.
func binomialTail(k, t int, p float64) float64 {
	if t <= 0 {
		return 1
	}
	if p <= 0 {
		return 0
	}
	lk, _ := math.Lgamma(float64(k + 1))
	lp, lq := math.Log(p), math.Log1p(-p)
	s := 0.0
	for j := t; j <= k; j++ {
		lj, _ := math.Lgamma(float64(j + 1))
		lr, _ := math.Lgamma(float64(k - j + 1))
		s += math.Exp(lk - lj - lr + float64(j)*lp + float64(k-j)*lq)
	}
	return s
}

// plainBucketFailure is momBucketFailure's bisection with the plain sum
// binomialTail at every step, the way it was computed before the
// coefficients were hoisted out of the loop.
func plainBucketFailure(k int, delta float64) float64 {
	t := (k + 1) / 2
	return bisectFailure(func(p float64) bool { return binomialTail(k, t, p) > delta })
}

// TestMoMBucketFailureSame checks that momBucketFailure returns bit for bit
// the bisection over the plain binomial sum, on a grid of bucket counts
// (both sides of the stack buffer's 2·momCoefMax − 1) and failure
// probabilities. The two evaluate the same floating-point expressions in
// the same order and take the same decision at every step (the early exit
// only skips non-negative terms of a sum that already exceeds δ), so their
// results are equal, not merely close.
func TestMoMBucketFailureSame(t *testing.T) {
	ks := []int{1, 2, 3, 4, 5, 7, 9, 12, 17, 25, 33, 45, 64, 87, 126, 127, 128, 129, 200}
	for _, k := range ks {
		for e := 0.0; e <= 12; e += 0.25 {
			delta := math.Pow(10, -e) * 0.49
			got, want := momBucketFailure(k, delta), plainBucketFailure(k, delta)
			require.Equal(t, math.Float64bits(want), math.Float64bits(got), "k = %d, δ = %g: %v against %v", k, delta, got, want)
		}
	}
	for _, delta := range []float64{0.3, 0.1, 0.05, 0.025, 0.0125, 0.00625, 0.003125, 0.011, 1e-3, 1e-6} {
		k, p := momChebyshevBuckets(delta)
		wk, wp := plainChebyshevBuckets(delta)
		require.Equal(t, wk, k, "δ = %g", delta)
		require.Equal(t, math.Float64bits(wp), math.Float64bits(p), "δ = %g", delta)
	}
}

// plainChebyshevBuckets is momChebyshevBuckets over every odd count up to
// its limit, with plainBucketFailure.
func plainChebyshevBuckets(delta float64) (k int, p float64) {
	best := math.Inf(1)
	limit := 3 + int(math.Ceil(6*math.Log(1/delta)))
	for j := 1; j <= limit; j += 2 {
		q := plainBucketFailure(j, delta)
		if r := float64(j) / q; r < best {
			best, k, p = r, j, q
		}
	}
	return k, p
}

// TestBucketTailBand checks bucketTail's decisions where they are hardest:
// with δ equal to the plain sum at p, and one float below it, the fast sum
// cannot decide (δ lies in its band) and the plain sum must: not above δ,
// then above. Away from δ, the fast sum decides alone, as the plain sum.
func TestBucketTailBand(t *testing.T) {
	for _, k := range []int{1, 2, 3, 8, 21, 45, 127, 128, 301} {
		var buf [2 * momCoefMax]float64
		b := newBucketTail(buf[:0], k, logFactorials(nil, k))
		for _, p := range []float64{1e-6, 1e-3, 0.05, 0.11, 0.3, 0.5} {
			plain := binomialTail(k, b.t, p)
			if !(plain > 1e-280) {
				continue
			}
			require.False(t, b.exceeds(p, plain), "k = %d, p = %g: δ = the tail", k, p)
			require.True(t, b.exceeds(p, math.Nextafter(plain, 0)), "k = %d, p = %g: δ just below the tail", k, p)
			for _, f := range []float64{0.5, 0.999, 1.001, 2} {
				if delta := f * plain; delta < 1 {
					require.Equal(t, plain > delta, b.exceeds(p, delta), "k = %d, p = %g, δ = %g·tail", k, p, f)
				}
			}
		}
	}
}
