package datasets

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/deqgo/deq/internal/enum"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/solver"
)

// Dataset holds N labelled greyscale images as float64 rows.
//
// Image i is X[i·Dim() : (i+1)·Dim()], row-major (Rows rows of Cols
// pixels); its label is Y[i] ∈ [0, Classes). Pixels must be finite. Images
// read from IDX files are scaled to [0, 1] (byte/255) and synthetic ones
// are generated in [0, 1]; a Normalizer may then shift and scale them.
type Dataset struct {
	// Name describes the data (for example "fashion-mnist/train").
	Name string
	// Rows and Cols are the image shape.
	Rows, Cols int
	// Classes is the number of classes.
	Classes int
	// X holds Len()·Dim() pixels.
	X []float64
	// Y holds Len() labels.
	Y []int
}

// Len returns the number of images.
func (d *Dataset) Len() int { return len(d.Y) }

// Dim returns the number of pixels per image, Rows·Cols.
func (d *Dataset) Dim() int { return d.Rows * d.Cols }

// Image returns image i as a slice of X (not a copy).
func (d *Dataset) Image(i int) []float64 {
	n := d.Dim()
	return d.X[i*n : (i+1)*n : (i+1)*n]
}

// Validate reports an inconsistent Dataset: a non-positive shape or class
// count, len(X) ≠ Len()·Dim(), a label outside [0, Classes), or a NaN or
// ±Inf pixel (an error wrapping solver.ErrNonFinite that names the image,
// row and column). NewBatcher and FitNormalizer call it, so that a
// non-finite pixel is refused before it reaches a model.
func (d *Dataset) Validate() error {
	switch {
	case d.Rows <= 0 || d.Cols <= 0:
		return fmt.Errorf("datasets: %s: image shape %d×%d is not positive", d.Name, d.Rows, d.Cols)
	case d.Classes <= 0:
		return fmt.Errorf("datasets: %s: Classes = %d is not positive", d.Name, d.Classes)
	case len(d.X) != len(d.Y)*d.Dim():
		return fmt.Errorf("datasets: %s: len(X) = %d, want Len()·Dim() = %d·%d", d.Name, len(d.X), len(d.Y), d.Dim())
	}
	for i, y := range d.Y {
		if y < 0 || y >= d.Classes {
			return fmt.Errorf("datasets: %s: label %d of image %d outside [0, %d)", d.Name, y, i, d.Classes)
		}
	}
	if !numeric.AllFinite(d.X) {
		dim := d.Dim()
		for k, v := range d.X {
			if v-v != 0 {
				p := k % dim
				return fmt.Errorf("datasets: %s: image %d holds %v at pixel %d (row %d, column %d): %w",
					d.Name, k/dim, v, p, p/d.Cols, p%d.Cols, solver.ErrNonFinite)
			}
		}
	}
	return nil
}

// Histogram returns the number of images of each class.
func (d *Dataset) Histogram() []int {
	h := make([]int, d.Classes)
	for _, y := range d.Y {
		h[y]++
	}
	return h
}

// Head returns the first n images (all of them if n ≤ 0 or n ≥ Len()). The
// result shares X and Y with d.
func (d *Dataset) Head(n int) *Dataset {
	if n <= 0 || n >= d.Len() {
		return d
	}
	h := *d
	h.X = d.X[: n*d.Dim() : n*d.Dim()]
	h.Y = d.Y[:n:n]
	return &h
}

// Subset returns a new Dataset holding copies of the images idx, in that
// order, named name. It panics if an index is out of range.
func (d *Dataset) Subset(name string, idx []int) *Dataset {
	n := d.Dim()
	s := &Dataset{Name: name, Rows: d.Rows, Cols: d.Cols, Classes: d.Classes,
		X: make([]float64, len(idx)*n), Y: make([]int, len(idx))}
	for j, i := range idx {
		copy(s.X[j*n:(j+1)*n], d.Image(i))
		s.Y[j] = d.Y[i]
	}
	return s
}

// ErrValidationSize is wrapped by the error of Split (and so of Open with
// Options.Sizes.Validation) when the validation set would be empty or hold
// every image.
var ErrValidationSize = errors.New("validation size out of range")

