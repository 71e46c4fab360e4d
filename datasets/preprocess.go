package datasets

import (
	"errors"
	"fmt"
	"image"
	"math"
	"slices"
)

// The geometry of Preprocess's output: MNIST's.
const (
	// PreprocessSize is the side of the square image Preprocess returns.
	PreprocessSize = 28
	// PreprocessBox is the side of the square the digit's bounding box is
	// scaled to fit.
	PreprocessBox = 20
	// InkFloor is the ink level, relative to the image's darkest-to-
	// brightest contrast, below which a pixel counts as background.
	InkFloor = 0.05
	// BoxFloor is the ink level, relative as InkFloor, from which a pixel
	// with a neighbour as bright counts in the digit's bounding box.
	BoxFloor = 0.25
)

// ErrNoInk is matched by errors.Is for the error of Preprocess on an image
// without contrast: blank, or empty.
var ErrNoInk = errors.New("no ink")

// PreprocessOptions control Preprocess. The zero value applies the whole
// MNIST-style normalisation.
type PreprocessOptions struct {
	// AsIs takes an image that is already PreprocessSize×PreprocessSize as
	// it is, after the greyscale conversion and the polarity: no
	// background removal, size normalisation or centring (the images of
	// MNIST-style data sets, and those written from them, are normalised
	// already). Images of other sizes are normalised anyway.
	AsIs bool
}

// Preprocess converts img into the input of a model trained on MNIST-style
// digits: PreprocessSize² greyscale pixels in [0, 1], row-major, ink bright
// on a dark background. It follows the normalisation of the MNIST images
// (LeCun et al.):
//
//  1. Greyscale: each pixel's luminance 0.299 R + 0.587 G + 0.114 B,
//     composited over white where it is transparent.
//  2. Polarity: MNIST's ink is bright on black. When the median of the
//     image's border pixels is above 0.5 (dark ink on a light background,
//     as on paper), the image is inverted.
//  3. Background: the border median is subtracted, the result scaled so
//     that the brightest pixel is 1, and pixels below InkFloor set to 0.
//     An image whose brightest pixel is within InkFloor of the background
//     has no digit: the error matches ErrNoInk.
//  4. Size: the bounding box of the ink — of the pixels at least BoxFloor
//     with at least one of their eight neighbours as bright, so that
//     isolated specks of noise do not count — is scaled, preserving its
//     aspect ratio, so that its longer side is PreprocessBox pixels, each
//     output pixel the average of the area it covers (anti-aliased), and
//     scaled again so that the brightest is 1.
//  5. Centring: the scaled box is placed in the PreprocessSize² frame so
//     that its centre of mass falls on pixel (14, 14), 0-based, where
//     MNIST's digits have theirs (to the nearest pixel); ink pushed outside
//     the frame is dropped.
//
// opts may be nil (the zero PreprocessOptions).
func Preprocess(img image.Image, opts *PreprocessOptions) ([]float64, error) {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("datasets: Preprocess: empty image (%d×%d): %w", w, h, ErrNoInk)
	}
	g := greyscale(img)
	bg := borderMedian(g, w, h)
	if bg > 0.5 {
		for i, v := range g {
			g[i] = 1 - v
		}
		bg = 1 - bg
	}
	if opts != nil && opts.AsIs && w == PreprocessSize && h == PreprocessSize {
		return g, nil
	}
	peak := 0.0
	for _, v := range g {
		peak = max(peak, v-bg)
	}
	if peak <= InkFloor {
		return nil, fmt.Errorf("datasets: Preprocess: a %d×%d image without contrast (brightest ink %.3g above the background): %w", w, h, peak, ErrNoInk)
	}
	for i, v := range g {
		if v = (v - bg) / peak; v < InkFloor {
			v = 0
		}
		g[i] = v
	}
	x0, y0, x1, y1 := inkBox(g, w, h)
	bw, bh := x1-x0+1, y1-y0+1
	scale := float64(PreprocessBox) / float64(max(bw, bh))
	ow := min(PreprocessBox, max(1, int(math.Round(float64(bw)*scale))))
	oh := min(PreprocessBox, max(1, int(math.Round(float64(bh)*scale))))
	box := resampleArea(g, w, x0, y0, bw, bh, ow, oh)
	top := 0.0
	for _, v := range box {
		top = max(top, v)
	}
	for i := range box {
		box[i] /= top
	}
	return centre(box, ow, oh), nil
}

