package datasets

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The tests of this file check each corruption against its definition in
// Corruption's documentation, on 28×28 images.

// corruptOne returns image i of n copies of img corrupted by c from seed.
func corruptOne(t *testing.T, c Corruption, img []float64, n int, seed uint64) [][]float64 {
	t.Helper()
	ds := &Dataset{Name: "t", Rows: 28, Cols: 28, Classes: 1, Y: make([]int, n)}
	for range n {
		ds.X = append(ds.X, img...)
	}
	out, err := Corrupt(context.Background(), ds, c, seed)
	require.NoError(t, err)
	imgs := make([][]float64, n)
	for i := range n {
		imgs[i] = out.Image(i)
	}
	return imgs
}

// TestCorruptAffine checks the inverse maps of the affine corruptions on a
// linear ramp, which bilinear interpolation reproduces exactly: a pixel
// whose source position (r, c) lies inside the frame must read the ramp at
// (r, c), for one of the corruption's signs, and every sign must occur.
func TestCorruptAffine(t *testing.T) {
	ramp := func(r, c float64) float64 { return (r + 2*c) / 100 }
	img := make([]float64, 28*28)
	for r := range 28 {
		for c := range 28 {
			img[r*28+c] = ramp(float64(r), float64(c))
		}
	}
	type mapFn func(dr, dc float64) (float64, float64)
	sincos := func(s float64) (float64, float64) { return math.Sincos(s) }
	shear := func(s float64) mapFn {
		sin, cos := sincos(s)
		return func(dr, dc float64) (float64, float64) { return cos * dr, dc - sin*dr }
	}
	rotate := func(s float64) mapFn {
		sin, cos := sincos(s)
		return func(dr, dc float64) (float64, float64) { return cos*dr + sin*dc, cos*dc - sin*dr }
	}
	translate := func(tr, tc float64) mapFn {
		return func(dr, dc float64) (float64, float64) { return dr + tr, dc + tc }
	}
	for _, tc := range []struct {
		c    Corruption
		maps []mapFn
	}{
		{Shear, []mapFn{shear(0.4), shear(-0.4)}},
		{Rotate, []mapFn{rotate(0.4), rotate(-0.4)}},
		{Scale, []mapFn{func(dr, dc float64) (float64, float64) { return dr / 0.7, dc / 0.7 }}},
		{Translate, []mapFn{translate(3, 3), translate(3, -3), translate(-3, 3), translate(-3, -3)}},
	} {
		t.Run(tc.c.String(), func(t *testing.T) {
			seen := make([]bool, len(tc.maps))
			for i, out := range corruptOne(t, tc.c, img, 40, 5) {
				match := -1
				for j, m := range tc.maps {
					ok, inside := true, 0
					for r := range 28 {
						for c := range 28 {
							sr, sc := m(float64(r)-13.5, float64(c)-13.5)
							sr, sc = sr+13.5, sc+13.5
							if sr < 0 || sr > 27 || sc < 0 || sc > 27 {
								continue
							}
							inside++
							if math.Abs(out[r*28+c]-ramp(sr, sc)) > 1e-9 {
								ok = false
							}
						}
					}
					require.Greater(t, inside, 300)
					if ok {
						match = j
					}
				}
				require.GreaterOrEqual(t, match, 0, "image %d fits none of the maps", i)
				seen[match] = true
			}
			for j, s := range seen {
				require.True(t, s, "map %d never drawn in 40 images", j)
			}
		})
	}
}

// TestCorruptPointwise checks the corruptions defined pixel by pixel.
func TestCorruptPointwise(t *testing.T) {
	img := make([]float64, 28*28)
	for i := range img {
		img[i] = float64(i%17) / 16
	}
	bright := corruptOne(t, Brightness, img, 1, 1)[0]
	stripe := corruptOne(t, Stripe, img, 1, 1)[0]
	for i, p := range img {
		require.InDelta(t, min(p+0.5, 1), bright[i], 1e-15)
		want := p
		if c := i % 28; c < 7 || c >= 21 {
			want = 1 - p
		}
		require.InDelta(t, want, stripe[i], 1e-15, "pixel %d", i)
	}
	for _, out := range corruptOne(t, ShotNoise, img, 10, 1) {
		for i, v := range out {
			require.InDelta(t, math.Round(3*v), 3*v, 1e-12, "shot noise: %v is no multiple of 1/3", v)
			if img[i] == 0 {
				require.Zero(t, v)
			}
		}
	}
	grey := make([]float64, 28*28)
	for i := range grey {
		grey[i] = 0.5
	}
	changed, ones, total := 0, 0, 0
	for _, out := range corruptOne(t, ImpulseNoise, grey, 50, 1) {
		for _, v := range out {
			total++
			if v != 0.5 {
				changed++
				require.True(t, v == 0 || v == 1, "%v", v)
				if v == 1 {
					ones++
				}
			}
		}
	}
	// 39,200 pixels: the fraction flipped has a standard error of 0.0019.
	require.InDelta(t, 0.17, float64(changed)/float64(total), 0.01)
	require.InDelta(t, 0.5, float64(ones)/float64(changed), 0.03)
}