// Split holds out a validation set of n images chosen uniformly at random
// by seed; both parts are copies that keep d's order. It returns an error
// wrapping ErrValidationSize unless 0 < n < Len().
func (d *Dataset) Split(n int, seed uint64) (train, val *Dataset, err error) {
	if n <= 0 || n >= d.Len() {
		return nil, nil, fmt.Errorf("datasets: %s: %w: %d outside (0, %d)", d.Name, ErrValidationSize, n, d.Len())
	}
	perm := make([]int, d.Len())
	for i := range perm {
		perm[i] = i
	}
	var pcg rand.PCG
	seedPCG(&pcg, seed, streamSplit, 0)
	rand.New(&pcg).Shuffle(len(perm), func(i, j int) {
		perm[i], perm[j] = perm[j], perm[i]
	})
	vi, ti := perm[:n], perm[n:]
	slices.Sort(vi)
	slices.Sort(ti)
	return d.Subset(d.Name+"/train", ti), d.Subset(d.Name+"/validation", vi), nil
}

// Stream identifiers that separate the random streams derived from one seed.
const (
	streamSplit   = 0x5b1c_0de5_7a11_0001
	streamShuffle = 0x5b1c_0de5_7a11_0002
	streamTest    = 0x5b1c_0de5_7a11_0003
)

// Normalization selects how a Normalizer standardises pixels. The zero
// value, NormDefault, is unset: it selects the default of the
// configuration that holds it (NormNone for Options.Normalize). Its text
// form is "none", "global" or "per-pixel", and "" for NormDefault.
type Normalization int

const (
	// NormDefault, the zero value, selects the default normalisation of
	// the configuration that holds it: NormNone for Options and
	// FitNormalizer.
	NormDefault Normalization = iota
	// NormNone leaves pixels in [0, 1].
	NormNone
	// NormGlobal subtracts the mean of all training pixels and divides by
	// their standard deviation.
	NormGlobal
	// NormPerPixel subtracts each pixel's training mean and divides by its
	// standard deviation, floored at MinStd.
	NormPerPixel
)

// ErrUnknownNormalization is wrapped by the errors of ParseNormalization
// and Normalization.UnmarshalText for a name they do not accept.
var ErrUnknownNormalization = errors.New("datasets: unknown normalization")

// normalizations names the values of Normalization.
var normalizations = enum.Table[Normalization]{
	Names:   []string{"", "none", "global", "per-pixel"},
	Unknown: ErrUnknownNormalization,
	Want:    "global, per-pixel, none",
	Invalid: "datasets: %s is not a normalization",
}

// Normalizations returns the explicit normalisations, NormGlobal,
// NormPerPixel and NormNone (not NormDefault), in the order in which the
// command lists them.
func Normalizations() []Normalization { return []Normalization{NormGlobal, NormPerPixel, NormNone} }

// String returns the name ParseNormalization accepts: "none", "global",
// "per-pixel", or "" for NormDefault.
func (m Normalization) String() string { return normalizations.Name(m) }

// ParseNormalization returns the normalisation named s ("" for
// NormDefault).
func ParseNormalization(s string) (Normalization, error) { return normalizations.Parse(s) }

// MarshalText implements encoding.TextMarshaler with the normalisation's
// name ("" for NormDefault). It returns an error for a value that is not a
// normalisation.
func (m Normalization) MarshalText() ([]byte, error) { return normalizations.MarshalText(m) }

// UnmarshalText implements encoding.TextUnmarshaler with
// ParseNormalization; on error it leaves m alone.
func (m *Normalization) UnmarshalText(text []byte) error {
	return normalizations.UnmarshalText(m, text)
}

// MinStd is the floor on a standard deviation a Normalizer divides by. MNIST
// border pixels are (almost) constant on the training set; dividing by their
// tiny deviation would blow up any test image with ink there.
const MinStd = 0.01

// Normalizer standardises images, x ← (x − Mean)/Std, with statistics
// computed on a training set and applied unchanged to validation and test
// sets. Mean and Std have one entry (global) or Dim() entries (per pixel).
type Normalizer struct {
	Mean, Std []float64
}

