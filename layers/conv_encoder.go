package layers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/deqgo/deq/internal/conv"
	"github.com/deqgo/deq/internal/mru"
)

// ConvEncoderConfig configures a ConvEncoder. Zero values select the
// documented defaults.
type ConvEncoderConfig struct {
	// InChannels is the number of input channels. Zero means 1.
	InChannels int
	// Height and Width are the input image size. Zero means 28.
	Height, Width int
	// Channels is C, the number of output channels. Required.
	Channels int
	// Activation is σ; the zero value is ReLU. It applies only without
	// Groups: the GroupNorm takes its place.
	Activation Activation
	// Groups, if positive, applies a GroupNorm with Groups groups (which
	// must divide Channels) and a learned per-channel scale and shift to
	// the convolution's output, in place of σ. Zero means none.
	Groups int
	// Seed seeds the initialisation: W has independent N(0, 2/(9·InChannels))
	// entries, b is zero, the GroupNorm scale one and shift zero.
	Seed uint64
}

// ConvEncoder is the downsampling encoder x ↦ σ(W∗x + b), or with a
// GroupNorm N, x ↦ N(W∗x + b), of a convolutional DEQ: a 3×3 convolution
// with stride 2 and padding 1 from InChannels×H×W images to
// C×⌈H/2⌉×⌈W/2⌉ (1×28×28 to C×14×14), then σ (ReLU by default) or the
// GroupNorm. The GroupNorm replaces σ rather than following it, as in the
// convolutional DEQs of the literature: a ReLU before it discards the
// negative half of every feature and costs accuracy (about one point of
// test accuracy on digits in a short run). Images are channel-major (CHW),
// row-major within a channel, one after another in a batch; the output is
// laid out as a Conv cell's input (C rows of H'·W' pixels).
//
// Forward keeps what Backward needs, so Backward computes the parameter
// gradients of the last Forward's batch. The input's gradient is not
// computed (the encoder reads the data). Both allocate nothing once a batch
// size has been seen (the encoder keeps the scratch of MaxCachedBatches
// batch sizes). An encoder is not safe for concurrent use.
//
// Its parameters are W (C×(9·InChannels), OIHW order), b (1×C) and, with
// Groups, the GroupNorm scale and shift (1×C each).
type ConvEncoder struct {
	geom   conv.Geom
	c, hw  int // output channels and pixels
	act    Activation
	groups int
	norm   groupNorm
	w, b   *Param
	nscale *Param
	nshift *Param
	work   mru.Cache[int, *encoderWork]
	last   *encoderWork // the workspace of the last Forward
	lastN  int
}

// encoderWork is the scratch of one batch size.
type encoderWork struct {
	x    []float64 // the input of the last Forward
	act  []float64 // σ(pre), or pre with GroupNorm, per example
	xhat []float64 // standardised σ(pre) (GroupNorm)
	rstd []float64
	col  []float64
	d    []float64 // cotangent of one example's pre-activation
}

// NewConvEncoder returns an encoder initialised from cfg.Seed.
func NewConvEncoder(cfg ConvEncoderConfig) (*ConvEncoder, error) {
	in := cmp0(cfg.InChannels, 1)
	h, w := cmp0(cfg.Height, 28), cmp0(cfg.Width, 28)
	switch {
	case in < 0:
		return nil, fmt.Errorf("layers: ConvEncoderConfig.InChannels = %d must not be negative", cfg.InChannels)
	case h < 0:
		return nil, fmt.Errorf("layers: ConvEncoderConfig.Height = %d must not be negative", cfg.Height)
	case w < 0:
		return nil, fmt.Errorf("layers: ConvEncoderConfig.Width = %d must not be negative", cfg.Width)
	case cfg.Channels < 1:
		return nil, fmt.Errorf("layers: ConvEncoderConfig.Channels = %d must be positive", cfg.Channels)
	case cfg.Groups < 0 || (cfg.Groups > 0 && cfg.Channels%cfg.Groups != 0):
		return nil, fmt.Errorf("layers: ConvEncoderConfig.Groups = %d must be zero or divide Channels = %d", cfg.Groups, cfg.Channels)
	}
	if err := cfg.Activation.valid(); err != nil {
		return nil, err
	}
	geom := conv.Geom{In: in, H: h, W: w, K: ConvKernel, Stride: 2, Pad: 1}
	e := &ConvEncoder{
		geom: geom, c: cfg.Channels, hw: geom.OutH() * geom.OutW(),
		act: cfg.Activation, groups: cfg.Groups,
		w:    newParam("W", cfg.Channels, geom.ColRows()),
		b:    newParam("b", 1, cfg.Channels),
		work: mru.Cache[int, *encoderWork]{Max: MaxCachedBatches},
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x8cb92ba72f3d8dd7))
	fillNormal(e.w.Data(), rng, math.Sqrt(2/float64(geom.ColRows())))
	if cfg.Groups > 0 {
		e.norm = groupNorm{c: cfg.Channels, hw: e.hw, groups: cfg.Groups}
		e.nscale = newParam("gn.scale", 1, cfg.Channels)
		e.nshift = newParam("gn.shift", 1, cfg.Channels)
		for i := range e.nscale.Data() {
			e.nscale.Data()[i] = 1
		}
	}
	return e, nil
}

