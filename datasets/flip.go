package datasets

import (
	"fmt"
	"math/rand/v2"
)

// streamFlip separates the draws of the mirrorings from the other streams
// derived from one seed.
const streamFlip = 0x5b1c_0de5_7a11_0006

// Flipper augments batches of images by random mirrorings: each image is
// reflected left to right with probability one half, the label left as it
// is. It suits images whose classes are symmetric under that reflection
// (clothing), not digits. The draws come from a stream seeded by the seed
// passed to Apply alone, so that the same seed gives the same mirrorings.
//
// Apply allocates nothing. A Flipper is not safe for concurrent use.
type Flipper struct {
	rows, cols int
	pcg        rand.PCG
	rng        *rand.Rand
}

// NewFlipper returns a Flipper of rows×cols images. It returns an error
// unless rows and cols are positive.
func NewFlipper(rows, cols int) (*Flipper, error) {
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("datasets: flip of %d×%d images: shape is not positive", rows, cols)
	}
	f := &Flipper{rows: rows, cols: cols}
	f.rng = rand.New(&f.pcg)
	return f, nil
}

// Apply mirrors, in place, each image of x (row-major images of rows·cols
// pixels one after the other) with probability one half, the coins drawn
// in order from the stream of seed. It panics if len(x) is not a multiple
// of rows·cols.
func (f *Flipper) Apply(x []float64, seed uint64) {
	dim := f.rows * f.cols
	if len(x)%dim != 0 {
		panic(fmt.Sprintf("datasets: Flipper.Apply: %d pixels are not whole %d×%d images", len(x), f.rows, f.cols))
	}
	seedPCG(&f.pcg, seed, streamFlip, 0)
	for i := 0; i < len(x); i += dim {
		if f.rng.Uint64()&1 == 1 {
			Mirror(x[i:i+dim], f.rows, f.cols)
		}
	}
}

// Mirror reflects the rows×cols image img left to right in place:
// img[r, c] and img[r, cols−1−c] swap. It panics if img does not hold
// rows·cols pixels.
func Mirror(img []float64, rows, cols int) {
	if len(img) != rows*cols {
		panic(fmt.Sprintf("datasets: Mirror: %d pixels for a %d×%d image", len(img), rows, cols))
	}
	for r := range rows {
		row := img[r*cols : (r+1)*cols]
		for i, j := 0, cols-1; i < j; i, j = i+1, j-1 {
			row[i], row[j] = row[j], row[i]
		}
	}
}
