package train

import (
	"cmp"
)

// AugmentConfig configures the data augmentation of the training batches
// (see Config.Augment).
type AugmentConfig struct {
	// Shift is the largest random translation, in pixels, of a training
	// image: before standardisation every image of every training batch is
	// moved by an offset (dy, dx) drawn uniformly from [−Shift, Shift]²,
	// zero filling the pixels moved in (datasets.Shifter), with offsets
	// drawn from a stream of Config.Seed and the batch's position, so that
	// runs and resumed runs repeat. Zero means the cell's default; a
	// negative value means none (stored as −1 where the cell's default is
	// a shift, as 0 otherwise). It must be less than the images' side.
	Shift int `json:",omitempty"`
	// Rotate is the largest random rotation, in degrees, of a training
	// image, and Scale the largest random relative change of its size:
	// before standardisation, and before its translation, every image of
	// every training batch is rotated about its centre by an angle drawn
	// uniformly from [−Rotate, Rotate] and scaled by a factor drawn
	// uniformly from [1 − Scale, 1 + Scale], by bilinear interpolation
	// with zero fill (datasets.Warper), the draws from their own stream of
	// Config.Seed and the batch's position, so that runs and resumed runs
	// repeat. Zero means none, for every cell: no cell has a default
	// rotation or scaling, and unlike Shift there is no negative spelling
	// (a negative value is refused). Rotate must be less than 180 and
	// Scale less than 1.
	Rotate float64 `json:",omitempty"`
	// Scale is the largest random relative change of scale of a training
	// image (see Rotate).
	Scale float64 `json:",omitempty"`
	// Flip mirrors every training image left to right with probability
	// one half (datasets.Flipper), after its rotation and scaling and
	// before its translation, the coins drawn from their own stream of
	// Config.Seed and the batch's position, so that runs and resumed runs
	// repeat. It suits classes symmetric under the reflection (clothing),
	// not digits. No cell mirrors by default.
	Flip bool `json:",omitempty"`
}

// defaults fills the defaults of a from the cell's, base (the shift's
// bound by the image size is checked by New).
func (a AugmentConfig) defaults(base AugmentConfig) AugmentConfig {
	d := a
	d.Shift = cmp.Or(a.Shift, base.Shift)
	if d.Shift < 0 {
		d.Shift = 0
		if base.Shift > 0 {
			d.Shift = -1
		}
	}
	return d
}
