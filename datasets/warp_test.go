package datasets

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// blob returns a rows×cols image of a Gaussian blob of width sigma pixels
// centred at (r0, c0).
func blob(rows, cols int, r0, c0, sigma float64) []float64 {
	img := make([]float64, rows*cols)
	for r := range rows {
		for c := range cols {
			dy, dx := float64(r)-r0, float64(c)-c0
			img[r*cols+c] = math.Exp(-(dy*dy + dx*dx) / (2 * sigma * sigma))
		}
	}
	return img
}

// moments returns the mass of a rows×cols image and its second moment
// about the image centre, Σ v·((r − rc)² + (c − cc)²).
func moments(img []float64, rows, cols int) (mass, second float64) {
	cr, cc := float64(rows-1)/2, float64(cols-1)/2
	for r := range rows {
		for c := range cols {
			v := img[r*cols+c]
			dy, dx := float64(r)-cr, float64(c)-cc
			mass += v
			second += v * (dy*dy + dx*dx)
		}
	}
	return mass, second
}

func TestWarpIdentity(t *testing.T) {
	for _, tc := range []struct{ rows, cols int }{{1, 1}, {3, 4}, {5, 5}, {28, 28}} {
		src := randomImages(1, tc.rows, tc.cols, 2, 7).X
		dst := slices.Repeat([]float64{-1}, len(src)) // stale contents must go
		Warp(dst, src, tc.rows, tc.cols, 0, 1)
		require.InDeltaSlice(t, src, dst, 1e-12, "%d×%d", tc.rows, tc.cols)
	}
}

// TestWarpQuarterTurn: a rotation by 90° of an n×n image (n odd, so the
// centre is a pixel) is counterclockwise: pixel (r, c) moves to
// (n−1−c, r), and −90° moves it back; 180° moves it to (n−1−r, n−1−c).
func TestWarpQuarterTurn(t *testing.T) {
	for _, n := range []int{1, 3, 5, 7} {
		src := randomImages(1, n, n, 2, uint64(n)).X
		for _, tc := range []struct {
			degrees float64
			to      func(r, c int) (int, int)
		}{
			{90, func(r, c int) (int, int) { return n - 1 - c, r }},
			{-90, func(r, c int) (int, int) { return c, n - 1 - r }},
			{180, func(r, c int) (int, int) { return n - 1 - r, n - 1 - c }},
		} {
			dst := make([]float64, n*n)
			Warp(dst, src, n, n, tc.degrees, 1)
			for r := range n {
				for c := range n {
					rr, cc := tc.to(r, c)
					require.InDelta(t, src[r*n+c], dst[rr*n+cc], 1e-9, "%d×%d by %g°: (%d, %d) → (%d, %d)", n, n, tc.degrees, r, c, rr, cc)
				}
			}
		}
	}
	// A non-square image turned by 180° stays in its frame.
	src := randomImages(1, 3, 4, 2, 9).X
	dst := make([]float64, 12)
	Warp(dst, src, 3, 4, 180, 1)
	for i := range 12 {
		require.InDelta(t, src[11-i], dst[i], 1e-9, "pixel %d", i)
	}
}

// TestWarpRotationRoundTrip: rotating a smooth image by +θ and then by −θ
// restores its interior up to the error of two interpolations. Bilinear
// interpolation of a function whose second derivatives are at most K
// errs by at most K/8 per axis (a pixel apart), so for a Gaussian blob of
// width σ (K = 1/σ²) the two interpolations of two axes err by at most
// 4/(8σ²) = 1/(2σ²).
func TestWarpRotationRoundTrip(t *testing.T) {
	const n, sigma = 28, 4.0
	src := blob(n, n, 10, 9, sigma) // 5 pixels from the centre
	tol := 1 / (2 * sigma * sigma)
	for _, degrees := range []float64{5, 12.5, 30} {
		mid, back := make([]float64, n*n), make([]float64, n*n)
		Warp(mid, src, n, n, degrees, 1)
		require.Greater(t, maxAbsDiff(mid, src, n, 0), 2*tol, "%g° moves the blob", degrees)
		Warp(back, mid, n, n, -degrees, 1)
		t.Logf("%g°: moved by up to %.3f, restored within %.4f (bound %.4f)", degrees, maxAbsDiff(mid, src, n, 0), maxAbsDiff(back, src, n, 9), tol)
		// Inside the disc of radius 9 about the centre (clear of the
		// corners, which the first rotation cuts off).
		require.Less(t, maxAbsDiff(back, src, n, 9), tol, "%g° and back", degrees)
	}
}