// InputLen returns the length of one input image, InChannels·H·W.
func (e *ConvEncoder) InputLen() int { return e.geom.ImageLen() }

// OutShape returns the output channels C and image size H'×W'.
func (e *ConvEncoder) OutShape() (c, h, w int) { return e.c, e.geom.OutH(), e.geom.OutW() }

// OutputLen returns the length of one output image, C·H'·W'.
func (e *ConvEncoder) OutputLen() int { return e.c * e.hw }

// Params returns W, b and, with Groups, the GroupNorm scale and shift.
func (e *ConvEncoder) Params() []*Param {
	if e.nscale != nil {
		return []*Param{e.w, e.b, e.nscale, e.nshift}
	}
	return []*Param{e.w, e.b}
}

// batch returns the number of images in x and the workspace for it.
func (e *ConvEncoder) batch(x []float64) (int, *encoderWork, error) {
	n := len(x) / e.InputLen()
	if n < 1 || n*e.InputLen() != len(x) {
		return 0, nil, fmt.Errorf("layers: ConvEncoder: input length %d is not a positive multiple of %d", len(x), e.InputLen())
	}
	wk, err := e.work.Get(n, func() (*encoderWork, error) {
		out := n * e.OutputLen()
		wk := &encoderWork{
			x:   make([]float64, len(x)),
			act: make([]float64, out),
			col: make([]float64, e.geom.ColRows()*e.hw),
			d:   make([]float64, e.OutputLen()),
		}
		if e.groups > 0 {
			wk.xhat = make([]float64, out)
			wk.rstd = make([]float64, n*e.groups)
		}
		return wk, nil
	})
	return n, wk, err
}

// Forward writes the encoding of the batch x (a whole number of input
// images) into dst (the same number of output images) and keeps what
// Backward needs.
func (e *ConvEncoder) Forward(dst, x []float64) error {
	n, wk, err := e.batch(x)
	if err != nil {
		return err
	}
	checkLen("dst", len(dst), n*e.OutputLen())
	copy(wk.x, x)
	in, out, r := e.InputLen(), e.OutputLen(), e.geom.ColRows()
	bias := e.b.Data()
	for b := range n {
		e.geom.Im2Col(wk.col, x[b*in:(b+1)*in])
		act := wk.act[b*out : (b+1)*out]
		conv.Gemm(false, false, e.c, e.hw, r, 1, e.w.Data(), r, wk.col, e.hw, 0, act, e.hw)
		for ch := range e.c {
			row := act[ch*e.hw : (ch+1)*e.hw]
			for i := range row {
				row[i] += bias[ch]
			}
		}
		if e.groups > 0 {
			e.norm.forward(dst[b*out:(b+1)*out], wk.xhat[b*out:(b+1)*out], wk.rstd[b*e.groups:(b+1)*e.groups],
				act, e.nscale.Data(), e.nshift.Data())
		} else {
			e.act.apply(act)
			copy(dst[b*out:(b+1)*out], act)
		}
	}
	e.last, e.lastN = wk, n
	return nil
}

// Backward adds to the parameters' gradients those of ⟨g, y⟩, y the output
// of the last Forward (g has its length).
func (e *ConvEncoder) Backward(g []float64) error {
	if e.last == nil {
		return fmt.Errorf("layers: ConvEncoder.Backward: Forward has not been called")
	}
	wk, n := e.last, e.lastN
	checkLen("g", len(g), n*e.OutputLen())
	in, out, r := e.InputLen(), e.OutputLen(), e.geom.ColRows()
	db := e.b.GradData()
	for b := range n {
		d := wk.d
		if e.groups > 0 {
			e.norm.backward(d, g[b*out:(b+1)*out], wk.xhat[b*out:(b+1)*out], wk.rstd[b*e.groups:(b+1)*e.groups],
				e.nscale.Data(), e.nscale.GradData(), e.nshift.GradData())
		} else {
			copy(d, g[b*out:(b+1)*out])
			activationGrad(e.act, d, wk.act[b*out:(b+1)*out])
		}
		e.geom.Im2Col(wk.col, wk.x[b*in:(b+1)*in])
		conv.Gemm(false, true, e.c, r, e.hw, 1, d, e.hw, wk.col, e.hw, 1, e.w.GradData(), r)
		for ch := range e.c {
			s := 0.0
			for _, v := range d[ch*e.hw : (ch+1)*e.hw] {
				s += v
			}
			db[ch] += s
		}
	}
	return nil
}
