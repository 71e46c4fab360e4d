package datasets

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// tiny returns n images of 2×2 pixels, image i filled with i/100 + pixel/1000
// and labelled i mod classes.
func tiny(n, classes int) *Dataset {
	d := &Dataset{Name: "tiny", Rows: 2, Cols: 2, Classes: classes, X: make([]float64, 4*n), Y: make([]int, n)}
	for i := 0; i < n; i++ {
		for p := 0; p < 4; p++ {
			d.X[4*i+p] = float64(i)/100 + float64(p)/1000
		}
		d.Y[i] = i % classes
	}
	return d
}

func TestDatasetValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Dataset)
		want string
	}{
		{"ok", func(*Dataset) {}, ""},
		{"rows", func(d *Dataset) { d.Rows = 0 }, "image shape 0×2"},
		{"classes", func(d *Dataset) { d.Classes = 0 }, "Classes = 0"},
		{"len", func(d *Dataset) { d.X = d.X[:7] }, "len(X) = 7"},
		{"label", func(d *Dataset) { d.Y[2] = 3 }, "label 3 of image 2 outside [0, 3)"},
		{"negative label", func(d *Dataset) { d.Y[1] = -1 }, "label -1 of image 1"},
	} {
		d := tiny(4, 3)
		tc.edit(d)
		err := d.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestDatasetHeadSubsetHistogram(t *testing.T) {
	d := tiny(10, 3)
	if got, want := d.Histogram(), []int{4, 3, 3}; !slices.Equal(got, want) {
		t.Errorf("Histogram = %v, want %v", got, want)
	}
	h := d.Head(4)
	if h.Len() != 4 || !slices.Equal(h.Image(3), d.Image(3)) || d.Len() != 10 {
		t.Errorf("Head(4): %d images", h.Len())
	}
	if d.Head(0) != d || d.Head(11) != d {
		t.Error("Head(0) and Head(n > Len) must return the whole set")
	}
	s := d.Subset("s", []int{7, 2, 7})
	if s.Len() != 3 || !slices.Equal(s.Y, []int{1, 2, 1}) || !slices.Equal(s.Image(1), d.Image(2)) {
		t.Errorf("Subset: labels %v", s.Y)
	}
	s.X[0] = -1
	if d.Image(7)[0] == -1 {
		t.Error("Subset shares storage with the original")
	}
}

func TestDatasetSplit(t *testing.T) {
	d := tiny(50, 5)
	train, val, err := d.Split(12, 7)
	if err != nil {
		t.Fatal(err)
	}
	if train.Len() != 38 || val.Len() != 12 {
		t.Fatalf("split into %d and %d, want 38 and 12", train.Len(), val.Len())
	}
	// Image i is identified by its first pixel i/100: the parts must be
	// disjoint, cover all images and keep the original order.
	ids := func(s *Dataset) []int {
		var out []int
		for i := 0; i < s.Len(); i++ {
			out = append(out, int(math.Round(s.Image(i)[0]*100)))
		}
		return out
	}
	all := append(ids(train), ids(val)...)
	if !slices.IsSorted(ids(train)) || !slices.IsSorted(ids(val)) {
		t.Error("split parts are not in the original order")
	}
	slices.Sort(all)
	for i, id := range all {
		if id != i {
			t.Fatalf("parts are not a partition of the images: %v", all)
		}
	}
	for i, id := range ids(val) {
		if val.Y[i] != d.Y[id] {
			t.Errorf("validation image %d has label %d, want %d", id, val.Y[i], d.Y[id])
		}
	}
	_, val2, _ := d.Split(12, 7)
	_, val3, _ := d.Split(12, 8)
	if !slices.Equal(ids(val), ids(val2)) {
		t.Error("the same seed gave different splits")
	}
	if slices.Equal(ids(val), ids(val3)) {
		t.Error("seeds 7 and 8 gave the same split")
	}
	for _, n := range []int{0, -1, 50} {
		if _, _, err := d.Split(n, 1); err == nil {
			t.Errorf("Split(%d) of 50 images: no error", n)
		}
	}
}

func TestNormalizer(t *testing.T) {
	// Two 1×2 images: pixel 0 takes 0 and 1, pixel 1 is always 0.5.
	train := &Dataset{Name: "n", Rows: 1, Cols: 2, Classes: 2, X: []float64{0, 0.5, 1, 0.5}, Y: []int{0, 1}}
	test := &Dataset{Name: "t", Rows: 1, Cols: 2, Classes: 2, X: []float64{0.25, 0.75}, Y: []int{0}}

	g, err := FitNormalizer(train, NormGlobal)
	if err != nil {
		t.Fatal(err)
	}
	// Pixels 0, .5, 1, .5: mean .5, variance (.25+0+.25+0)/4 = .125.
	if math.Abs(g.Mean[0]-0.5) > 1e-15 || math.Abs(g.Std[0]-math.Sqrt(0.125)) > 1e-15 {
		t.Errorf("global: mean %v std %v, want 0.5 and %v", g.Mean, g.Std, math.Sqrt(0.125))
	}

	p, err := FitNormalizer(train, NormPerPixel)
	if err != nil {
		t.Fatal(err)
	}
	// Pixel 0: mean .5, std .5; pixel 1: mean .5, std 0 floored at MinStd.
	if !slices.Equal(p.Mean, []float64{0.5, 0.5}) || !slices.Equal(p.Std, []float64{0.5, MinStd}) {
		t.Errorf("per pixel: mean %v std %v", p.Mean, p.Std)
	}
	if err := p.Apply(test); err != nil {
		t.Fatal(err)
	}
	want := []float64{(0.25 - 0.5) / 0.5, (0.75 - 0.5) / MinStd}
	for i := range want {
		if math.Abs(test.X[i]-want[i]) > 1e-12 {
			t.Errorf("normalised test pixel %d = %v, want %v", i, test.X[i], want[i])
		}
	}

	if z, err := FitNormalizer(train, NormNone); z != nil || err != nil {
		t.Errorf("NormNone: %v, %v; want nil, nil", z, err)
	}
	var none *Normalizer
	if err := none.Apply(train); err != nil || train.X[2] != 1 {
		t.Errorf("nil Normalizer changed the data or failed: %v", err)
	}
	wrong := &Dataset{Name: "w", Rows: 1, Cols: 3, Classes: 2, X: make([]float64, 3), Y: []int{0}}
	if err := p.Apply(wrong); err == nil {
		t.Error("per-pixel statistics of 2 pixels applied to 3-pixel images")
	}
	if _, err := FitNormalizer(train, Normalization(7)); err == nil {
		t.Error("unknown normalization accepted")
	}
	if _, err := FitNormalizer(train.Head(0).Subset("empty", nil), NormGlobal); err == nil {
		t.Error("fitted on no images")
	}
}

func TestNormalizationString(t *testing.T) {
	for m, want := range map[Normalization]string{NormNone: "none", NormGlobal: "global", NormPerPixel: "per-pixel", 9: "Normalization(9)"} {
		if m.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(m), m.String(), want)
		}
	}
}
