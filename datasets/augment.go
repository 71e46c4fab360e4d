package datasets

import (
	"fmt"
	"math/rand/v2"
)

// streamAugment separates the augmentation draws from the other streams
// derived from one seed.
const streamAugment = 0x5b1c_0de5_7a11_0004

// Shifter augments batches of images by random translations: each image is
// moved by an offset (dy, dx) drawn uniformly from [−Max, Max]², the
// pixels moved in from outside the frame set to zero (the background of
// the digit and clothing images, before standardisation), the label left
// as it is. The offsets come from a stream seeded by the seed passed to
// Apply alone, so that the same seed gives the same translations.
//
// After NewShifter, Apply allocates nothing. A Shifter is not safe for
// concurrent use.
type Shifter struct {
	rows, cols, max int
	buf             []float64
	pcg             rand.PCG
	rng             *rand.Rand
}

// NewShifter returns a Shifter of rows×cols images by at most max pixels
// in each direction. It returns an error unless rows and cols are positive
// and 0 ≤ max < min(rows, cols).
func NewShifter(rows, cols, max int) (*Shifter, error) {
	switch {
	case rows <= 0 || cols <= 0:
		return nil, fmt.Errorf("datasets: shift of %d×%d images: shape is not positive", rows, cols)
	case max < 0 || max >= min(rows, cols):
		return nil, fmt.Errorf("datasets: shift of %d×%d images by %d pixels: want 0 ≤ pixels < %d", rows, cols, max, min(rows, cols))
	}
	s := &Shifter{rows: rows, cols: cols, max: max, buf: make([]float64, rows*cols)}
	s.rng = rand.New(&s.pcg)
	return s, nil
}

// Max returns the largest translation in pixels.
func (s *Shifter) Max() int { return s.max }

// Apply translates, in place, each image of x (row-major images of
// rows·cols pixels one after the other) by its own random offset, drawn
// in order from the stream of seed. It panics if len(x) is not a multiple
// of rows·cols.
func (s *Shifter) Apply(x []float64, seed uint64) {
	dim := s.rows * s.cols
	if len(x)%dim != 0 {
		panic(fmt.Sprintf("datasets: Shifter.Apply: %d pixels are not whole %d×%d images", len(x), s.rows, s.cols))
	}
	if s.max == 0 {
		return
	}
	seedPCG(&s.pcg, seed, streamAugment, 0)
	w := 2*s.max + 1
	for i := 0; i < len(x); i += dim {
		dy, dx := s.rng.IntN(w)-s.max, s.rng.IntN(w)-s.max
		if dy == 0 && dx == 0 {
			continue
		}
		img := x[i : i+dim]
		copy(s.buf, img)
		Shift(img, s.buf, s.rows, s.cols, dy, dx)
	}
}

// Shift writes into dst the rows×cols image src translated by dy rows down
// and dx columns right (negative: up and left): dst[r, c] = src[r−dy, c−dx]
// where that pixel exists and zero elsewhere. dst and src must not
// overlap; Shift panics if either does not hold rows·cols pixels.
func Shift(dst, src []float64, rows, cols, dy, dx int) {
	if len(dst) != rows*cols || len(src) != rows*cols {
		panic(fmt.Sprintf("datasets: Shift: %d and %d pixels for a %d×%d image", len(dst), len(src), rows, cols))
	}
	c0, c1 := max(dx, 0), min(cols, cols+dx) // the columns of dst filled from src
	for r := range rows {
		row := dst[r*cols : (r+1)*cols]
		sr := r - dy
		if sr < 0 || sr >= rows || c0 >= c1 {
			clear(row)
			continue
		}
		clear(row[:c0])
		copy(row[c0:c1], src[sr*cols+c0-dx:sr*cols+c1-dx])
		clear(row[c1:])
	}
}
