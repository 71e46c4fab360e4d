package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/internal/team"
	"github.com/deqgo/deq/layers/internal/conv"
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
	// Precision is the precision of the products of the blocks after the
	// first (see Precision): with Float32 their inputs and weights are
	// rounded into float32 matrices and the products widened back, while
	// the parameters, their gradients, the GroupNorm and the outputs stay
	// float64. The first (stride-2) block is always float64. The zero
	// value, DefaultPrecision, is Float64.
	Precision Precision
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
// The first block runs image by image (im2col and a matrix product), the
// further blocks on the whole batch, split between the cores by ranges of
// images; their gradients therefore depend, up to rounding, on
// runtime.GOMAXPROCS when the encoder first sees a batch size.
//
// Forward keeps what Backward needs, so Backward computes the parameter
// gradients of the last Forward's batch, propagating the cotangent through
// the stride-1 blocks. The input's gradient is not computed (the encoder
// reads the data). Both allocate nothing once they have seen a batch size
// (the encoder keeps the scratch of MaxCachedBatches batch sizes, and with
// Layers > 1 a team of goroutines for each, stopped when the scratch is
// dropped). An encoder is not safe for concurrent use.
//
// Its parameters are, block after block, the block's W (C×(9·InChannels)
// for the first, C×9C for the others, OIHW order), b (1×C) and, with
// Groups, the GroupNorm scale and shift (1×C each); see Params for their
// names.
type ConvEncoder struct {
	c, hw  int // output channels and pixels
	act    Activation
	groups int
	prec   Precision
	norm   groupNorm
	blocks []encoderBlock
	work   mru.Cache[int, *encoderWork]
	extra  []*Param     // the parameters of the blocks after the first, in Params order
	last   *encoderWork // the workspace of the last Forward
	lastN  int

	call encoderCall            // the arguments of the running team call
	part func(part, lo, hi int) // runPart, bound once
}

