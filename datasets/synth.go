package datasets

import (
	"context"
	"fmt"
	"image"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gobolditalic"
	"golang.org/x/image/font/gofont/goitalic"
	"golang.org/x/image/font/gofont/gomedium"
	"golang.org/x/image/font/gofont/gomediumitalic"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/gofont/gomonobolditalic"
	"golang.org/x/image/font/gofont/gomonoitalic"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"
)

// SynthSize is the side of a synthetic image, in pixels (MNIST's 28).
const SynthSize = 28

// synthBox is the height, in pixels, of an undistorted synthetic digit
// (MNIST digits are size-normalised into a 20×20 box).
const synthBox = 20

// Jitter sets the random distortions of synthetic digits. Every field is
// the bound of an independent uniform draw per image; a zero field disables
// that distortion, and DefaultJitter returns the calibrated defaults.
type Jitter struct {
	// Rotation is the largest rotation, in degrees, either way.
	Rotation float64
	// ScaleMin and ScaleMax bound the digit height relative to 20 pixels.
	// Both zero means 1.
	ScaleMin, ScaleMax float64
	// Aspect is the largest relative stretch of width against height: the
	// width is multiplied by e^a and the height divided by it, |a| ≤ Aspect.
	Aspect float64
	// Shear is the largest horizontal shear (x += shear·y, y pointing down)
	// either way.
	Shear float64
	// Translate is the largest shift, in pixels, along each axis.
	Translate float64
	// StrokeMin and StrokeMax bound the stroke-width change s: s > 0 blends
	// the image towards its 3×3 dilation with weight s (thicker strokes),
	// s < 0 towards its erosion with weight −s (thinner). Within [−1, 1].
	StrokeMin, StrokeMax float64
	// Blur is the largest weight of a 3×3 binomial blur blended in.
	Blur float64
	// InkMin is the smallest ink intensity: the image is multiplied by a
	// factor in [InkMin, 1]. Zero means 1 (full intensity).
	InkMin float64
	// Noise is the largest standard deviation of the Gaussian noise added
	// to every pixel (clamped to [0, 1] afterwards).
	Noise float64
}

// DefaultJitter returns the distortions used by Synthetic and by Open's
// "synthetic" data set, calibrated so that a linear classifier is far from
// perfect and a small MLP is near perfect (see the package documentation).
func DefaultJitter() Jitter {
	return Jitter{
		Rotation:  15,
		ScaleMin:  0.75,
		ScaleMax:  1.1,
		Aspect:    0.15,
		Shear:     0.3,
		Translate: 2.5,
		StrokeMin: -0.3,
		StrokeMax: 1,
		Blur:      0.6,
		InkMin:    0.7,
		Noise:     0.08,
	}
}

func (j *Jitter) validate() error {
	bad := func(field string, v float64) error {
		return fmt.Errorf("datasets: Jitter.%s = %v is invalid", field, v)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Rotation", j.Rotation}, {"ScaleMin", j.ScaleMin}, {"ScaleMax", j.ScaleMax}, {"Aspect", j.Aspect},
		{"Shear", j.Shear}, {"Translate", j.Translate}, {"Blur", j.Blur}, {"InkMin", j.InkMin}, {"Noise", j.Noise}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return bad(f.name, f.v)
		}
	}
	switch {
	case j.ScaleMin > j.ScaleMax:
		return fmt.Errorf("datasets: Jitter.ScaleMin = %v > ScaleMax = %v", j.ScaleMin, j.ScaleMax)
	case !(j.StrokeMin >= -1 && j.StrokeMin <= j.StrokeMax && j.StrokeMax <= 1):
		return fmt.Errorf("datasets: Jitter stroke range [%v, %v] is not within [-1, 1]", j.StrokeMin, j.StrokeMax)
	case j.Blur > 1:
		return bad("Blur", j.Blur)
	case j.InkMin > 1:
		return bad("InkMin", j.InkMin)
	}
	return nil
}

// pathOp is one outline segment: op as sfnt.SegmentOp, with up to three
// points in glyph-normalised coordinates (height 1, centred, y down).
type pathOp struct {
	op  sfnt.SegmentOp
	pts [3][2]float64
}

// synthFonts lists the Go fonts synthetic digits are drawn from.
var synthFonts = []struct {
	name string
	ttf  []byte
}{
	{"Go Regular", goregular.TTF},
	{"Go Medium", gomedium.TTF},
	{"Go Bold", gobold.TTF},
	{"Go Italic", goitalic.TTF},
	{"Go Medium Italic", gomediumitalic.TTF},
	{"Go Bold Italic", gobolditalic.TTF},
	{"Go Mono", gomono.TTF},
	{"Go Mono Bold", gomonobold.TTF},
	{"Go Mono Italic", gomonoitalic.TTF},
	{"Go Mono Bold Italic", gomonobolditalic.TTF},
}

