package datasets

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShiftMovesPixelsAndZeroFills(t *testing.T) {
	// A 3×4 image with pixels 1…12.
	src := []float64{
		1, 2, 3, 4,
		5, 6, 7, 8,
		9, 10, 11, 12,
	}
	for _, tc := range []struct {
		dy, dx int
		want   []float64
	}{
		{0, 0, src},
		{1, 0, []float64{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}},
		{-1, 0, []float64{5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 0}},
		{0, 2, []float64{0, 0, 1, 2, 0, 0, 5, 6, 0, 0, 9, 10}},
		{0, -1, []float64{2, 3, 4, 0, 6, 7, 8, 0, 10, 11, 12, 0}},
		{1, -2, []float64{0, 0, 0, 0, 3, 4, 0, 0, 7, 8, 0, 0}},
		{-2, 3, []float64{0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0}},
		{0, 4, make([]float64, 12)},
		{3, 0, make([]float64, 12)},
	} {
		dst := slices.Repeat([]float64{-1}, 12) // stale contents must go
		Shift(dst, src, 3, 4, tc.dy, tc.dx)
		require.Equal(t, tc.want, dst, "shift by (%d, %d)", tc.dy, tc.dx)
	}
	require.Panics(t, func() { Shift(make([]float64, 11), src, 3, 4, 0, 0) })
}

// randomImages returns n rows×cols images of uniform pixels with random
// labels in [0, classes), drawn from seed.
func randomImages(n, rows, cols, classes int, seed uint64) *Dataset {
	rng := rand.New(rand.NewPCG(seed, 5))
	d := &Dataset{Name: "random", Rows: rows, Cols: cols, Classes: classes, X: make([]float64, n*rows*cols), Y: make([]int, n)}
	for i := range d.X {
		d.X[i] = rng.Float64()
	}
	for i := range d.Y {
		d.Y[i] = rng.IntN(classes)
	}
	return d
}

// shiftedBatch returns a batch of n random 6×5 images and its copy
// translated by a Shifter of max pixels under seed.
func shiftedBatch(t *testing.T, n, max int, seed uint64) (orig, got []float64) {
	t.Helper()
	d := randomImages(n, 6, 5, 3, 11)
	s, err := NewShifter(6, 5, max)
	require.NoError(t, err)
	got = slices.Clone(d.X)
	s.Apply(got, seed)
	return d.X, got
}

func TestShifterDrawsOffsetsPerImageFromTheSeed(t *testing.T) {
	const n, rows, cols, max = 200, 6, 5, 2
	orig, a := shiftedBatch(t, n, max, 1)
	_, b := shiftedBatch(t, n, max, 1)
	_, c := shiftedBatch(t, n, max, 2)
	require.Equal(t, a, b, "the same seed gives the same translations")
	require.NotEqual(t, a, c, "another seed gives others")

	// Every image is its original translated by some offset within max,
	// and every offset of the (2·max+1)² occurs.
	dim := rows * cols
	seen := map[[2]int]int{}
	buf := make([]float64, dim)
	for i := 0; i < n; i++ {
		src, img := orig[i*dim:(i+1)*dim], a[i*dim:(i+1)*dim]
		found := false
		for dy := -max; dy <= max && !found; dy++ {
			for dx := -max; dx <= max && !found; dx++ {
				Shift(buf, src, rows, cols, dy, dx)
				if slices.Equal(buf, img) {
					seen[[2]int{dy, dx}]++
					found = true
				}
			}
		}
		require.True(t, found, "image %d is not a translation of its original by at most %d pixels", i, max)
	}
	require.Len(t, seen, (2*max+1)*(2*max+1), "offsets drawn: %v", seen)
}

func TestShifterKeepsLabelsAndAllocatesNothing(t *testing.T) {
	s, err := NewShifter(8, 8, 2)
	require.NoError(t, err)
	requireKeepsLabelsAndAllocatesNothing(t, s.Apply)
}

// requireKeepsLabelsAndAllocatesNothing checks that apply, an
// augmentation of 8×8 images run on every batch of a shuffling Batcher,
// allocates nothing and leaves the labels of the batches and of the data
// set as they are.
func requireKeepsLabelsAndAllocatesNothing(t *testing.T, apply func(x []float64, seed uint64)) {
	t.Helper()
	d := randomImages(96, 8, 8, 10, 3)
	labels := slices.Clone(d.Y)
	bt, err := NewBatcher(d, 32, &BatchOptions{Shuffle: true, Seed: 4})
	require.NoError(t, err)
	seed := uint64(0)
	allocs := testing.AllocsPerRun(5, func() {
		bt.Reset(int(seed))
		for bt.Next() {
			b := bt.Batch()
			apply(b.X.RawMatrix().Data, seed)
			for r, i := range b.Index {
				if b.Labels[r] != labels[i] || b.OneHot.At(r, labels[i]) != 1 {
					t.Fatalf("batch row %d (image %d): label %d, want %d", r, i, b.Labels[r], labels[i])
				}
			}
			seed++
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, labels, d.Y, "the data set is left as it is")
}

func TestNewShifterRefusesBadSizes(t *testing.T) {
	for _, tc := range []struct{ rows, cols, max int }{{0, 5, 1}, {5, -1, 1}, {5, 5, -1}, {5, 3, 3}} {
		_, err := NewShifter(tc.rows, tc.cols, tc.max)
		require.Error(t, err, "%d×%d by %d", tc.rows, tc.cols, tc.max)
	}
	s, err := NewShifter(4, 4, 0)
	require.NoError(t, err)
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	s.Apply(x, 9)
	require.Equal(t, 1.0, x[0], "a zero shift leaves the images")
	require.Panics(t, func() { s.Apply(x[:15], 1) })
}
