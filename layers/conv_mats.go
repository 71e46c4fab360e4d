package layers

import "github.com/deqgo/deq/layers/internal/conv"

// shiftedProducts are whole-batch matrices of stride-1 3×3 convolutions
// of padding 1 and the shifted products on them (see conv.Shifted), in the
// precision of the products: *shiftedMats[float64] or
// *shiftedMats[float32]. The images, the weights and their gradients stay
// float64; the methods round them into the matrices and widen the results.
// Methods given a range of examples [lo, hi) touch only their columns, so
// that the parts of a team.Team may call them concurrently.
type shiftedProducts interface {
	// setWeights writes the rows×9·In OIHW kernels w into the offset-major
	// weights.
	setWeights(w []float64, rows int)
	// pack packs the examples [lo, hi) of the batch z (ch channels each)
	// as the input of the products.
	pack(z []float64, ch, lo, hi int)
	// forward packs the examples [lo, hi) of the batch z (ch channels
	// each) and computes their convolutions with the rows kernels.
	forward(z []float64, ch, rows, lo, hi int)
	// output writes the convolutions of example b (rows channels) into
	// dst.
	output(dst []float64, rows, b int)
	// packDelta packs the pre-activation cotangents of example b (rows
	// channels).
	packDelta(delta []float64, rows, b int)
	// weightGrad adds into dw (OIHW) the kernels' gradient over the
	// examples [lo, hi) from their packed cotangents, with the scratch of
	// part p.
	weightGrad(dw []float64, p, rows, lo, hi int)
	// adjoint writes into the examples [lo, hi) of dst (ch channels each)
	// the transposed convolution of their packed cotangents.
	adjoint(dst []float64, ch, rows, lo, hi int)
	// vjpScratch allocates the matrices only VJPs use.
	vjpScratch()
	// gradScratch allocates the weight-gradient scratch of parts parts;
	// hasGradScratch reports whether it has been.
	gradScratch(parts int)
	hasGradScratch() bool
}

// convProducts are the shifted products of a Conv evaluator: those of
// shiftedProducts on its batch matrices (the state, In = C channels, and
// the convolutions of its M kernels), and the Conv's own repacking and
// activation.
type convProducts interface {
	shiftedProducts
	// repack writes the kernels of the terms idx (all M when idx is nil)
	// into the offset-major weights and returns their number.
	repack(c *Conv, idx []int) int
	// activate writes σ(W_j∗z + u + b_j) of example b for its k terms
	// (idx as for repack) into act (k·C×HW), u the example's injection.
	activate(c *Conv, act, u []float64, b int, idx []int, k int)
}

// shiftedMats implements shiftedProducts in precision T.
type shiftedMats[T conv.Float] struct {
	sh   conv.Shifted[T]
	ld   int   // columns of the batch matrices
	wr   []T   // rows×9In: the kernels, offset-major
	zp   []T   // In×ld: the input
	outp []T   // rows×ld: the convolutions
	dp   []T   // rows×ld: the pre-activation cotangents (VJPs only)
	dzp  []T   // In×ld: the transposed convolution (VJPs only)
	dwr  [][]T // per part, rows×9In: offset-major gradient of the kernels (VJP only)
}

// convMats implements convProducts in precision T.
type convMats[T conv.Float] struct {
	shiftedMats[T]
}

var (
	_ shiftedProducts = (*shiftedMats[float64])(nil)
	_ shiftedProducts = (*shiftedMats[float32])(nil)
	_ convProducts    = (*convMats[float64])(nil)
	_ convProducts    = (*convMats[float32])(nil)
)

// newShiftedMats returns the matrices of a batch of n in×h×w images and of
// their convolutions with rows kernels.
func newShiftedMats[T conv.Float](in, h, w, rows, n int) *shiftedMats[T] {
	sh := conv.Shifted[T]{In: in, H: h, W: w}
	ld := sh.Ld(n)
	return &shiftedMats[T]{
		sh:   sh,
		ld:   ld,
		wr:   make([]T, rows*9*in),
		zp:   make([]T, in*ld),
		outp: make([]T, rows*ld),
	}
}