// encoderCall holds the arguments of the block that the parts of a team
// run.
type encoderCall struct {
	wk       *encoderWork
	k        int       // the block (k ≥ 1)
	backward bool      // backward rather than forward
	dst, g   []float64 // Forward's dst, Backward's g
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
	col  []float64 // the first block's column matrix
	d    []float64 // cotangent of one example's pre-activation (one layer)

	// Layers > 1 only: the further blocks' batch matrices and products,
	// the cotangents of a block's outputs (then pre-activations) for the
	// batch, the team that splits the blocks and, for its parts p ≥ 1
	// (part 0 adds into the parameters), the gradients of the further
	// blocks' parameters, in Params order (allocated on the first
	// Backward).
	mats  shiftedProducts
	dy    []float64
	team  *team.Team
	grads [][][]float64
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
	prec, err := cfg.Precision.validIn("ConvEncoderConfig")
	if err != nil {
		return nil, err
	}
	layers := cmp0(cfg.Layers, 1)
	geom := conv.Geom{In: in, H: h, W: w, K: ConvKernel, Stride: 2, Pad: 1}
	e := &ConvEncoder{
		c: cfg.Channels, hw: geom.OutH() * geom.OutW(),
		act: cfg.Activation, groups: cfg.Groups, prec: prec,
		work: mru.Cache[int, *encoderWork]{Max: MaxCachedBatches},
	}
	e.part = e.runPart
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
	e.extra = e.Params()[len(e.blockParams(0)):]
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

// Precision returns the precision of the products of the blocks after the
// first.
func (e *ConvEncoder) Precision() Precision { return e.prec }

// Params returns the parameters block after block: W, b and, with Groups,
// the GroupNorm scale and shift (named gn.scale and gn.shift) of the first
// block, then for block k = 2, …, Layers its Wk, bk (and gnk.scale,
// gnk.shift).
func (e *ConvEncoder) Params() []*Param {
	var ps []*Param
	for k := range e.blocks {
		ps = append(ps, e.blockParams(k)...)
	}
	return ps
}

// batch returns the number of images in x and the workspace for it.
func (e *ConvEncoder) batch(x []float64) (int, *encoderWork, error) {
	n := len(x) / e.InputLen()
	if n < 1 || n*e.InputLen() != len(x) {
		return 0, nil, fmt.Errorf("layers: ConvEncoder: input length %d is not a positive multiple of %d", len(x), e.InputLen())
	}
	wk, err := e.work.Get(n, func() (*encoderWork, error) { return e.newWork(n), nil })
	return n, wk, err
}

// newWork returns the workspace of batches of n images, without the
// scratch of Backward's further blocks (see backwardScratch).
func (e *ConvEncoder) newWork(n int) *encoderWork {
	out := n * e.OutputLen()
	first := e.blocks[0].geom
	wk := &encoderWork{
		x:   make([]float64, n*e.InputLen()),
		col: make([]float64, first.ColRows()*e.hw),
	}
	for range e.blocks {
		wk.out = append(wk.out, make([]float64, out))
		if e.groups > 0 {
			wk.xhat = append(wk.xhat, make([]float64, out))
			wk.rstd = append(wk.rstd, make([]float64, n*e.groups))
		}
	}
	if len(e.blocks) == 1 {
		wk.d = make([]float64, e.OutputLen())
		return wk
	}
	wk.mats = newShiftedProducts(e.prec, e.c, first.OutH(), first.OutW(), e.c, n)
	wk.dy = make([]float64, out)
	wk.team = team.New(min(runtime.GOMAXPROCS(0), n))
	runtime.AddCleanup(wk, (*team.Team).Close, wk.team)
	return wk
}

// backwardScratch allocates, on the first Backward of a batch size, the
// scratch that only Backward's further blocks use.
func (e *ConvEncoder) backwardScratch(wk *encoderWork) {
	if wk.mats == nil || wk.mats.hasGradScratch() {
		return
	}
	wk.mats.vjpScratch()
	wk.mats.gradScratch(wk.team.Parts())
	wk.grads = make([][][]float64, wk.team.Parts())
	for p := 1; p < len(wk.grads); p++ {
		for _, q := range e.extra {
			wk.grads[p] = append(wk.grads[p], make([]float64, len(q.Data())))
		}
	}
}

// blockParams returns block k's parameters in Params order: W, b and, with
// Groups, the GroupNorm scale and shift.
func (e *ConvEncoder) blockParams(k int) []*Param {
	bl := e.blocks[k]
	if bl.nscale == nil {
		return []*Param{bl.w, bl.b}
	}
	return []*Param{bl.w, bl.b, bl.nscale, bl.nshift}
}

// blockGrads returns the slices that part p adds block k's gradients into:
// the parameters' own for part 0, the part's for the others (k ≥ 1); the
// GroupNorm's are nil without Groups.
func (e *ConvEncoder) blockGrads(wk *encoderWork, p, k int) (dw, db, dscale, dshift []float64) {
	bl := e.blocks[k]
	if p > 0 {
		per := 2
		if e.groups > 0 {
			per = 4
		}
		g := wk.grads[p][(k-1)*per:]
		if e.groups > 0 {
			return g[0], g[1], g[2], g[3]
		}
		return g[0], g[1], nil, nil
	}
	if e.groups > 0 {
		return bl.w.GradData(), bl.b.GradData(), bl.nscale.GradData(), bl.nshift.GradData()
	}
	return bl.w.GradData(), bl.b.GradData(), nil, nil
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
	bl := e.blocks[0]
	r := bl.geom.ColRows()
	out := e.OutputLen()
	for b := range n {
		bl.geom.Im2Col(wk.col, x[b*e.InputLen():(b+1)*e.InputLen()])
		act := wk.out[0][b*out : (b+1)*out]
		conv.Gemm(false, false, e.c, e.hw, r, 1, bl.w.Data(), r, wk.col, e.hw, 0, act, e.hw)
		e.activate(wk, 0, b, dst)
	}
	for k := 1; k < len(e.blocks); k++ {
		wk.mats.setWeights(e.blocks[k].w.Data(), e.c)
		e.runBlock(encoderCall{wk: wk, k: k, dst: dst}, n)
	}
	e.last, e.lastN = wk, n
	return nil
}

// runBlock runs call on the n images of the batch, split between the
// parts of the workspace's team.
func (e *ConvEncoder) runBlock(call encoderCall, n int) {
	e.call = call
	call.wk.team.Run(n, e.part)
	e.call = encoderCall{}
}

// runPart runs e.call, block k ≥ 1 forward or backward, on the images
// [lo, hi) with the scratch of part p.
func (e *ConvEncoder) runPart(p, lo, hi int) {
	call := &e.call
	wk, k, m := call.wk, call.k, call.wk.mats
	out := e.OutputLen()
	if !call.backward {
		m.forward(wk.out[k-1], e.c, e.c, lo, hi)
		for b := lo; b < hi; b++ {
			m.output(wk.out[k][b*out:(b+1)*out], e.c, b)
			e.activate(wk, k, b, call.dst)
		}
		return
	}
	// The pre-activations' cotangents replace those of the outputs in
	// wk.dy (the last block's come from g); dW += δ·zᵀ over the part's
	// images, z the block's input; the input's cotangent, Wᵀ∗δ, goes to
	// wk.dy for block k − 1.
	dw, db, dscale, dshift := e.blockGrads(wk, p, k)
	m.pack(wk.out[k-1], e.c, lo, hi)
	for b := lo; b < hi; b++ {
		d, gb := wk.dy[b*out:(b+1)*out], wk.dy[b*out:(b+1)*out]
		if k == len(e.blocks)-1 {
			gb = call.g[b*out : (b+1)*out]
		}
		e.delta(wk, k, b, d, gb, dscale, dshift)
		biasGrad(db, d, e.hw)
		m.packDelta(d, e.c, b)
	}
	m.weightGrad(dw, p, e.c, lo, hi)
	m.adjoint(wk.dy, e.c, e.c, lo, hi)
}

// activate completes block k's output of image b in wk.out[k], which holds
// its convolution: it adds the bias and applies σ, or the GroupNorm (then
// a ReLU but for the last block), and writes the last block's output to
// image b of dst.
func (e *ConvEncoder) activate(wk *encoderWork, k, b int, dst []float64) {
	bl := e.blocks[k]
	out, last := e.OutputLen(), len(e.blocks)-1
	act := wk.out[k][b*out : (b+1)*out]
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
		// The last block keeps its pre-activation (as the one-layer
		// encoder always has).
		e.norm.forward(dst[b*out:(b+1)*out], wk.xhat[k][b*out:(b+1)*out], wk.rstd[k][b*e.groups:(b+1)*e.groups],
			act, bl.nscale.Data(), bl.nshift.Data())
	default:
		e.norm.forward(act, wk.xhat[k][b*out:(b+1)*out], wk.rstd[k][b*e.groups:(b+1)*e.groups],
			act, bl.nscale.Data(), bl.nshift.Data())
		ReLU.apply(act)
	}
}