// FitNormalizer computes the statistics of mode on train. It returns nil for
// NormNone and NormDefault, and an error for an inconsistent train (see
// Validate: a NaN or ±Inf pixel among others).
func FitNormalizer(train *Dataset, mode Normalization) (*Normalizer, error) {
	if train.Len() == 0 {
		return nil, fmt.Errorf("datasets: %s: cannot fit a normalizer on no images", train.Name)
	}
	if err := train.Validate(); err != nil {
		return nil, err
	}
	n, dim := train.Len(), train.Dim()
	switch mode {
	case NormDefault, NormNone:
		return nil, nil
	case NormGlobal:
		var s, ss float64
		for _, v := range train.X {
			s += v
		}
		mean := s / float64(len(train.X))
		for _, v := range train.X {
			ss += (v - mean) * (v - mean)
		}
		std := math.Max(math.Sqrt(ss/float64(len(train.X))), MinStd)
		return &Normalizer{Mean: []float64{mean}, Std: []float64{std}}, nil
	case NormPerPixel:
		mean := make([]float64, dim)
		std := make([]float64, dim)
		for i := 0; i < n; i++ {
			for j, v := range train.Image(i) {
				mean[j] += v
			}
		}
		for j := range mean {
			mean[j] /= float64(n)
		}
		for i := 0; i < n; i++ {
			for j, v := range train.Image(i) {
				std[j] += (v - mean[j]) * (v - mean[j])
			}
		}
		for j := range std {
			std[j] = math.Max(math.Sqrt(std[j]/float64(n)), MinStd)
		}
		return &Normalizer{Mean: mean, Std: std}, nil
	}
	return nil, fmt.Errorf("datasets: unknown normalization %v", mode)
}

// Apply standardises every image of d in place. A nil Normalizer leaves d
// unchanged. It returns an error, changing nothing, if per-pixel
// statistics do not match d.Dim(), if a mean is not finite or a deviation
// not positive and finite (wrapping solver.ErrNonFinite for a NaN or
// ±Inf), or if d is inconsistent (see Validate).
func (z *Normalizer) Apply(d *Dataset) error {
	if z == nil {
		return nil
	}
	if len(z.Mean) != len(z.Std) || (len(z.Mean) != 1 && len(z.Mean) != d.Dim()) {
		return fmt.Errorf("datasets: %s: normalizer has %d means and %d deviations, want 1 or %d",
			d.Name, len(z.Mean), len(z.Std), d.Dim())
	}
	for j, m := range z.Mean {
		if sd := z.Std[j]; m-m != 0 || sd-sd != 0 {
			return fmt.Errorf("datasets: %s: normalizer Mean[%d] = %v, Std[%d] = %v: %w", d.Name, j, m, j, sd, solver.ErrNonFinite)
		} else if !(sd > 0) {
			return fmt.Errorf("datasets: %s: normalizer Std[%d] = %v must be positive", d.Name, j, sd)
		}
	}
	if err := d.Validate(); err != nil {
		return err
	}
	if len(z.Mean) == 1 {
		m, s := z.Mean[0], z.Std[0]
		for i, v := range d.X {
			d.X[i] = (v - m) / s
		}
		return nil
	}
	for i := 0; i < d.Len(); i++ {
		row := d.Image(i)
		for j, v := range row {
			row[j] = (v - z.Mean[j]) / z.Std[j]
		}
	}
	return nil
}

// fromIDX converts the first n (all if n ≤ 0) images and labels to a
// Dataset scaled to [0, 1].
func fromIDX(name string, im *Images, labels []uint8, classes, n int) *Dataset {
	if n <= 0 || n > im.N {
		n = im.N
	}
	dim := im.Rows * im.Cols
	d := &Dataset{Name: name, Rows: im.Rows, Cols: im.Cols, Classes: classes,
		X: make([]float64, n*dim), Y: make([]int, n)}
	for i, p := range im.Pix[:n*dim] {
		d.X[i] = float64(p) / 255
	}
	for i := range d.Y {
		d.Y[i] = int(labels[i])
	}
	return d
}