// newShiftedProducts returns the shiftedMats of newShiftedMats in the
// precision prec.
func newShiftedProducts(prec Precision, in, h, w, rows, n int) shiftedProducts {
	if prec == Float32 {
		return newShiftedMats[float32](in, h, w, rows, n)
	}
	return newShiftedMats[float64](in, h, w, rows, n)
}

func newConvMats[T conv.Float](c *Conv, n int) *convMats[T] {
	return &convMats[T]{*newShiftedMats[T](c.c, c.geom.H, c.geom.W, c.m*c.c, n)}
}

func (m *shiftedMats[T]) vjpScratch() {
	m.dp = make([]T, len(m.outp))
	m.dzp = make([]T, len(m.zp))
}

func (m *shiftedMats[T]) gradScratch(parts int) {
	for range parts {
		m.dwr = append(m.dwr, make([]T, len(m.wr)))
	}
}

func (m *shiftedMats[T]) hasGradScratch() bool { return m.dwr != nil }

func (m *shiftedMats[T]) setWeights(w []float64, rows int) { m.sh.Repack(m.wr, w, rows) }

func (m *convMats[T]) repack(c *Conv, idx []int) int {
	if idx == nil {
		m.setWeights(c.w.Data(), c.m*c.c)
		return c.m
	}
	sz := c.c * c.geom.ColRows()
	for j, k := range idx {
		m.sh.Repack(m.wr[j*sz:(j+1)*sz], c.kernel(k), c.c)
	}
	return len(idx)
}

func (m *shiftedMats[T]) pack(z []float64, ch, lo, hi int) {
	img := ch * m.sh.H * m.sh.W
	for b := lo; b < hi; b++ {
		m.sh.Pack(m.zp, m.ld, ch, z[b*img:(b+1)*img], b)
	}
}

func (m *shiftedMats[T]) forward(z []float64, ch, rows, lo, hi int) {
	m.pack(z, ch, lo, hi)
	m.sh.Forward(m.outp, rows, m.wr, m.zp, m.ld, lo, hi)
}

func (m *convMats[T]) activate(c *Conv, act, u []float64, b int, idx []int, k int) {
	img := c.c * c.hw
	h, w := c.geom.H, c.geom.W
	bias := c.b.Data()
	at := m.sh.Base() + b*m.sh.P()
	for j := range k {
		t := j
		if idx != nil {
			t = idx[j]
		}
		for ch := range c.c {
			bc := bias[t*c.c+ch]
			src := m.outp[(j*c.c+ch)*m.ld+at:]
			as := act[j*img+ch*c.hw : j*img+(ch+1)*c.hw]
			us := u[ch*c.hw : (ch+1)*c.hw]
			for y := range h {
				preAct(c.act, as[y*w:(y+1)*w], src[y*(w+1):y*(w+1)+w], us[y*w:(y+1)*w], bc)
			}
		}
	}
}

func (m *shiftedMats[T]) output(dst []float64, rows, b int) {
	m.sh.Unpack(dst, m.outp, m.ld, rows, b)
}

func (m *shiftedMats[T]) packDelta(delta []float64, rows, b int) {
	m.sh.Pack(m.dp, m.ld, rows, delta, b)
}

func (m *shiftedMats[T]) weightGrad(dw []float64, p, rows, lo, hi int) {
	g := m.dwr[p]
	clear(g)
	m.sh.WeightGrad(g, rows, m.dp, m.zp, m.ld, lo, hi)
	m.sh.UnrepackAdd(dw, g, rows)
}

func (m *shiftedMats[T]) adjoint(dst []float64, ch, rows, lo, hi int) {
	m.sh.Adjoint(m.dzp, rows, m.wr, m.dp, m.ld, lo, hi)
	img := ch * m.sh.H * m.sh.W
	for b := lo; b < hi; b++ {
		m.sh.Unpack(dst[b*img:(b+1)*img], m.dzp, m.ld, ch, b)
	}
}
