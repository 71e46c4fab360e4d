package datasets

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/deqgo/deq/internal/enum"
)

// Corruption selects one corruption of the suite Corrupt applies, in the
// spirit of MNIST-C (Mu and Gilmer, "MNIST-C: A Robustness Benchmark for
// Computer Vision", 2019). Every corruption maps an image with pixels in
// [0, 1] (ink bright on a dark background, as in MNIST) to another in
// [0, 1]; its parameters are drawn per image from a stream seeded by the
// seed, the corruption and the image's index, so the corrupted set is a
// function of the set and the seed alone. The suite holds no identity: every
// corruption changes every image that has ink (the noise and clutter ones
// change blank images too). The zero value names no corruption: Corrupt
// refuses it.
//
// Affine changes (bilinear interpolation, background outside the frame),
// about the image centre:
//
//   - Shear: a horizontal shear by a factor of ±0.3 to ±0.6.
//   - Rotate: a rotation by ±20° to ±40°.
//   - Scale: a shrink to 0.55–0.75 of the size.
//   - Translate: a shift by 3 to 5 pixels in a random direction.
//
// Noise:
//
//   - ShotNoise: Poisson noise, each pixel p replaced by Poisson(60p)/60.
//   - ImpulseNoise: salt-and-pepper noise; 10% of the pixels set to 0 or 1.
//   - GaussianNoise: additive noise of standard deviation 0.25.
//
// Blur:
//
//   - GlassBlur: a Gaussian blur (σ = 0.7), two passes of swapping each
//     pixel with a random neighbour at most one pixel away, and the blur
//     again.
//   - MotionBlur: the mean along a line of 5 to 9 pixels at a random angle.
//
// Stroke changes (grey morphology, background outside the frame):
//
//   - Dilate: the maximum over the pixel and its four neighbours.
//   - Erode: the minimum over the pixel and its four neighbours.
//   - Thicken: two dilations by the 3×3 square.
//
// Intensity:
//
//   - Brightness: every pixel raised by 0.3 to 0.5.
//   - Stripe: a vertical band 4 to 6 pixels wide inverted (p → 1 − p).
//   - Fog: smooth noise (random values on 4×4 and 7×7 grids, bilinearly
//     upsampled, weights 2/3 and 1/3) of amplitude 0.35 to 0.5, added.
//
// Clutter (ink added with max, so the digit stays):
//
//   - DottedLine: a straight line across the image drawn as dots every 3
//     pixels.
//   - Zigzag: a polyline of 3 to 5 segments alternating in direction.
//   - Spatter: 4 to 8 blobs of radius 0.8 to 1.8 pixels.
//   - CannyEdges: the digit replaced by its edges (a Canny detector: a
//     Gaussian blur, Sobel gradients, non-maximum suppression and
//     hysteresis between 0.1 and 0.3 of the largest gradient).
type Corruption int

// The corruptions of the suite (see Corruption).
const (
	Shear Corruption = iota + 1
	Rotate
	Scale
	Translate
	ShotNoise
	ImpulseNoise
	GaussianNoise
	GlassBlur
	MotionBlur
	Dilate
	Erode
	Thicken
	Brightness
	Stripe
	Fog
	DottedLine
	Zigzag
	Spatter
	CannyEdges
)

// ErrUnknownCorruption is wrapped by the error of ParseCorruption.
var ErrUnknownCorruption = errors.New("unknown corruption")

var corruptions = enum.Table[Corruption]{
	Names: []string{
		"",
		"shear", "rotate", "scale", "translate",
		"shot_noise", "impulse_noise", "gaussian_noise",
		"glass_blur", "motion_blur",
		"dilate", "erode", "thicken",
		"brightness", "stripe", "fog",
		"dotted_line", "zigzag", "spatter", "canny_edges",
	},
	Unknown: ErrUnknownCorruption,
}

// String returns the corruption's name ("shot_noise", for example).
func (c Corruption) String() string { return corruptions.Name(c) }

// MarshalText implements encoding.TextMarshaler with the name.
func (c Corruption) MarshalText() ([]byte, error) { return corruptions.MarshalText(c) }

// ParseCorruption returns the corruption named s (see Corruption.String).
func ParseCorruption(s string) (Corruption, error) {
	c, err := corruptions.Parse(s)
	if err == nil && c == 0 {
		err = fmt.Errorf("%w %q", ErrUnknownCorruption, s)
	}
	if err != nil {
		return 0, fmt.Errorf("datasets: %w", err)
	}
	return c, nil
}

// Corruptions returns every corruption of the suite, in order (not the
// zero value).
func Corruptions() []Corruption { return corruptions.Values()[1:] }

// CorruptionNames returns the names of Corruptions, in order.
func CorruptionNames() []string {
	names := make([]string, len(corruptions.Names)-1)
	copy(names, corruptions.Names[1:])
	return names
}

// streamCorrupt separates the corruption draws from the other streams of a
// seed; the corruption is added to it.
const streamCorrupt = 0x5b1c_0de5_7a11_0100

