package datasets

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// greyImage returns the rows×cols pixels x (in [0, 1]) as an 8-bit image,
// inverted (dark ink on white) if invert.
func greyImage(x []float64, rows, cols int, invert bool) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, cols, rows))
	for i, v := range x {
		if invert {
			v = 1 - v
		}
		img.Pix[i] = uint8(math.Round(255 * v))
	}
	return img
}

// onCanvas returns src scaled up k times (each pixel a k×k block) on a
// w×h canvas of background level bg at (ox, oy), ink drawn as level ink.
func onCanvas(src *image.Gray, k, w, h, ox, oy int, bg, ink float64) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(math.Round(255 * bg))
	}
	sb := src.Bounds()
	for y := range sb.Dy() * k {
		for x := range sb.Dx() * k {
			v := float64(src.GrayAt(x/k, y/k).Y) / 255
			img.SetGray(ox+x, oy+y, color.Gray{Y: uint8(math.Round(255 * (bg + (ink-bg)*v)))})
		}
	}
	return img
}

func viaJPEG(t *testing.T, img image.Image) image.Image {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}))
	out, err := jpeg.Decode(&buf)
	require.NoError(t, err)
	return out
}

// cosine returns the cosine similarity of a and b.
func cosine(a, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += a[i] * b[i]
		aa += a[i] * a[i]
		bb += b[i] * b[i]
	}
	return ab / math.Sqrt(aa*bb)
}

// shiftedCosine returns the largest cosine similarity of the 28×28 images
// a and b shifted by at most one pixel in each direction.
func shiftedCosine(a, b []float64) float64 {
	best := -1.0
	s := make([]float64, len(b))
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			clear(s)
			Shift(s, b, 28, 28, dy, dx)
			best = max(best, cosine(a, s))
		}
	}
	return best
}

// TestPreprocessInvariances checks that a digit shifted, inverted, scaled
// up on a larger canvas, on grey paper or JPEG-compressed is normalised to
// (nearly) the image of the digit itself: exactly for the lossless
// changes, within a cosine similarity of 0.95 for the lossy ones, above
// the similarity of digits of different classes.
func TestPreprocessInvariances(t *testing.T) {
	ds, err := Synthetic(context.Background(), 20, 3)
	require.NoError(t, err)
	worstOther := 0.0
	refs := make([][]float64, ds.Len())
	for i := range ds.Len() {
		// The canonical image: the digit normalised once, as 8 bits.
		c, err := Preprocess(greyImage(ds.Image(i), 28, 28, false), nil)
		require.NoError(t, err)
		canon := greyImage(c, 28, 28, false)
		ref, err := Preprocess(canon, nil)
		require.NoError(t, err)
		refs[i] = ref
		var m, my, mx float64
		for p, v := range ref {
			m, my, mx = m+v, my+v*float64(p/28), mx+v*float64(p%28)
		}
		require.InDelta(t, 14, my/m, 0.5, "centre of mass where MNIST has it")
		require.InDelta(t, 14, mx/m, 0.5, "centre of mass where MNIST has it")
		// Centring to the nearest pixel can move a digit whose centre of
		// mass lies near a half pixel by one.
		require.Greater(t, shiftedCosine(ref, c), 0.98, "normalising a normalised digit keeps it, up to a one-pixel shift")
		shifted := image.NewGray(image.Rect(0, 0, 28, 28))
		for y := range 28 {
			for x := range 28 {
				if y-2 >= 0 && x-2 >= 0 {
					shifted.SetGray(x-2, y-2, canon.GrayAt(x, y))
				} else {
					require.Zero(t, canon.GrayAt(x, y).Y, "the shift crops no ink")
				}
			}
		}
		for _, v := range []struct {
			name  string
			img   image.Image
			exact bool
		}{
			{"shifted", shifted, true},
			{"inverted", greyImage(c, 28, 28, true), true},
			{"larger canvas", onCanvas(canon, 3, 120, 100, 17, 9, 0, 1), true},
			{"dark on grey paper", onCanvas(canon, 3, 120, 100, 30, 5, 0.85, 0.1), false},
			{"jpeg", viaJPEG(t, onCanvas(canon, 3, 120, 100, 17, 9, 1, 0)), false},
		} {
			got, err := Preprocess(v.img, nil)
			require.NoError(t, err, v.name)
			require.Len(t, got, 28*28)
			for _, p := range got {
				require.True(t, p >= 0 && p <= 1, "%s: pixel %v", v.name, p)
			}
			if v.exact {
				require.InDeltaSlice(t, ref, got, 1e-9, "%s, digit %d", v.name, i)
			} else {
				require.Greater(t, cosine(ref, got), 0.95, "%s, digit %d", v.name, i)
			}
		}
	}
	for i := range refs {
		for j := range refs {
			if ds.Y[i] != ds.Y[j] {
				worstOther = max(worstOther, cosine(refs[i], refs[j]))
			}
		}
	}
	t.Logf("largest similarity of digits of different classes: %.3f", worstOther)
	require.Less(t, worstOther, 0.95, "the lossy variants' threshold separates classes")
}

func TestPreprocessAsIsAndErrors(t *testing.T) {
	ds, err := Synthetic(context.Background(), 1, 3)
	require.NoError(t, err)
	img := greyImage(ds.Image(0), 28, 28, false)
	got, err := Preprocess(img, &PreprocessOptions{AsIs: true})
	require.NoError(t, err)
	for i, v := range got {
		require.InDelta(t, float64(img.Pix[i])/255, v, 1e-12)
	}
	inv, err := Preprocess(greyImage(ds.Image(0), 28, 28, true), &PreprocessOptions{AsIs: true})
	require.NoError(t, err)
	require.InDeltaSlice(t, got, inv, 1e-9, "polarity is detected as is too")

	for _, c := range []struct {
		name string
		img  image.Image
	}{
		{"empty", image.NewGray(image.Rect(0, 0, 0, 0))},
		{"black", image.NewGray(image.Rect(0, 0, 30, 30))},
		{"white", onCanvas(image.NewGray(image.Rect(0, 0, 1, 1)), 1, 30, 30, 0, 0, 1, 1)},
		{"transparent", image.NewRGBA(image.Rect(0, 0, 10, 10))},
	} {
		_, err := Preprocess(c.img, nil)
		require.ErrorIs(t, err, ErrNoInk, c.name)
	}
}