// maxAbsDiff returns the largest |a − b| over the pixels of two n×n images
// within radius of the centre (every pixel when radius is 0).
func maxAbsDiff(a, b []float64, n int, radius float64) float64 {
	m, cn := 0.0, float64(n-1)/2
	for r := range n {
		for c := range n {
			dy, dx := float64(r)-cn, float64(c)-cn
			if radius > 0 && dy*dy+dx*dx > radius*radius {
				continue
			}
			m = max(m, math.Abs(a[r*n+c]-b[r*n+c]))
		}
	}
	return m
}

// TestWarpMoments: rotation keeps a centred blob's mass and second moment;
// scaling by s keeps it in the frame and multiplies its second moment by
// about s² (and its mass by about s², the area it covers).
func TestWarpMoments(t *testing.T) {
	const n = 29
	src := blob(n, n, 14, 14, 3)
	mass0, second0 := moments(src, n, n)
	for _, tc := range []struct {
		degrees, scale float64
	}{
		{10, 1}, {-25, 1}, {45, 1}, {0, 1.1}, {0, 0.9}, {15, 1.1}, {-7, 0.95},
	} {
		dst := make([]float64, n*n)
		Warp(dst, src, n, n, tc.degrees, tc.scale)
		mass, second := moments(dst, n, n)
		s2 := tc.scale * tc.scale
		require.InEpsilon(t, mass0*s2, mass, 0.02, "mass at %g°, scale %g", tc.degrees, tc.scale)
		// Per unit of mass the second moment grows by s²; bilinear
		// interpolation adds a little spread of its own.
		require.InEpsilon(t, s2, (second/mass)/(second0/mass0), 0.03, "second moment at %g°, scale %g", tc.degrees, tc.scale)
	}
}

// warpedBatch returns a batch of n random 6×5 images and its copy warped
// by a Warper of maxDegrees and maxScale under seed.
func warpedBatch(t *testing.T, n int, maxDegrees, maxScale float64, seed uint64) (orig, got []float64) {
	t.Helper()
	d := randomImages(n, 6, 5, 3, 11)
	w, err := NewWarper(6, 5, maxDegrees, maxScale)
	require.NoError(t, err)
	got = slices.Clone(d.X)
	w.Apply(got, seed)
	return d.X, got
}

func TestWarperDrawsPerImageFromTheSeed(t *testing.T) {
	for _, tc := range []struct{ degrees, scale float64 }{{15, 0}, {0, 0.1}, {10, 0.1}} {
		orig, a := warpedBatch(t, 20, tc.degrees, tc.scale, 1)
		_, b := warpedBatch(t, 20, tc.degrees, tc.scale, 1)
		_, c := warpedBatch(t, 20, tc.degrees, tc.scale, 2)
		require.Equal(t, a, b, "%+v: the same seed gives the same warps", tc)
		require.NotEqual(t, a, c, "%+v: another seed gives others", tc)
		// Every image is warped, each its own way.
		dim := 30
		for i := range 20 {
			require.NotEqual(t, orig[i*dim:(i+1)*dim], a[i*dim:(i+1)*dim], "%+v: image %d", tc, i)
		}
		require.NotEqual(t, a[:dim], a[dim:2*dim])
	}
	// With zero maxima the images are left as they are.
	orig, got := warpedBatch(t, 20, 0, 0, 3)
	require.Equal(t, orig, got)
}