// inkBox returns the bounding box (inclusive) of the pixels of the w×h
// image g at least BoxFloor with a neighbour at least BoxFloor, or of the
// pixels at least BoxFloor if none has such a neighbour.
func inkBox(g []float64, w, h int) (x0, y0, x1, y1 int) {
	at := func(x, y int) bool { return x >= 0 && x < w && y >= 0 && y < h && g[y*w+x] >= BoxFloor }
	for _, needNeighbour := range []bool{true, false} {
		x0, y0, x1, y1 = w, h, -1, -1
		for y := range h {
			for x := range w {
				if !at(x, y) {
					continue
				}
				if needNeighbour && !(at(x-1, y-1) || at(x, y-1) || at(x+1, y-1) || at(x-1, y) ||
					at(x+1, y) || at(x-1, y+1) || at(x, y+1) || at(x+1, y+1)) {
					continue
				}
				x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
			}
		}
		if x1 >= 0 {
			return x0, y0, x1, y1
		}
	}
	return x0, y0, x1, y1
}

// greyscale returns the luminance of img's pixels in [0, 1], row-major,
// composited over white.
func greyscale(img image.Image) []float64 {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	g := make([]float64, w*h)
	for y := range h {
		for x := range w {
			// RGBA returns alpha-premultiplied 16-bit values.
			r, gr, bl, a := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
			lum := 0.299*float64(r) + 0.587*float64(gr) + 0.114*float64(bl)
			g[y*w+x] = min(1, (lum+float64(0xffff-a))/0xffff)
		}
	}
	return g
}

// borderMedian returns the median of the pixels on the border of the w×h
// image g.
func borderMedian(g []float64, w, h int) float64 {
	var border []float64
	for x := range w {
		border = append(border, g[x], g[(h-1)*w+x])
	}
	for y := 1; y < h-1; y++ {
		border = append(border, g[y*w], g[y*w+w-1])
	}
	slices.Sort(border)
	return border[len(border)/2]
}

// resampleArea returns the bw×bh box at (x0, y0) of the image g of width w
// resampled to ow×oh pixels, each the mean of g over the area it covers.
func resampleArea(g []float64, w, x0, y0, bw, bh, ow, oh int) []float64 {
	wx := areaWeights(bw, ow)
	wy := areaWeights(bh, oh)
	// Rows first: tmp is bh×ow.
	tmp := make([]float64, bh*ow)
	for y := range bh {
		row := g[(y0+y)*w+x0 : (y0+y)*w+x0+bw]
		for _, t := range wx {
			tmp[y*ow+t.out] += t.w * row[t.in]
		}
	}
	out := make([]float64, oh*ow)
	for _, t := range wy {
		for x := range ow {
			out[t.out*ow+x] += t.w * tmp[t.in*ow+x]
		}
	}
	return out
}

// areaWeight is the share w of input pixel in in output pixel out.
type areaWeight struct {
	in, out int
	w       float64
}

// areaWeights returns the weights of the area resampling of n pixels to m:
// output pixel j covers the input interval [j·n/m, (j+1)·n/m) and takes
// the mean over it.
func areaWeights(n, m int) []areaWeight {
	var ws []areaWeight
	step := float64(n) / float64(m)
	for j := range m {
		lo, hi := float64(j)*step, float64(j+1)*step
		for i := int(math.Floor(lo)); i < n && float64(i) < hi; i++ {
			if ov := min(hi, float64(i+1)) - max(lo, float64(i)); ov > 0 {
				ws = append(ws, areaWeight{i, j, ov / step})
			}
		}
	}
	return ws
}

// centre places the ow×oh box in a PreprocessSize² frame with its centre
// of mass at pixel (PreprocessSize/2, PreprocessSize/2), to the nearest
// pixel, as in MNIST.
func centre(box []float64, ow, oh int) []float64 {
	var mass, my, mx float64
	for y := range oh {
		for x := range ow {
			v := box[y*ow+x]
			mass += v
			my += v * float64(y)
			mx += v * float64(x)
		}
	}
	// MNIST's digits have their centre of mass at (14, 14) in 0-based
	// pixel indices, half a pixel below and right of the frame's middle.
	c := float64(PreprocessSize) / 2
	dy, dx := int(math.Round(c-my/mass)), int(math.Round(c-mx/mass))
	out := make([]float64, PreprocessSize*PreprocessSize)
	for y := range oh {
		for x := range ow {
			ty, tx := y+dy, x+dx
			if ty >= 0 && ty < PreprocessSize && tx >= 0 && tx < PreprocessSize {
				out[ty*PreprocessSize+tx] = box[y*ow+x]
			}
		}
	}
	return out
}
