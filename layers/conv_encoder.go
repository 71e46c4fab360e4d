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
	// every convolution's output, in place of σ. Zero means none.
	Groups int
	// Layers is the number of convolution blocks: the stride-2 one, then
	// Layers − 1 blocks of a 3×3 C→C convolution of stride 1 and padding 1
	// at the downsampled size (see ConvEncoder). Zero means 1.
	Layers int
	// Seed seeds the initialisation: the first block's W has independent
	// N(0, 2/(9·InChannels)) entries, block k's W (k ≥ 2) independent
	// N(0, 2/(9·C)) entries from a stream of its own, every b is zero, the
	// GroupNorm scales one and shifts zero.
	Seed uint64
}

// ConvEncoder is the downsampling encoder of a convolutional DEQ. With one
// layer (the default) it is x ↦ σ(W∗x + b), or with a GroupNorm N,
// x ↦ N(W∗x + b): a 3×3 convolution with stride 2 and padding 1 from
// InChannels×H×W images to C×⌈H/2⌉×⌈W/2⌉ (1×28×28 to C×14×14), then σ
// (ReLU by default) or the GroupNorm. The GroupNorm replaces σ rather than
// following it, as in the convolutional DEQs of the literature: a ReLU
// before it discards the negative half of every feature and costs accuracy
// (about one point of test accuracy on digits in a short run). Images are
// channel-major (CHW), row-major within a channel, one after another in a
// batch; the output is laid out as a Conv cell's input (C rows of H'·W'
// pixels).
//
// With Layers = L > 1 the encoder is a stem of L blocks: the stride-2
// convolution, then L − 1 3×3 C→C convolutions of stride 1 and padding 1
// at H'×W'. Every block but the last is conv → GroupNorm → ReLU (conv → σ
// without Groups); the last is conv → GroupNorm (conv → σ without Groups),
// so that the first block of a deeper encoder gains a ReLU after its
// GroupNorm and the encoder's output is normalised as with one layer.
//
// Forward keeps what Backward needs, so Backward computes the parameter
// gradients of the last Forward's batch, propagating the cotangent through
// the stride-1 blocks. The input's gradient is not computed (the encoder
// reads the data). Both allocate nothing once a batch size has been seen
// (the encoder keeps the scratch of MaxCachedBatches batch sizes). An
// encoder is not safe for concurrent use.
//
// Its parameters are, block after block, the block's W (C×(9·InChannels)
// for the first, C×9C for the others, OIHW order), b (1×C) and, with
// Groups, the GroupNorm scale and shift (1×C each); see Params for their
// names.
type ConvEncoder struct {
	c, hw  int // output channels and pixels
	act    Activation
	groups int
	norm   groupNorm
	blocks []encoderBlock
	work   mru.Cache[int, *encoderWork]
	last   *encoderWork // the workspace of the last Forward
	lastN  int
}

// encoderBlock is one convolution block of a ConvEncoder.
type encoderBlock struct {
	geom   conv.Geom
	w, b   *Param
	nscale *Param // nil without Groups
	nshift *Param
	relu   bool // a ReLU follows the GroupNorm (every block but the last)
}

// encoderWork is the scratch of one batch size.
type encoderWork struct {
	x    []float64   // the input of the last Forward
	out  [][]float64 // per block: its output (σ applied), or with GroupNorm its pre-activation for the last block and its output for the others
	xhat [][]float64 // per block: standardised pre-activations (GroupNorm)
	rstd [][]float64
	col  []float64 // a column matrix, of the largest block
	d    []float64 // cotangent of one example's pre-activation
	dx   []float64 // cotangent of one example's block input (Layers > 1)
}