// TestWarperDrawsWithinItsBounds: each image of a batch of copies of one
// blob is the blob warped by an angle and factor within the maxima, read
// off its second moment (the scale) and its orientation (the angle).
func TestWarperDrawsWithinItsBounds(t *testing.T) {
	const n, rows, maxDeg, maxScale = 64, 21, 20.0, 0.15
	// An elongated blob: its main axis along the rows shows the angle.
	one := make([]float64, rows*rows)
	for r := range rows {
		for c := range rows {
			dy, dx := float64(r-10), float64(c-10)
			one[r*rows+c] = math.Exp(-dy*dy/(2*9) - dx*dx/(2*2.25))
		}
	}
	x := slices.Repeat(one, n)
	w, err := NewWarper(rows, rows, maxDeg, maxScale)
	require.NoError(t, err)
	w.Apply(x, 5)
	mass0, second0 := moments(one, rows, rows)
	var minAngle, maxAngle, minScale, maxScale2 = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i := range n {
		img := x[i*rows*rows : (i+1)*rows*rows]
		mass, second := moments(img, rows, rows)
		s := math.Sqrt((second / mass) / (second0 / mass0))
		minScale, maxScale2 = min(minScale, s), max(maxScale2, s)
		// The orientation of the main axis from the central moments:
		// counterclockwise from the column axis is positive.
		var myy, mxx, mxy float64
		for r := range rows {
			for c := range rows {
				v := img[r*rows+c]
				dy, dx := float64(r-10), float64(c-10)
				myy, mxx, mxy = myy+v*dy*dy, mxx+v*dx*dx, mxy+v*dx*dy
			}
		}
		// Rows grow downwards: the upward axis is −dy.
		axis := 0.5 * math.Atan2(-2*mxy, mxx-myy) * 180 / math.Pi
		// The blob lies along the rows (±90°): its tilt from there.
		tilt := axis - 90
		if tilt < -90 {
			tilt += 180
		}
		minAngle, maxAngle = min(minAngle, tilt), max(maxAngle, tilt)
	}
	t.Logf("angles in [%.2f°, %.2f°], scales in [%.3f, %.3f]", minAngle, maxAngle, minScale, maxScale2)
	require.GreaterOrEqual(t, minAngle, -maxDeg-1)
	require.LessOrEqual(t, maxAngle, maxDeg+1)
	require.Less(t, minAngle, -maxDeg/2, "the angles spread over their range")
	require.Greater(t, maxAngle, maxDeg/2)
	require.GreaterOrEqual(t, minScale, 1-maxScale-0.02)
	require.LessOrEqual(t, maxScale2, 1+maxScale+0.02)
	require.Less(t, minScale, 1-maxScale/2, "the scales spread over their range")
	require.Greater(t, maxScale2, 1+maxScale/2)
}

func TestWarperKeepsLabelsAndAllocatesNothing(t *testing.T) {
	w, err := NewWarper(8, 8, 10, 0.1)
	require.NoError(t, err)
	requireKeepsLabelsAndAllocatesNothing(t, w.Apply)
}

func TestNewWarperRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		rows, cols         int
		maxDegrees, maxScl float64
		names              string // in the error
	}{
		{0, 5, 10, 0.1, "shape"},
		{5, -1, 10, 0.1, "shape"},
		{5, 5, -1, 0.1, "maxDegrees"},
		{5, 5, 180, 0.1, "maxDegrees"},
		{5, 5, math.NaN(), 0.1, "maxDegrees"},
		{5, 5, math.Inf(1), 0.1, "maxDegrees"},
		{5, 5, 10, -0.1, "maxScale"},
		{5, 5, 10, 1, "maxScale"},
		{5, 5, 10, math.NaN(), "maxScale"},
	} {
		_, err := NewWarper(tc.rows, tc.cols, tc.maxDegrees, tc.maxScl)
		require.ErrorContains(t, err, tc.names, "%+v", tc)
	}
	w, err := NewWarper(4, 4, 179.9, 0.99)
	require.NoError(t, err)
	require.Equal(t, 179.9, w.MaxDegrees())
	require.Equal(t, 0.99, w.MaxScale())
	require.Panics(t, func() { w.Apply(make([]float64, 15), 1) })
	require.Panics(t, func() { Warp(make([]float64, 15), make([]float64, 16), 4, 4, 0, 1) })
	require.Panics(t, func() { Warp(make([]float64, 16), make([]float64, 16), 4, 4, 0, 0) })
	require.Panics(t, func() { Warp(make([]float64, 16), make([]float64, 16), 4, 4, 0, math.NaN()) })
}
