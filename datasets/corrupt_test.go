package datasets

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// seeded reports whether c draws from its random stream.
func seeded(c Corruption) bool {
	switch c {
	case Dilate, Erode, Thicken, CannyEdges:
		return false
	}
	return true
}

func TestCorruptSuite(t *testing.T) {
	ctx := context.Background()
	ds, err := Synthetic(ctx, 40, 7)
	require.NoError(t, err)
	orig := slices.Clone(ds.X)
	require.Len(t, Corruptions(), len(CorruptionNames()))
	for _, c := range Corruptions() {
		t.Run(c.String(), func(t *testing.T) {
			a, err := Corrupt(ctx, ds, c, 11)
			require.NoError(t, err)
			b, err := Corrupt(ctx, ds, c, 11)
			require.NoError(t, err)
			require.Equal(t, a.X, b.X, "same seed, same images")
			require.Equal(t, ds.Y, a.Y)
			require.Equal(t, ds.Name+"/"+c.String(), a.Name)
			require.Equal(t, orig, ds.X, "the input was modified")
			for i, v := range a.X {
				require.False(t, math.IsNaN(v) || v < 0 || v > 1, "pixel %d is %v", i, v)
			}
			for i := range ds.Len() {
				diff := 0.0
				for p, v := range a.Image(i) {
					diff = max(diff, math.Abs(v-ds.Image(i)[p]))
				}
				require.Greater(t, diff, 0.05, "image %d is (nearly) unchanged", i)
			}
			if seeded(c) {
				d, err := Corrupt(ctx, ds, c, 12)
				require.NoError(t, err)
				require.NotEqual(t, a.X, d.X, "another seed, other images")
			}
			// An image's corruption depends on its index and the seed
			// alone, not on the rest of the set.
			h, err := Corrupt(ctx, ds.Head(5), c, 11)
			require.NoError(t, err)
			require.Equal(t, a.X[:5*ds.Dim()], h.X)
		})
	}
}

func TestCorruptionNames(t *testing.T) {
	for _, c := range Corruptions() {
		got, err := ParseCorruption(c.String())
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
	for _, name := range []string{"identity", ""} {
		_, err := ParseCorruption(name)
		require.ErrorIs(t, err, ErrUnknownCorruption, "%q", name)
	}
	for _, c := range []Corruption{0, Corruption(99)} {
		_, err := Corrupt(context.Background(), &Dataset{Rows: 1, Cols: 1, Classes: 2, X: []float64{0}, Y: []int{0}}, c, 1)
		require.Error(t, err, "%d", int(c))
	}
}

func TestCorruptRejectsNormalized(t *testing.T) {
	ds := &Dataset{Name: "n", Rows: 2, Cols: 2, Classes: 2, X: []float64{0, 0.5, 1.5, 0}, Y: []int{1}}
	ctx := context.Background()
	_, err := Corrupt(ctx, ds, Shear, 1)
	require.ErrorContains(t, err, "outside [0, 1]")
	ds.X[2] = math.NaN()
	_, err = Corrupt(ctx, ds, Shear, 1)
	require.ErrorContains(t, err, "NaN")
}

func TestCorruptCanceled(t *testing.T) {
	ds, err := Synthetic(context.Background(), 3, 7)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Corrupt(ctx, ds, Rotate, 1)
	require.ErrorIs(t, err, context.Canceled)
}

// TestCannyBlank checks that edges of a blank image are blank and that a
// filled square yields its outline only.
func TestCannyBlank(t *testing.T) {
	k := newCorrupter(12, 12)
	src, dst := make([]float64, 144), make([]float64, 144)
	k.canny(dst, src)
	require.Equal(t, make([]float64, 144), dst)
	for r := 3; r < 9; r++ {
		for c := 3; c < 9; c++ {
			src[r*12+c] = 1
		}
	}
	k.canny(dst, src)
	require.Zero(t, dst[6*12+6], "the inside of the square is no edge")
	require.Zero(t, dst[0], "the far corner is no edge")
	edges := 0
	for _, v := range dst {
		edges += int(v)
	}
	require.Greater(t, edges, 12, "the outline is found")
}

// BenchmarkCorrupt reports the time to corrupt 100 synthetic digits.
func BenchmarkCorrupt(b *testing.B) {
	ctx := context.Background()
	ds, err := Synthetic(ctx, 100, 7)
	require.NoError(b, err)
	for _, c := range Corruptions() {
		b.Run(c.String(), func(b *testing.B) {
			for b.Loop() {
				if _, err := Corrupt(ctx, ds, c, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