// encoderStream is the PCG stream of the first block's weights; block k
// (k ≥ 2) draws from encoderStream + k − 1.
const encoderStream = 0x8cb92ba72f3d8dd7

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
	case cfg.Layers < 0:
		return nil, fmt.Errorf("layers: ConvEncoderConfig.Layers = %d must not be negative", cfg.Layers)
	}
	if err := cfg.Activation.valid(); err != nil {
		return nil, err
	}
	layers := cmp0(cfg.Layers, 1)
	geom := conv.Geom{In: in, H: h, W: w, K: ConvKernel, Stride: 2, Pad: 1}
	e := &ConvEncoder{
		c: cfg.Channels, hw: geom.OutH() * geom.OutW(),
		act: cfg.Activation, groups: cfg.Groups,
		work: mru.Cache[int, *encoderWork]{Max: MaxCachedBatches},
	}
	if cfg.Groups > 0 {
		e.norm = groupNorm{c: cfg.Channels, hw: e.hw, groups: cfg.Groups}
	}
	for k := range layers {
		g := geom
		if k > 0 {
			g = conv.Geom{In: cfg.Channels, H: geom.OutH(), W: geom.OutW(), K: ConvKernel, Stride: 1, Pad: 1}
		}
		suffix := ""
		if k > 0 {
			suffix = fmt.Sprint(k + 1)
		}
		bl := encoderBlock{
			geom: g,
			w:    newParam("W"+suffix, cfg.Channels, g.ColRows()),
			b:    newParam("b"+suffix, 1, cfg.Channels),
			relu: k < layers-1,
		}
		rng := rand.New(rand.NewPCG(cfg.Seed, encoderStream+uint64(k)))
		fillNormal(bl.w.Data(), rng, math.Sqrt(2/float64(g.ColRows())))
		if cfg.Groups > 0 {
			bl.nscale = newParam("gn"+suffix+".scale", 1, cfg.Channels)
			bl.nshift = newParam("gn"+suffix+".shift", 1, cfg.Channels)
			for i := range bl.nscale.Data() {
				bl.nscale.Data()[i] = 1
			}
		}
		e.blocks = append(e.blocks, bl)
	}
	return e, nil
}

// InputLen returns the length of one input image, InChannels·H·W.
func (e *ConvEncoder) InputLen() int { return e.blocks[0].geom.ImageLen() }

// OutShape returns the output channels C and image size H'×W'.
func (e *ConvEncoder) OutShape() (c, h, w int) {
	return e.c, e.blocks[0].geom.OutH(), e.blocks[0].geom.OutW()
}

// OutputLen returns the length of one output image, C·H'·W'.
func (e *ConvEncoder) OutputLen() int { return e.c * e.hw }

// Layers returns the number of convolution blocks.
func (e *ConvEncoder) Layers() int { return len(e.blocks) }

// Params returns the parameters block after block: W, b and, with Groups,
// the GroupNorm scale and shift (named gn.scale and gn.shift) of the first
// block, then for block k = 2, …, Layers its Wk, bk (and gnk.scale,
// gnk.shift).
func (e *ConvEncoder) Params() []*Param {
	var ps []*Param
	for _, bl := range e.blocks {
		ps = append(ps, bl.w, bl.b)
		if bl.nscale != nil {
			ps = append(ps, bl.nscale, bl.nshift)
		}
	}
	return ps
}