// Corrupt returns a copy of ds with corruption c applied to every image
// (see Corruption), its parameters drawn from seed. The labels, shape and
// name (with "/" and c's name appended) carry over. ds's pixels must lie in
// [0, 1] (unnormalised); the error names the first that does not. Corrupt
// stops with ctx's error when ctx is done.
func Corrupt(ctx context.Context, ds *Dataset, c Corruption, seed uint64) (*Dataset, error) {
	if err := corruptions.Check(c); err != nil || c == 0 {
		return nil, fmt.Errorf("datasets: Corrupt: %d is not a corruption (see Corruptions)", int(c))
	}
	if ds == nil || ds.Rows <= 0 || ds.Cols <= 0 || len(ds.X) != ds.Len()*ds.Dim() {
		return nil, errors.New("datasets: Corrupt: empty or inconsistent data set")
	}
	for i, v := range ds.X {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("datasets: Corrupt: %s: pixel %d of image %d is %v, outside [0, 1] (normalised data?)",
				ds.Name, i%ds.Dim(), i/ds.Dim(), v)
		}
	}
	out := &Dataset{
		Name:    strings.TrimSuffix(ds.Name, "/") + "/" + c.String(),
		Rows:    ds.Rows,
		Cols:    ds.Cols,
		Classes: ds.Classes,
		X:       make([]float64, len(ds.X)),
		Y:       append([]int(nil), ds.Y...),
	}
	k := newCorrupter(ds.Rows, ds.Cols)
	for i := range ds.Len() {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		seedPCG(&k.pcg, seed, streamCorrupt+uint64(c), uint64(i))
		k.apply(c, out.Image(i), ds.Image(i))
	}
	return out, nil
}

// corrupter holds the random stream and the scratch images of Corrupt.
type corrupter struct {
	rows, cols int
	pcg        rand.PCG
	rng        *rand.Rand
	// a, b, gx, gy and mag are scratch images.
	a, b, gx, gy, mag []float64
	// stack holds pixel indices for the hysteresis of canny.
	stack []int
}

func newCorrupter(rows, cols int) *corrupter {
	n := rows * cols
	k := &corrupter{rows: rows, cols: cols, stack: make([]int, 0, n)}
	for _, p := range []*[]float64{&k.a, &k.b, &k.gx, &k.gy, &k.mag} {
		*p = make([]float64, n)
	}
	k.rng = rand.New(&k.pcg)
	return k
}

// uniform returns a draw from [lo, hi).
func (k *corrupter) uniform(lo, hi float64) float64 { return lo + (hi-lo)*k.rng.Float64() }

// sign returns −1 or +1 with equal probability.
func (k *corrupter) sign() float64 {
	if k.rng.IntN(2) == 0 {
		return -1
	}
	return 1
}

// apply writes src corrupted by c to dst, clamped to [0, 1].
func (k *corrupter) apply(c Corruption, dst, src []float64) {
	switch c {
	case Shear:
		s := k.sign() * k.uniform(0.3, 0.6)
		k.affine(dst, src, 1, 0, s, 1, 0, 0)
	case Rotate:
		t := k.sign() * k.uniform(20, 40) * math.Pi / 180
		sin, cos := math.Sincos(t)
		k.affine(dst, src, cos, -sin, sin, cos, 0, 0)
	case Scale:
		s := k.uniform(0.55, 0.75)
		k.affine(dst, src, 1/s, 0, 0, 1/s, 0, 0)
	case Translate:
		d, t := k.uniform(3, 5), k.uniform(0, 2*math.Pi)
		sin, cos := math.Sincos(t)
		k.affine(dst, src, 1, 0, 0, 1, d*sin, d*cos)
	case ShotNoise:
		k.shotNoise(dst, src, 60)
	case ImpulseNoise:
		k.impulseNoise(dst, src, 0.1)
	case GaussianNoise:
		for i, v := range src {
			dst[i] = v + 0.25*k.rng.NormFloat64()
		}
	case GlassBlur:
		k.glassBlur(dst, src)
	case MotionBlur:
		k.motionBlur(dst, src)
	case Dilate:
		k.morphPlus(dst, src, true)
	case Erode:
		k.morphPlus(dst, src, false)
	case Thicken:
		k.morphSquare(k.a, src)
		k.morphSquare(dst, k.a)
	case Brightness:
		b := k.uniform(0.3, 0.5)
		for i, v := range src {
			dst[i] = v + b
		}
	case Stripe:
		k.stripe(dst, src)
	case Fog:
		k.fog(dst, src)
	case DottedLine:
		k.dottedLine(dst, src)
	case Zigzag:
		k.zigzag(dst, src)
	case Spatter:
		k.spatter(dst, src)
	case CannyEdges:
		k.canny(dst, src)
	}
	for i, v := range dst {
		dst[i] = min(max(v, 0), 1)
	}
}

// at returns pixel (r, c) of img, 0 outside the frame.
func (k *corrupter) at(img []float64, r, c int) float64 {
	if r < 0 || r >= k.rows || c < 0 || c >= k.cols {
		return 0
	}
	return img[r*k.cols+c]
}
