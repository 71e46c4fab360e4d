package datasets

import "math"

// The clutter corruptions of Corruption: MNIST-C's lines and spatter.

// lineWidth is the scale of MNIST-C's line profile: a pixel at vertical
// distance d from a line gets 1 + ln(1 − d/lineWidth), clipped to [0, 1].
const lineWidth = 2.3

// lineReach is the distance from which the line profile is 0:
// lineWidth·(1 − 1/e).
const lineReach = lineWidth * (1 - 1/math.E)

// lineProfile returns the ink of a pixel at vertical distance d ≥ 0 from a
// line.
func lineProfile(d float64) float64 {
	if d >= lineReach {
		return 0
	}
	return min(1, max(0, 1+math.Log(1-d/lineWidth)))
}

// addLine adds to img, clipping at 1, the line through (r0, c0) and
// (r1, c1) drawn with lineProfile in the columns from ⌊c0⌋ up to but not
// including ⌈c1⌉ (only those with column mod 4 ∈ {2, 3} if dashed). A
// vertical line (c0 = c1) adds nothing, as in MNIST-C.
func (k *corrupter) addLine(img []float64, r0, c0, r1, c1 float64, dashed bool) {
	if c1 == c0 {
		return
	}
	slope := (r1 - r0) / (c1 - c0)
	for c := max(0, int(math.Floor(c0))); c < min(k.cols, int(math.Ceil(c1))); c++ {
		if dashed && c%4 < 2 {
			continue
		}
		f := slope*(float64(c)-c0) + r0
		lo := max(0, int(math.Ceil(f-lineReach)))
		hi := min(k.rows-1, int(math.Floor(f+lineReach)))
		for r := lo; r <= hi; r++ {
			i := r*k.cols + c
			img[i] = min(1, img[i]+lineProfile(math.Abs(float64(r)-f)))
		}
	}
}

// dottedLine adds a dashed line across the image (see DottedLine).
func (k *corrupter) dottedLine(dst, src []float64) {
	copy(dst, src)
	n := max(k.rows-1, 1)
	r0, r1 := float64(k.rng.IntN(n)), float64(k.rng.IntN(n))
	k.addLine(dst, r0, 0, r1, float64(k.cols-1), true)
}

// The zigzag's teeth: half-length and amplitude in pixels, and the base's
// margin from the left and right edges.
const (
	zigzagHalf   = 2.0
	zigzagAmp    = 2.0
	zigzagMargin = 2
	zigzagRise   = 5 // the base rises by −zigzagRise to zigzagRise−1 rows
)

// zigzag adds MNIST-C's zigzag (see Zigzag).
func (k *corrupter) zigzag(dst, src []float64) {
	copy(dst, src)
	c0, c1 := float64(zigzagMargin), float64(k.cols-1-zigzagMargin)
	r0 := float64(k.rng.IntN(max(k.rows-1, 1)))
	r1 := r0 + float64(k.rng.IntN(2*zigzagRise)-zigzagRise)
	if c1 <= c0 {
		return
	}
	theta := math.Atan((r1 - r0) / (c1 - c0))
	sin, cos := math.Sincos(theta)
	d := (c1 - c0) / cos
	// vertex carries the point (along, across) of the base's frame to the
	// image.
	vertex := func(along, across float64) (r, c float64) {
		return r0 + sin*along + cos*across, c0 + cos*along - sin*across
	}
	pr, pc := vertex(0, 0)
	teeth := int(math.Floor((d-zigzagHalf)/(2*zigzagHalf))) + 1
	across := 0.0
	for i := range teeth {
		across = zigzagAmp
		if i%2 == 1 {
			across = -zigzagAmp
		}
		r, c := vertex(float64(2*i+1)*zigzagHalf, across)
		k.addLine(dst, pr, pc, r, c, false)
		pr, pc = r, c
	}
	// MNIST-C's last vertex: at the base's end, across it by the last
	// tooth's offset over twice the length left beyond the last whole
	// period.
	if full := 2 * zigzagHalf * math.Floor(d/(2*zigzagHalf)); d != full {
		r, c := vertex(d, across/(2*(d-full)))
		k.addLine(dst, pr, pc, r, c, false)
	}
}

// spatter covers blobs of the image with mud (see Spatter).
func (k *corrupter) spatter(dst, src []float64) {
	for i := range k.a {
		k.a[i] = spatterMean + spatterSD*k.rng.NormFloat64()
	}
	k.gaussBlur(k.a, k.a, spatterSigma, false)
	for i, v := range k.a {
		k.gx[i] = 0
		if v > spatterThreshold {
			k.gx[i] = 1
		}
	}
	k.gaussBlur(k.gx, k.gx, spatterMaskSigma, false)
	for i, v := range src {
		m := k.gx[i]
		if m < spatterMaskCutoff {
			m = 0
		}
		dst[i] = v*(1-m) + spatterLevel*m
	}
}