// batch returns the number of images in x and the workspace for it.
func (e *ConvEncoder) batch(x []float64) (int, *encoderWork, error) {
	n := len(x) / e.InputLen()
	if n < 1 || n*e.InputLen() != len(x) {
		return 0, nil, fmt.Errorf("layers: ConvEncoder: input length %d is not a positive multiple of %d", len(x), e.InputLen())
	}
	wk, err := e.work.Get(n, func() (*encoderWork, error) {
		out := n * e.OutputLen()
		rows := 0
		for _, bl := range e.blocks {
			rows = max(rows, bl.geom.ColRows())
		}
		wk := &encoderWork{
			x:   make([]float64, len(x)),
			col: make([]float64, rows*e.hw),
			d:   make([]float64, e.OutputLen()),
		}
		if len(e.blocks) > 1 {
			wk.dx = make([]float64, e.OutputLen())
		}
		for range e.blocks {
			wk.out = append(wk.out, make([]float64, out))
			if e.groups > 0 {
				wk.xhat = append(wk.xhat, make([]float64, out))
				wk.rstd = append(wk.rstd, make([]float64, n*e.groups))
			}
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
	out, last := e.OutputLen(), len(e.blocks)-1
	for b := range n {
		for k, bl := range e.blocks {
			var img []float64
			if k == 0 {
				img = x[b*e.InputLen() : (b+1)*e.InputLen()]
			} else {
				img = wk.out[k-1][b*out : (b+1)*out]
			}
			r := bl.geom.ColRows()
			col := wk.col[:r*e.hw]
			bl.geom.Im2Col(col, img)
			act := wk.out[k][b*out : (b+1)*out]
			conv.Gemm(false, false, e.c, e.hw, r, 1, bl.w.Data(), r, col, e.hw, 0, act, e.hw)
			bias := bl.b.Data()
			for ch := range e.c {
				row := act[ch*e.hw : (ch+1)*e.hw]
				for i := range row {
					row[i] += bias[ch]
				}
			}
			switch {
			case e.groups == 0:
				e.act.apply(act)
				if k == last {
					copy(dst[b*out:(b+1)*out], act)
				}
			case k == last:
				// The last block keeps its pre-activation (as the
				// one-layer encoder always has).
				e.norm.forward(dst[b*out:(b+1)*out], wk.xhat[k][b*out:(b+1)*out], wk.rstd[k][b*e.groups:(b+1)*e.groups],
					act, bl.nscale.Data(), bl.nshift.Data())
			default:
				e.norm.forward(act, wk.xhat[k][b*out:(b+1)*out], wk.rstd[k][b*e.groups:(b+1)*e.groups],
					act, bl.nscale.Data(), bl.nshift.Data())
				ReLU.apply(act)
			}
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
	in, out, last := e.InputLen(), e.OutputLen(), len(e.blocks)-1
	for b := range n {
		d, dx := wk.d, wk.dx
		for k := last; k >= 0; k-- {
			bl := e.blocks[k]
			switch {
			case e.groups == 0:
				if k == last {
					copy(d, g[b*out:(b+1)*out])
				}
				activationGrad(e.act, d, wk.out[k][b*out:(b+1)*out])
			case k == last:
				e.norm.backward(d, g[b*out:(b+1)*out], wk.xhat[k][b*out:(b+1)*out], wk.rstd[k][b*e.groups:(b+1)*e.groups],
					bl.nscale.Data(), bl.nscale.GradData(), bl.nshift.GradData())
			default:
				activationGrad(ReLU, d, wk.out[k][b*out:(b+1)*out])
				e.norm.backward(d, d, wk.xhat[k][b*out:(b+1)*out], wk.rstd[k][b*e.groups:(b+1)*e.groups],
					bl.nscale.Data(), bl.nscale.GradData(), bl.nshift.GradData())
			}
			var img []float64
			if k == 0 {
				img = wk.x[b*in : (b+1)*in]
			} else {
				img = wk.out[k-1][b*out : (b+1)*out]
			}
			r := bl.geom.ColRows()
			col := wk.col[:r*e.hw]
			bl.geom.Im2Col(col, img)
			conv.Gemm(false, true, e.c, r, e.hw, 1, d, e.hw, col, e.hw, 1, bl.w.GradData(), r)
			db := bl.b.GradData()
			for ch := range e.c {
				s := 0.0
				for _, v := range d[ch*e.hw : (ch+1)*e.hw] {
					s += v
				}
				db[ch] += s
			}
			if k == 0 {
				break
			}
			// The input's cotangent: the adjoint of Im2Col applied to Wᵀd.
			conv.Gemm(true, false, r, e.hw, e.c, 1, bl.w.Data(), r, d, e.hw, 0, col, e.hw)
			clear(dx)
			bl.geom.Col2ImAdd(dx, col)
			d, dx = dx, d
		}
	}
	return nil
}
