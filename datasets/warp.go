package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// streamWarp separates the draws of the rotations and scalings from the
// other streams derived from one seed.
const streamWarp = 0x5b1c_0de5_7a11_0005

// Warper augments batches of images by random rotations and scalings about
// the image centre: each image is rotated by an angle drawn uniformly from
// [−MaxDegrees, MaxDegrees] and scaled by a factor drawn uniformly from
// [1 − MaxScale, 1 + MaxScale], by bilinear interpolation (see Warp), the
// pixels brought in from outside the frame set to zero (the background of
// the digit and clothing images, before standardisation), the label left
// as it is. The angles and factors come from a stream seeded by the seed
// passed to Apply alone, so that the same seed gives the same warps.
//
// After NewWarper, Apply allocates nothing. A Warper is not safe for
// concurrent use.
type Warper struct {
	rows, cols         int
	maxDegrees, maxScl float64
	buf                []float64
	pcg                rand.PCG
	rng                *rand.Rand
}

// NewWarper returns a Warper of rows×cols images by rotations of at most
// maxDegrees degrees either way and scalings by at most maxScale relative
// to the original size (0.1: factors in [0.9, 1.1]). It returns an error,
// naming the argument, unless rows and cols are positive,
// 0 ≤ maxDegrees < 180 and 0 ≤ maxScale < 1.
func NewWarper(rows, cols int, maxDegrees, maxScale float64) (*Warper, error) {
	switch {
	case rows <= 0 || cols <= 0:
		return nil, fmt.Errorf("datasets: warp of %d×%d images: shape is not positive", rows, cols)
	case !(maxDegrees >= 0 && maxDegrees < 180):
		return nil, fmt.Errorf("datasets: warp of %d×%d images: maxDegrees = %g: want 0 ≤ maxDegrees < 180", rows, cols, maxDegrees)
	case !(maxScale >= 0 && maxScale < 1):
		return nil, fmt.Errorf("datasets: warp of %d×%d images: maxScale = %g: want 0 ≤ maxScale < 1", rows, cols, maxScale)
	}
	w := &Warper{rows: rows, cols: cols, maxDegrees: maxDegrees, maxScl: maxScale, buf: make([]float64, rows*cols)}
	w.rng = rand.New(&w.pcg)
	return w, nil
}

// MaxDegrees returns the largest rotation in degrees.
func (w *Warper) MaxDegrees() float64 { return w.maxDegrees }

// MaxScale returns the largest relative change of scale.
func (w *Warper) MaxScale() float64 { return w.maxScl }

// Apply rotates and scales, in place, each image of x (row-major images of
// rows·cols pixels one after the other) by its own random angle and
// factor, drawn in that order, image after image, from the stream of
// seed. With both maxima zero it leaves x as it is. It panics if len(x) is
// not a multiple of rows·cols.
func (w *Warper) Apply(x []float64, seed uint64) {
	dim := w.rows * w.cols
	if len(x)%dim != 0 {
		panic(fmt.Sprintf("datasets: Warper.Apply: %d pixels are not whole %d×%d images", len(x), w.rows, w.cols))
	}
	if w.maxDegrees == 0 && w.maxScl == 0 {
		return
	}
	seedPCG(&w.pcg, seed, streamWarp, 0)
	for i := 0; i < len(x); i += dim {
		degrees := w.maxDegrees * (2*w.rng.Float64() - 1)
		scale := 1 + w.maxScl*(2*w.rng.Float64()-1)
		img := x[i : i+dim]
		copy(w.buf, img)
		Warp(img, w.buf, w.rows, w.cols, degrees, scale)
	}
}

// Warp writes into dst the rows×cols image src rotated by degrees
// (positive: counterclockwise as displayed, row 0 at the top) and scaled
// by the factor scale (above 1: enlarged), both about the image centre
// ((rows−1)/2, (cols−1)/2). It maps inversely: each pixel of dst is src
// sampled by bilinear interpolation at the position that the rotation and
// scaling carry onto that pixel, with src taken as zero outside its
// frame. An angle of zero and a scale of one copy src. dst and src must
// not overlap; Warp panics if either does not hold rows·cols pixels or if
// scale is not positive.
func Warp(dst, src []float64, rows, cols int, degrees, scale float64) {
	if len(dst) != rows*cols || len(src) != rows*cols {
		panic(fmt.Sprintf("datasets: Warp: %d and %d pixels for a %d×%d image", len(dst), len(src), rows, cols))
	}
	if !(scale > 0) || math.IsInf(scale, 1) {
		panic(fmt.Sprintf("datasets: Warp: scale %g is not positive and finite", scale))
	}
	sin, cos := math.Sincos(degrees * math.Pi / 180)
	sin, cos = sin/scale, cos/scale
	cr, cc := float64(rows-1)/2, float64(cols-1)/2
	for r := range rows {
		dy := float64(r) - cr
		for c := range cols {
			dx := float64(c) - cc
			// The inverse map: a rotation by −degrees and a scaling by
			// 1/scale of the offset from the centre (rows grow
			// downwards, hence the signs).
			sx := cc + dx*cos - dy*sin
			sy := cr + dx*sin + dy*cos
			dst[r*cols+c] = bilinear(src, rows, cols, sy, sx)
		}
	}
}

// bilinear returns the rows×cols image src interpolated bilinearly at row
// y and column x, zero outside its frame.
func bilinear(src []float64, rows, cols int, y, x float64) float64 {
	if !(y > -1 && y < float64(rows) && x > -1 && x < float64(cols)) {
		return 0
	}
	fy, fx := math.Floor(y), math.Floor(x)
	r0, c0 := int(fy), int(fx)
	wy, wx := y-fy, x-fx
	at := func(r, c int) float64 {
		if r < 0 || r >= rows || c < 0 || c >= cols {
			return 0
		}
		return src[r*cols+c]
	}
	top := (1-wx)*at(r0, c0) + wx*at(r0, c0+1)
	bottom := (1-wx)*at(r0+1, c0) + wx*at(r0+1, c0+1)
	return (1-wy)*top + wy*bottom
}
