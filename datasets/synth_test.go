package datasets

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSynthDeterministic(t *testing.T) {
	ctx := context.Background()
	s, err := NewSynthesizer(nil)
	require.NoError(t, err)
	s.Workers = 1
	one, err := s.Generate(ctx, 600, 5)
	require.NoError(t, err)
	s3, err := NewSynthesizer(nil)
	require.NoError(t, err)
	s3.Workers = 3
	three, err := s3.Generate(ctx, 600, 5)
	require.NoError(t, err)
	require.True(t, slices.Equal(one.X, three.X) && slices.Equal(one.Y, three.Y), "1 and 3 workers generated different images")
	prefix, err := s.Generate(ctx, 257, 5)
	require.NoError(t, err)
	require.True(t, slices.Equal(prefix.X, one.X[:257*784]) && slices.Equal(prefix.Y, one.Y[:257]),
		"Generate(257) is not a prefix of Generate(600)")
	other, err := s.Generate(ctx, 600, 6)
	require.NoError(t, err)
	same := 0
	for i := 0; i < 600; i++ {
		if slices.Equal(other.Image(i), one.Image(i)) {
			same++
		}
	}
	require.Zero(t, same, "images identical under seeds 5 and 6")
	require.NoError(t, one.Validate())
}

// TestSynthPixelsAndLabels checks the pixel range, that every image has ink,
// and that labels are uniform: each of 10 classes among 5000 draws must lie
// within 6 binomial standard deviations (√(5000·0.1·0.9) ≈ 21) of 500.
func TestSynthPixelsAndLabels(t *testing.T) {
	d, err := Synthetic(context.Background(), 5000, 1)
	require.NoError(t, err)
	require.Equal(t, [4]int{5000, 28, 28, 10}, [4]int{d.Len(), d.Rows, d.Cols, d.Classes}, "images, rows, columns, classes")
	for i := 0; i < d.Len(); i++ {
		var ink float64
		for _, v := range d.Image(i) {
			require.True(t, v >= 0 && v <= 1, "image %d has pixel %v outside [0, 1]", i, v)
			ink += v
		}
		// A digit at the smallest scale covers well over 15 pixels.
		require.GreaterOrEqual(t, ink, 15.0, "pixels of ink in image %d (label %d)", i, d.Y[i])
	}
	sd := math.Sqrt(5000 * 0.1 * 0.9)
	for k, c := range d.Histogram() {
		require.InDelta(t, 500, c, 6*sd, "draws of class %d among 5000", k)
	}
}

// TestSynthUndistorted renders with a zero Jitter: every digit is then one
// of the ten fonts' glyphs, noise-free, 20 pixels tall and centred.
func TestSynthUndistorted(t *testing.T) {
	s, err := NewSynthesizer(&Jitter{})
	require.NoError(t, err)
	d, err := s.Generate(context.Background(), 400, 9)
	require.NoError(t, err)
	variants := make([][][]float64, 10)
	for i := 0; i < d.Len(); i++ {
		im := d.Image(i)
		if !slices.ContainsFunc(variants[d.Y[i]], func(v []float64) bool { return slices.Equal(v, im) }) {
			variants[d.Y[i]] = append(variants[d.Y[i]], im)
		}
		// Ink extent: rows and columns holding a pixel ≥ 0.5, and the
		// centroid of all ink.
		top, bottom, left, right := 28, -1, 28, -1
		var m, cx, cy float64
		for y := 0; y < 28; y++ {
			for x := 0; x < 28; x++ {
				v := im[y*28+x]
				m += v
				cx += v * (float64(x) + 0.5)
				cy += v * (float64(y) + 0.5)
				if v >= 0.5 {
					top, bottom = min(top, y), max(bottom, y)
					left, right = min(left, x), max(right, x)
				}
			}
		}
		// The outline spans exactly 20 pixels vertically, from y = 4 to 24:
		// rows 4…23 are at least half covered.
		require.InDelta(t, 20, bottom-top+1, 1, "image %d (digit %d): height of ink rows %d…%d", i, d.Y[i], top, bottom)
		require.InDelta(t, 14, float64(left+right+1)/2, 1, "image %d (digit %d): centre of ink columns %d…%d", i, d.Y[i], left, right)
		require.InDelta(t, 14, cx/m, 3.5, "image %d (digit %d): centroid column", i, d.Y[i])
		require.InDelta(t, 14, cy/m, 3.5, "image %d (digit %d): centroid row", i, d.Y[i])
	}
	for k, v := range variants {
		require.NotEmpty(t, v, "digit %d: no undistorted image", k)
		require.LessOrEqual(t, len(v), len(synthFonts), "digit %d: distinct undistorted images, want at most one per font", k)
	}
}

func TestSynthErrors(t *testing.T) {
	for _, tc := range []struct {
		j    Jitter
		want string
	}{
		{Jitter{Rotation: -1}, "Rotation"},
		{Jitter{Noise: math.NaN()}, "Noise"},
		{Jitter{Shear: math.Inf(1)}, "Shear"},
		{Jitter{ScaleMin: 1.2, ScaleMax: 1}, "ScaleMin"},
		{Jitter{StrokeMin: -2}, "stroke range"},
		{Jitter{StrokeMin: 0.5, StrokeMax: 0.2}, "stroke range"},
		{Jitter{Blur: 2}, "Blur"},
		{Jitter{InkMin: 1.5}, "InkMin"},
	} {
		_, err := NewSynthesizer(&tc.j)
		require.ErrorContains(t, err, tc.want, "%+v", tc.j)
	}
	s, err := NewSynthesizer(nil)
	require.NoError(t, err)
	_, err = s.Generate(context.Background(), -1, 0)
	require.Error(t, err, "negative count accepted")
	d, err := s.Generate(context.Background(), 0, 0)
	require.NoError(t, err, "zero images")
	require.Zero(t, d.Len())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Generate(ctx, 1000, 0)
	require.ErrorIs(t, err, context.Canceled)
}

// BenchmarkSynthetic generates 1000 digits per op with all available
// workers and reports the extrapolated time for 60000.
func BenchmarkSynthetic(b *testing.B) { benchSynthetic(b, 1000) }

func benchSynthetic(b *testing.B, n int) {
	s, err := NewSynthesizer(nil)
	require.NoError(b, err)
	ctx := context.Background()
	seed := uint64(0)
	for b.Loop() {
		_, err := s.Generate(ctx, n, seed)
		require.NoError(b, err)
		seed++
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*60000/float64(n), "s/60k")
}