// Synthesizer renders MNIST-style digits: 28×28 greyscale images of the
// digits 0–9 drawn from the ten Go fonts (regular, medium, bold, their
// italics, and the four mono faces) with the random distortions of a
// Jitter. It is safe for concurrent use.
type Synthesizer struct {
	jitter Jitter
	// glyphs[f][d] is the outline of digit d in font f.
	glyphs [][10][]pathOp
	// Workers is the number of goroutines Generate uses; zero means
	// runtime.GOMAXPROCS(0). The images do not depend on it. Set it before
	// sharing the Synthesizer between goroutines.
	Workers int
}

// NewSynthesizer parses the Go fonts and returns a Synthesizer with jitter
// j; a nil j means DefaultJitter().
func NewSynthesizer(j *Jitter) (*Synthesizer, error) {
	jit := DefaultJitter()
	if j != nil {
		jit = *j
	}
	if err := jit.validate(); err != nil {
		return nil, err
	}
	s := &Synthesizer{jitter: jit}
	var buf sfnt.Buffer
	for _, f := range synthFonts {
		ft, err := sfnt.Parse(f.ttf)
		if err != nil {
			return nil, fmt.Errorf("datasets: parsing %s: %w", f.name, err)
		}
		var g [10][]pathOp
		for d := range g {
			g[d], err = loadDigit(ft, &buf, d)
			if err != nil {
				return nil, fmt.Errorf("datasets: %s digit %d: %w", f.name, d, err)
			}
		}
		s.glyphs = append(s.glyphs, g)
	}
	return s, nil
}

// loadDigit extracts the outline of digit d, centred on its bounding box and
// scaled to height 1.
func loadDigit(ft *sfnt.Font, buf *sfnt.Buffer, d int) ([]pathOp, error) {
	gi, err := ft.GlyphIndex(buf, rune('0'+d))
	if err != nil {
		return nil, err
	}
	if gi == 0 {
		return nil, fmt.Errorf("no glyph")
	}
	segs, err := ft.LoadGlyph(buf, gi, fixed.I(1024), nil)
	if err != nil {
		return nil, err
	}
	b := segs.Bounds()
	h := float64(b.Max.Y - b.Min.Y)
	if h <= 0 {
		return nil, fmt.Errorf("empty outline")
	}
	cx := float64(b.Min.X+b.Max.X) / 2
	cy := float64(b.Min.Y+b.Max.Y) / 2
	ops := make([]pathOp, len(segs))
	for i, sg := range segs {
		ops[i].op = sg.Op
		for k, p := range sg.Args {
			ops[i].pts[k] = [2]float64{(float64(p.X) - cx) / h, (float64(p.Y) - cy) / h}
		}
	}
	return ops, nil
}

// Synthetic returns n synthetic digits drawn with DefaultJitter from seed
// (see Synthesizer.Generate).
func Synthetic(ctx context.Context, n int, seed uint64) (*Dataset, error) {
	s, err := NewSynthesizer(nil)
	if err != nil {
		return nil, err
	}
	return s.Generate(ctx, n, seed)
}

