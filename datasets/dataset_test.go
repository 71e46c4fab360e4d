package datasets

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
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
		t.Run(tc.name, func(t *testing.T) {
			d := tiny(4, 3)
			tc.edit(d)
			if tc.want == "" {
				require.NoError(t, d.Validate())
			} else {
				require.ErrorContains(t, d.Validate(), tc.want)
			}
		})
	}
}

func TestDatasetHeadSubsetHistogram(t *testing.T) {
	d := tiny(10, 3)
	require.Equal(t, []int{4, 3, 3}, d.Histogram())
	h := d.Head(4)
	require.Equal(t, 4, h.Len())
	require.Equal(t, d.Image(3), h.Image(3))
	require.Equal(t, 10, d.Len(), "Head changed the original")
	require.Same(t, d, d.Head(0), "Head(0) must return the whole set")
	require.Same(t, d, d.Head(11), "Head(n > Len) must return the whole set")
	s := d.Subset("s", []int{7, 2, 7})
	require.Equal(t, []int{1, 2, 1}, s.Y)
	require.Equal(t, d.Image(2), s.Image(1))
	s.X[0] = -1
	require.NotEqual(t, -1.0, d.Image(7)[0], "Subset shares storage with the original")
}

func TestDatasetSplit(t *testing.T) {
	d := tiny(50, 5)
	train, val, err := d.Split(12, 7)
	require.NoError(t, err)
	require.Equal(t, 38, train.Len())
	require.Equal(t, 12, val.Len())
	// Image i is identified by its first pixel i/100: the parts must be
	// disjoint, cover all images and keep the original order.
	ids := func(s *Dataset) []int {
		var out []int
		for i := 0; i < s.Len(); i++ {
			out = append(out, int(math.Round(s.Image(i)[0]*100)))
		}
		return out
	}
	require.True(t, slices.IsSorted(ids(train)), "training part is not in the original order")
	require.True(t, slices.IsSorted(ids(val)), "validation part is not in the original order")
	require.Equal(t, identity(50), slices.Sorted(slices.Values(append(ids(train), ids(val)...))),
		"parts are not a partition of the images")
	for i, id := range ids(val) {
		require.Equal(t, d.Y[id], val.Y[i], "label of validation image %d", id)
	}
	_, val2, err := d.Split(12, 7)
	require.NoError(t, err)
	_, val3, err := d.Split(12, 8)
	require.NoError(t, err)
	require.Equal(t, ids(val), ids(val2), "the same seed gave different splits")
	require.NotEqual(t, ids(val), ids(val3), "seeds 7 and 8 gave the same split")
	for _, n := range []int{0, -1, 50} {
		_, _, err := d.Split(n, 1)
		require.ErrorIs(t, err, ErrValidationSize, "Split(%d) of 50 images", n)
	}
}

func TestNormalizer(t *testing.T) {
	// Two 1×2 images: pixel 0 takes 0 and 1, pixel 1 is always 0.5.
	train := &Dataset{Name: "n", Rows: 1, Cols: 2, Classes: 2, X: []float64{0, 0.5, 1, 0.5}, Y: []int{0, 1}}
	test := &Dataset{Name: "t", Rows: 1, Cols: 2, Classes: 2, X: []float64{0.25, 0.75}, Y: []int{0}}

	g, err := FitNormalizer(train, NormGlobal)
	require.NoError(t, err)
	// Pixels 0, .5, 1, .5: mean .5, variance (.25+0+.25+0)/4 = .125.
	require.InDelta(t, 0.5, g.Mean[0], 1e-15, "global mean")
	require.InDelta(t, math.Sqrt(0.125), g.Std[0], 1e-15, "global std")

	p, err := FitNormalizer(train, NormPerPixel)
	require.NoError(t, err)
	// Pixel 0: mean .5, std .5; pixel 1: mean .5, std 0 floored at MinStd.
	require.Equal(t, []float64{0.5, 0.5}, p.Mean, "per-pixel mean")
	require.Equal(t, []float64{0.5, MinStd}, p.Std, "per-pixel std")
	require.NoError(t, p.Apply(test))
	require.InDeltaSlice(t, []float64{(0.25 - 0.5) / 0.5, (0.75 - 0.5) / MinStd}, test.X, 1e-12, "normalised test pixels")

	z, err := FitNormalizer(train, NormNone)
	require.NoError(t, err)
	require.Nil(t, z, "NormNone")
	var none *Normalizer
	require.NoError(t, none.Apply(train))
	require.Equal(t, 1.0, train.X[2], "nil Normalizer changed the data")
	wrong := &Dataset{Name: "w", Rows: 1, Cols: 3, Classes: 2, X: make([]float64, 3), Y: []int{0}}
	require.Error(t, p.Apply(wrong), "per-pixel statistics of 2 pixels applied to 3-pixel images")
	_, err = FitNormalizer(train, Normalization(7))
	require.Error(t, err, "unknown normalization accepted")
	_, err = FitNormalizer(train.Head(0).Subset("empty", nil), NormGlobal)
	require.Error(t, err, "fitted on no images")
}

func TestNormalizationString(t *testing.T) {
	for m, want := range map[Normalization]string{NormDefault: "", NormNone: "none", NormGlobal: "global", NormPerPixel: "per-pixel", 9: "Normalization(9)"} {
		require.Equal(t, want, m.String(), "%d.String()", int(m))
		if m == 9 {
			_, err := m.MarshalText()
			require.Error(t, err)
			continue
		}
		b, err := m.MarshalText()
		require.NoError(t, err)
		require.Equal(t, want, string(b))
		back := Normalization(9)
		require.NoError(t, back.UnmarshalText(b))
		require.Equal(t, m, back)
	}
	var m Normalization
	require.ErrorIs(t, m.UnmarshalText([]byte("minmax")), ErrUnknownNormalization)
	require.Equal(t, NormDefault, m, "left alone on error")
	z, err := FitNormalizer(&Dataset{Name: "d", Rows: 1, Cols: 1, Classes: 1, X: []float64{1}, Y: []int{0}}, NormDefault)
	require.NoError(t, err)
	require.Nil(t, z, "NormDefault is NormNone")
}
