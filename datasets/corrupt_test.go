package datasets

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// seeded reports whether c draws from its random stream.
func seeded(c Corruption) bool {
	switch c {
	case Scale, Brightness, Stripe, CannyEdges, Dilate, Erode, Thicken:
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
			require.True(t, slices.Equal(a.X, b.X), "same seed, same images")
			require.Equal(t, ds.Y, a.Y)
			require.Equal(t, ds.Name+"/"+c.String(), a.Name)
			require.True(t, slices.Equal(orig, ds.X), "the input was modified")
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
				require.False(t, slices.Equal(a.X, d.X), "another seed, other images")
			}
			// An image's corruption depends on its index and the seed
			// alone, not on the rest of the set.
			h, err := Corrupt(ctx, ds.Head(5), c, 11)
			require.NoError(t, err)
			require.True(t, slices.Equal(a.X[:5*ds.Dim()], h.X))
		})
	}
}

// TestCorruptGolden pins every corruption's output on 8 synthetic digits
// (seed 7) drawn from seed 11: an FNV-1a hash of the pixels rounded to 16
// bits. A change of a definition or of a random stream changes its hash;
// the table is regenerated only with such a change, by printing got.
func TestCorruptGolden(t *testing.T) {
	want := map[string]string{
		"shot_noise":     "818f729fe9c62f03",
		"impulse_noise":  "337fd032720b53c5",
		"glass_blur":     "0a4e2f4b4c16b9d7",
		"motion_blur":    "8bd440adc14de688",
		"shear":          "f7c10651d27668f5",
		"scale":          "991e4d4074a434be",
		"rotate":         "b47a08ee681c4788",
		"brightness":     "4ff8230f9402c206",
		"translate":      "0c9c2d0be681815b",
		"stripe":         "8f4bbd2a81bd6173",
		"fog":            "2bd816de57c98197",
		"spatter":        "7f7b1a375c25129a",
		"dotted_line":    "7a2dabde6a1625dc",
		"zigzag":         "e767f6369a2f8597",
		"canny_edges":    "25ae8161c198e3d7",
		"gaussian_noise": "c73f42f7b7a59684",
		"dilate":         "a186c6e4645f1c34",
		"erode":          "38c3ec50fe42498f",
		"thicken":        "358c9b1c216afc77",
	}
	ctx := context.Background()
	ds, err := Synthetic(ctx, 8, 7)
	require.NoError(t, err)
	got := map[string]string{}
	for _, c := range Corruptions() {
		out, err := Corrupt(ctx, ds, c, 11)
		require.NoError(t, err)
		h := fnv.New64a()
		var b [2]byte
		for _, v := range out.X {
			binary.LittleEndian.PutUint16(b[:], uint16(math.Round(v*65535)))
			h.Write(b[:])
		}
		got[c.String()] = fmt.Sprintf("%016x", h.Sum64())
	}
	require.Equal(t, want, got)
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

// TestCorruptionGroups checks the composition: MNIST-C's fifteen in its
// order, then the four extras.
func TestCorruptionGroups(t *testing.T) {
	var mnistc []string
	for _, c := range MNISTCCorruptions() {
		require.True(t, c.InMNISTC(), "%v", c)
		mnistc = append(mnistc, c.String())
	}
	require.Equal(t, []string{
		"shot_noise", "impulse_noise", "glass_blur", "motion_blur", "shear",
		"scale", "rotate", "brightness", "translate", "stripe", "fog",
		"spatter", "dotted_line", "zigzag", "canny_edges",
	}, mnistc)
	require.Equal(t, MNISTCCorruptions(), Corruptions()[:15])
	for _, c := range Corruptions()[15:] {
		require.False(t, c.InMNISTC(), "%v", c)
	}
	require.Equal(t, []string{"gaussian_noise", "dilate", "erode", "thicken"}, CorruptionNames()[15:])
	require.False(t, Corruption(0).InMNISTC())
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

// TestCorruptSmallImages checks that every corruption accepts images
// smaller than MNIST-C's constants assume (and larger ones) and keeps its
// pixels in [0, 1].
func TestCorruptSmallImages(t *testing.T) {
	ctx := context.Background()
	for _, shape := range [][2]int{{1, 1}, {2, 3}, {5, 4}, {9, 7}, {30, 31}} {
		rows, cols := shape[0], shape[1]
		ds := &Dataset{Name: "s", Rows: rows, Cols: cols, Classes: 2, X: make([]float64, 2*rows*cols), Y: []int{0, 1}}
		for i := range ds.X {
			ds.X[i] = float64(i%5) / 4
		}
		for _, c := range Corruptions() {
			out, err := Corrupt(ctx, ds, c, 3)
			require.NoError(t, err, "%v %d×%d", c, rows, cols)
			for i, v := range out.X {
				require.True(t, v >= 0 && v <= 1, "%v %d×%d: pixel %d is %v", c, rows, cols, i, v)
			}
		}
	}
}

func TestCorruptCanceled(t *testing.T) {
	ds, err := Synthetic(context.Background(), 3, 7)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Corrupt(ctx, ds, Rotate, 1)
	require.ErrorIs(t, err, context.Canceled)
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