// Generate returns n synthetic digits named "synthetic". Image i and its
// label (uniform on 0–9, as is the font) are a function of (seed, i) alone,
// drawn from a PCG generator seeded for that pair: the result does not
// depend on Workers, and Generate(m, seed) is a prefix of Generate(n, seed)
// for m ≤ n. It returns ctx's error if ctx is cancelled.
func (s *Synthesizer) Generate(ctx context.Context, n int, seed uint64) (*Dataset, error) {
	if n < 0 {
		return nil, fmt.Errorf("datasets: synthetic sample count %d is negative", n)
	}
	const dim = SynthSize * SynthSize
	d := &Dataset{Name: "synthetic", Rows: SynthSize, Cols: SynthSize, Classes: 10,
		X: make([]float64, n*dim), Y: make([]int, n)}
	workers := s.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	const block = 256 // images per unit of work, and per cancellation check
	blocks := (n + block - 1) / block
	workers = max(1, min(workers, blocks))
	var (
		mu   sync.Mutex
		next int
		wg   sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newRenderer(s)
			for ctx.Err() == nil {
				mu.Lock()
				b := next
				next++
				mu.Unlock()
				if b >= blocks {
					return
				}
				for i := b * block; i < min(n, (b+1)*block); i++ {
					d.Y[i] = r.sample(d.X[i*dim:(i+1)*dim], seed, uint64(i))
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d, nil
}

// renderer holds one goroutine's scratch space.
type renderer struct {
	s              *Synthesizer
	pcg            rand.PCG
	rng            *rand.Rand
	ras            *vector.Rasterizer
	mask           *image.Alpha
	img, tmp, tmp2 []float64
}

func newRenderer(s *Synthesizer) *renderer {
	r := &renderer{
		s:    s,
		ras:  vector.NewRasterizer(SynthSize, SynthSize),
		mask: image.NewAlpha(image.Rect(0, 0, SynthSize, SynthSize)),
		img:  make([]float64, SynthSize*SynthSize),
		tmp:  make([]float64, SynthSize*SynthSize),
		tmp2: make([]float64, SynthSize*SynthSize),
	}
	r.rng = rand.New(&r.pcg)
	return r
}

// uniform returns a draw from [lo, hi].
func (r *renderer) uniform(lo, hi float64) float64 { return lo + (hi-lo)*r.rng.Float64() }

// sample renders image index of seed into dst (len SynthSize²) and returns
// its label.
func (r *renderer) sample(dst []float64, seed, index uint64) int {
	seedPCG(&r.pcg, seed, 0, index)
	j := &r.s.jitter
	label := r.rng.IntN(10)
	glyph := r.s.glyphs[r.rng.IntN(len(r.s.glyphs))][label]

	// Affine map: glyph coordinates → pixels.
	scale := 1.0
	if j.ScaleMax > 0 {
		scale = r.uniform(j.ScaleMin, j.ScaleMax)
	}
	scale *= synthBox
	a := math.Exp(r.uniform(-j.Aspect, j.Aspect))
	sx, sy := scale*a, scale/a
	sh := r.uniform(-j.Shear, j.Shear)
	th := r.uniform(-j.Rotation, j.Rotation) * math.Pi / 180
	c, sn := math.Cos(th), math.Sin(th)
	// M = R(θ)·[[1, sh], [0, 1]]·diag(sx, sy)
	m00, m01 := c*sx, (c*sh-sn)*sy
	m10, m11 := sn*sx, (sn*sh+c)*sy
	tx := SynthSize/2 + r.uniform(-j.Translate, j.Translate)
	ty := SynthSize/2 + r.uniform(-j.Translate, j.Translate)
	pt := func(p [2]float64) (float32, float32) {
		return float32(m00*p[0] + m01*p[1] + tx), float32(m10*p[0] + m11*p[1] + ty)
	}

	ras := r.ras
	ras.Reset(SynthSize, SynthSize)
	for _, op := range glyph {
		switch op.op {
		case sfnt.SegmentOpMoveTo:
			x, y := pt(op.pts[0])
			ras.MoveTo(x, y)
		case sfnt.SegmentOpLineTo:
			x, y := pt(op.pts[0])
			ras.LineTo(x, y)
		case sfnt.SegmentOpQuadTo:
			x1, y1 := pt(op.pts[0])
			x2, y2 := pt(op.pts[1])
			ras.QuadTo(x1, y1, x2, y2)
		case sfnt.SegmentOpCubeTo:
			x1, y1 := pt(op.pts[0])
			x2, y2 := pt(op.pts[1])
			x3, y3 := pt(op.pts[2])
			ras.CubeTo(x1, y1, x2, y2, x3, y3)
		}
	}
	ras.ClosePath()
	clear(r.mask.Pix)
	ras.Draw(r.mask, r.mask.Bounds(), image.Opaque, image.Point{})
	img := r.img
	for i, p := range r.mask.Pix {
		img[i] = float64(p) / 255
	}

	// Stroke width: blend towards the 3×3 dilation (thicker) or erosion.
	if st := r.uniform(j.StrokeMin, j.StrokeMax); st != 0 {
		morph(r.tmp, img, r.tmp2, st > 0)
		w := math.Abs(st)
		for i := range img {
			img[i] += w * (r.tmp[i] - img[i])
		}
	}
	if b := r.uniform(0, j.Blur); b > 0 {
		blur(r.tmp, img, r.tmp2)
		for i := range img {
			img[i] += b * (r.tmp[i] - img[i])
		}
	}
	ink := 1.0
	if j.InkMin > 0 {
		ink = r.uniform(j.InkMin, 1)
	}
	sigma := r.uniform(0, j.Noise)
	for i, v := range img {
		v *= ink
		if sigma > 0 {
			v += sigma * r.rng.NormFloat64()
		}
		dst[i] = min(1, max(0, v))
	}
	return label
}

// morph writes to dst the 3×3 grey dilation (max) of src, or its erosion
// (min), with pixels outside the image taken as background (0). The square
// structuring element is separable: a 1×3 pass into tmp, then a 3×1 pass.
func morph(dst, src, tmp []float64, dilate bool) {
	f := func(a, b, c float64) float64 { return min(a, b, c) }
	if dilate {
		f = func(a, b, c float64) float64 { return max(a, b, c) }
	}
	filter3(tmp, src, 1, f)
	filter3(dst, tmp, SynthSize, f)
}

// blur writes to dst src convolved with the binomial kernel
// [1 2 1]/4 ⊗ [1 2 1]/4, with zero padding, using tmp as scratch.
func blur(dst, src, tmp []float64) {
	f := func(a, b, c float64) float64 { return 0.25*a + 0.5*b + 0.25*c }
	filter3(tmp, src, 1, f)
	filter3(dst, tmp, SynthSize, f)
}

// filter3 sets dst[i] = f(src[i−step], src[i], src[i+step]) for every pixel
// of a SynthSize×SynthSize image, step 1 filtering along rows and step
// SynthSize along columns; neighbours outside the image are 0.
func filter3(dst, src []float64, step int, f func(a, b, c float64) float64) {
	const n = SynthSize
	dst, src = dst[:n*n], src[:n*n]
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			i := y*n + x
			pos := x
			if step != 1 {
				pos = y
			}
			var a, c float64
			if pos > 0 {
				a = src[i-step]
			}
			if pos < n-1 {
				c = src[i+step]
			}
			dst[i] = f(a, src[i], c)
		}
	}
}
