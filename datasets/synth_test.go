package datasets

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestSynthDeterministic(t *testing.T) {
	ctx := context.Background()
	s, err := NewSynthesizer(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Workers = 1
	one, err := s.Generate(ctx, 600, 5)
	if err != nil {
		t.Fatal(err)
	}
	s3, _ := NewSynthesizer(nil)
	s3.Workers = 3
	three, err := s3.Generate(ctx, 600, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one.X, three.X) || !slices.Equal(one.Y, three.Y) {
		t.Error("1 and 3 workers generated different images")
	}
	prefix, _ := s.Generate(ctx, 257, 5)
	if !slices.Equal(prefix.X, one.X[:257*784]) || !slices.Equal(prefix.Y, one.Y[:257]) {
		t.Error("Generate(257) is not a prefix of Generate(600)")
	}
	other, _ := s.Generate(ctx, 600, 6)
	same := 0
	for i := 0; i < 600; i++ {
		if slices.Equal(other.Image(i), one.Image(i)) {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 5 and 6 gave %d identical images", same)
	}
	if err := one.Validate(); err != nil {
		t.Error(err)
	}
}

// TestSynthPixelsAndLabels checks the pixel range, that every image has ink,
// and that labels are uniform: each of 10 classes among 5000 draws must lie
// within 6 binomial standard deviations (√(5000·0.1·0.9) ≈ 21) of 500.
func TestSynthPixelsAndLabels(t *testing.T) {
	d, err := Synthetic(context.Background(), 5000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Rows != 28 || d.Cols != 28 || d.Classes != 10 || d.Len() != 5000 {
		t.Fatalf("got %d images %d×%d in %d classes", d.Len(), d.Rows, d.Cols, d.Classes)
	}
	for i := 0; i < d.Len(); i++ {
		var ink float64
		for _, v := range d.Image(i) {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("image %d has pixel %v outside [0, 1]", i, v)
			}
			ink += v
		}
		// A digit at the smallest scale covers well over 15 pixels.
		if ink < 15 {
			t.Fatalf("image %d (label %d) has only %.1f pixels of ink", i, d.Y[i], ink)
		}
	}
	sd := math.Sqrt(5000 * 0.1 * 0.9)
	for k, c := range d.Histogram() {
		if math.Abs(float64(c)-500) > 6*sd {
			t.Errorf("class %d drawn %d times of 5000", k, c)
		}
	}
}

// TestSynthUndistorted renders with a zero Jitter: every digit is then one
// of the ten fonts' glyphs, noise-free, 20 pixels tall and centred.
func TestSynthUndistorted(t *testing.T) {
	s, err := NewSynthesizer(&Jitter{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Generate(context.Background(), 400, 9)
	if err != nil {
		t.Fatal(err)
	}
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
		if h := bottom - top + 1; h < 19 || h > 21 {
			t.Errorf("image %d (digit %d): ink rows %d…%d, height %d, want 20±1", i, d.Y[i], top, bottom, h)
		}
		if c := float64(left+right+1) / 2; math.Abs(c-14) > 1 {
			t.Errorf("image %d (digit %d): ink columns %d…%d centred at %.1f, want 14±1", i, d.Y[i], left, right, c)
		}
		if math.Abs(cx/m-14) > 3.5 || math.Abs(cy/m-14) > 3.5 {
			t.Errorf("image %d (digit %d): centroid (%.1f, %.1f) far from the centre", i, d.Y[i], cx/m, cy/m)
		}
	}
	for k, v := range variants {
		if len(v) == 0 || len(v) > len(synthFonts) {
			t.Errorf("digit %d: %d distinct undistorted images, want 1…%d (one per font)", k, len(v), len(synthFonts))
		}
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
		if _, err := NewSynthesizer(&tc.j); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.j, err, tc.want)
		}
	}
	s, _ := NewSynthesizer(nil)
	if _, err := s.Generate(context.Background(), -1, 0); err == nil {
		t.Error("negative count accepted")
	}
	if d, err := s.Generate(context.Background(), 0, 0); err != nil || d.Len() != 0 {
		t.Errorf("zero images: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Generate(ctx, 1000, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

// BenchmarkSynthetic generates 1000 digits per op with all available
// workers and reports the extrapolated time for 60000.
func BenchmarkSynthetic(b *testing.B) { benchSynthetic(b, 1000) }

func benchSynthetic(b *testing.B, n int) {
	s, err := NewSynthesizer(nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	seed := uint64(0)
	for b.Loop() {
		if _, err := s.Generate(ctx, n, seed); err != nil {
			b.Fatal(err)
		}
		seed++
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)*60000/float64(n), "s/60k")
}
