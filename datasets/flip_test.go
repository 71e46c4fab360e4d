package datasets

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMirror(t *testing.T) {
	for _, tc := range []struct {
		rows, cols int
		img, want  []float64
	}{
		{3, 4, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, []float64{4, 3, 2, 1, 8, 7, 6, 5, 12, 11, 10, 9}},
		{2, 3, []float64{1, 2, 3, 4, 5, 6}, []float64{3, 2, 1, 6, 5, 4}},
		{2, 1, []float64{1, 2}, []float64{1, 2}},
	} {
		got := slices.Clone(tc.img)
		Mirror(got, tc.rows, tc.cols)
		require.Equal(t, tc.want, got, "%d×%d", tc.rows, tc.cols)
		Mirror(got, tc.rows, tc.cols)
		require.Equal(t, tc.img, got, "mirrored twice, %d×%d", tc.rows, tc.cols)
	}
	require.Panics(t, func() { Mirror(make([]float64, 11), 3, 4) })
}

func TestFlipperMirrorsAboutHalf(t *testing.T) {
	const n = 2000
	d := randomImages(n, 6, 5, 3, 11)
	f, err := NewFlipper(6, 5)
	require.NoError(t, err)
	got := slices.Clone(d.X)
	f.Apply(got, 7)
	again := slices.Clone(d.X)
	f.Apply(again, 7)
	require.Equal(t, got, again, "the same seed must give the same mirrorings")
	other := slices.Clone(d.X)
	f.Apply(other, 8)
	require.NotEqual(t, got, other, "another seed must give other mirrorings")

	flipped := 0
	for i := range n {
		orig, img := d.X[i*30:(i+1)*30], got[i*30:(i+1)*30]
		if slices.Equal(orig, img) {
			continue
		}
		m := slices.Clone(orig)
		Mirror(m, 6, 5)
		require.Equal(t, m, img, "image %d is neither itself nor its mirror", i)
		flipped++
	}
	// Binomial(2000, 1/2): standard deviation 22.4; five of them.
	require.InDelta(t, n/2, flipped, 112, "mirrored images")
	require.Equal(t, 0.0, testing.AllocsPerRun(10, func() { f.Apply(got, 9) }))
	require.Panics(t, func() { f.Apply(make([]float64, 31), 1) })
}

func TestNewFlipperRefusesShape(t *testing.T) {
	for _, s := range [][2]int{{0, 5}, {5, 0}, {-1, 3}} {
		_, err := NewFlipper(s[0], s[1])
		require.Error(t, err, "%v", s)
	}
}