// delta writes into d the cotangent of block k's pre-activation of image b
// given gb, that of its output (d may be gb), adding the GroupNorm's
// gradients into dscale and dshift.
func (e *ConvEncoder) delta(wk *encoderWork, k, b int, d, gb, dscale, dshift []float64) {
	bl := e.blocks[k]
	out := e.OutputLen()
	s := b * out
	switch {
	case e.groups == 0:
		copy(d, gb)
		e.act.backward(d, wk.out[k][s:s+out])
	case k == len(e.blocks)-1:
		e.norm.backward(d, gb, wk.xhat[k][s:s+out], wk.rstd[k][b*e.groups:(b+1)*e.groups],
			bl.nscale.Data(), dscale, dshift)
	default:
		copy(d, gb)
		ReLU.backward(d, wk.out[k][s:s+out])
		e.norm.backward(d, d, wk.xhat[k][s:s+out], wk.rstd[k][b*e.groups:(b+1)*e.groups],
			bl.nscale.Data(), dscale, dshift)
	}
}

// biasGrad adds into db the sums of the channels (rows of hw entries) of
// d.
func biasGrad(db, d []float64, hw int) {
	for ch := range db {
		s := 0.0
		for _, v := range d[ch*hw : (ch+1)*hw] {
			s += v
		}
		db[ch] += s
	}
}

// Backward adds to the parameters' gradients those of ⟨g, y⟩, y the output
// of the last Forward (g has its length).
func (e *ConvEncoder) Backward(g []float64) error {
	if e.last == nil {
		return fmt.Errorf("layers: ConvEncoder.Backward: Forward has not been called")
	}
	wk, n := e.last, e.lastN
	checkLen("g", len(g), n*e.OutputLen())
	e.backwardScratch(wk)
	for k := len(e.blocks) - 1; k >= 1; k-- {
		wk.mats.setWeights(e.blocks[k].w.Data(), e.c)
		e.runBlock(encoderCall{wk: wk, k: k, backward: true, g: g}, n)
	}
	for p := 1; p < len(wk.grads); p++ {
		addPartGrads(e.extra, wk.grads[p])
	}
	// The first block, image by image; with further blocks wk.dy holds the
	// cotangents of its outputs.
	bl := e.blocks[0]
	r := bl.geom.ColRows()
	in, out := e.InputLen(), e.OutputLen()
	dw, db, dscale, dshift := e.blockGrads(wk, 0, 0)
	for b := range n {
		d, gb := wk.d, g[b*out:(b+1)*out]
		if len(e.blocks) > 1 {
			d = wk.dy[b*out : (b+1)*out]
			gb = d
		}
		e.delta(wk, 0, b, d, gb, dscale, dshift)
		bl.geom.Im2Col(wk.col, wk.x[b*in:(b+1)*in])
		conv.Gemm(false, true, e.c, r, e.hw, 1, d, e.hw, wk.col, e.hw, 1, dw, r)
		biasGrad(db, d, e.hw)
	}
	return nil
}