// TestCorruptMotionBlur checks that a single bright pixel is spread along a
// ray leaving it towards the left (angles within ±45° of the columns),
// with weights summing to 1 and the largest, 1/Σ exp(−i²/18), on the
// pixel itself.
func TestCorruptMotionBlur(t *testing.T) {
	img := make([]float64, 28*28)
	img[14*28+20] = 1
	w0 := 0.0
	for i := range 21 {
		w0 += math.Exp(-float64(i*i) / 18)
	}
	w0 = 1 / w0
	for _, out := range corruptOne(t, MotionBlur, img, 20, 1) {
		sum := 0.0
		for i, v := range out {
			sum += v
			if v == 0 {
				continue
			}
			r, c := i/28, i%28
			require.LessOrEqual(t, c, 20)
			require.LessOrEqual(t, math.Abs(float64(r-14)), float64(20-c)+1)
		}
		require.InDelta(t, 1, sum, 1e-12)
		require.InDelta(t, w0, out[14*28+20], 1e-12)
	}
}

// TestCorruptFog checks the plasma map (spanning [0, 1], smooth) and the
// rescaling: a blank image stays blank, and an image whose largest pixel
// is 1 becomes (p + 3P)/4.
func TestCorruptFog(t *testing.T) {
	k := newCorrupter(28, 28)
	seedPCG(&k.pcg, 1, 2, 3)
	k.makePlasma(256, fogDecay)
	lo, hi, step := 1.0, 0.0, 0.0
	for r := range 256 {
		for c := range 256 {
			v := k.plasma[r*256+c]
			lo, hi = min(lo, v), max(hi, v)
			step += math.Abs(v - k.plasma[r*256+(c+1)%256])
		}
	}
	require.Zero(t, lo)
	require.Equal(t, 1.0, hi)
	require.Less(t, step/(256*256), 0.02, "neighbours differ little")
	blank := make([]float64, 28*28)
	for _, out := range corruptOne(t, Fog, blank, 3, 1) {
		require.Equal(t, blank, out)
	}
	img := make([]float64, 28*28)
	img[100], img[200] = 1, 0.5
	for _, out := range corruptOne(t, Fog, img, 5, 1) {
		for i, v := range out {
			require.True(t, v >= img[i]/4-1e-12 && v <= (img[i]+3)/4+1e-12, "pixel %d: %v", i, v)
		}
	}
}

// TestCorruptSpatter checks that every pixel either stays or moves at
// least 80% of the way to the mud's level, 63/255.
func TestCorruptSpatter(t *testing.T) {
	img := make([]float64, 28*28)
	for i := range img {
		img[i] = float64(i%7) / 6
	}
	mud := 0
	for _, out := range corruptOne(t, Spatter, img, 20, 1) {
		for i, v := range out {
			if v != img[i] {
				mud++
				require.LessOrEqual(t, math.Abs(v-63.0/255), 0.2*math.Abs(img[i]-63.0/255)+1e-12, "pixel %d", i)
			}
		}
	}
	require.Positive(t, mud)
}

// TestCorruptLines checks where the dotted line and the zigzag put ink on
// a blank image: the dotted line in every column c < 27 with c mod 4 ∈
// {2, 3} and nowhere else, at most three pixels a column; the zigzag in
// none outside columns 2 to 25, and in every column from 2 to 24 where it
// stays away from the top and bottom rows.
func TestCorruptLines(t *testing.T) {
	blank := make([]float64, 28*28)
	for _, out := range corruptOne(t, DottedLine, blank, 20, 1) {
		for c := range 28 {
			n := 0
			for r := range 28 {
				if out[r*28+c] > 0 {
					n++
				}
			}
			if c < 27 && c%4 >= 2 {
				require.True(t, n >= 1 && n <= 3, "column %d has %d inked pixels", c, n)
			} else {
				require.Zero(t, n, "column %d", c)
			}
		}
	}
	inside := 0
	for _, out := range corruptOne(t, Zigzag, blank, 40, 1) {
		// The polyline may leave the frame near the top and bottom rows;
		// where it stays inside, it inks every column it spans.
		near := false
		for i, v := range out {
			if r := i / 28; v > 0 && (r < 3 || r > 24) {
				near = true
			}
		}
		if !near {
			inside++
		}
		for c := range 28 {
			n := 0
			for r := range 28 {
				if out[r*28+c] > 0 {
					n++
				}
			}
			switch {
			case c >= 2 && c <= 24 && !near:
				require.Positive(t, n, "column %d", c)
			case c < 2 || c > 25:
				require.Zero(t, n, "column %d", c)
			}
		}
	}
	require.Greater(t, inside, 10)
	require.InDelta(t, 1, lineProfile(0), 1e-15)
	require.Zero(t, lineProfile(lineReach))
	require.InDelta(t, 0, lineProfile(lineReach-1e-9), 1e-8)
}

// TestCannyBlank checks that edges of a blank image are blank, that a
// filled square yields its outline only, and that the frame's border is
// never an edge.
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
	edges := 0
	for i, v := range dst {
		edges += int(v)
		if r, c := i/12, i%12; r == 0 || r == 11 || c == 0 || c == 11 {
			require.Zero(t, v, "border pixel (%d, %d)", r, c)
		}
	}
	require.Greater(t, edges, 12, "the outline is found")
	// A square filling the frame has its edges on the border only: none.
	for i := range src {
		src[i] = 1
	}
	k.canny(dst, src)
	require.Equal(t, make([]float64, 144), dst)
}
