package layers

import "github.com/deqgo/deq/internal/conv"

// convProducts are the whole-batch matrices of a Conv evaluator and the
// shifted products on them (see conv.Shifted), in the precision of the
// cell's products: *convMats[float64] under Float64, *convMats[float32]
// under Float32. The images, the parameters and their gradients stay
// float64; the methods round them into the matrices and widen the results.
// Methods given a range of examples [lo, hi) touch only their columns, so
// that the parts of a conv.Team may call them concurrently.
type convProducts interface {
	// repack writes the kernels of the terms idx (all M when idx is nil)
	// into the offset-major weights and returns their number.
	repack(c *Conv, idx []int) int
	// forward packs the examples [lo, hi) of the batch z (ch channels
	// each) and computes their convolutions with the rows repacked
	// kernels.
	forward(z []float64, ch, rows, lo, hi int)
	// activate writes σ(W_j∗z + u + b_j) of example b for its k terms
	// (idx as for repack) into act (k·C×HW), u the example's injection.
	activate(c *Conv, act, u []float64, b int, idx []int, k int)
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

// convMats implements convProducts in precision T.
type convMats[T conv.Float] struct {
	sh   conv.Shifted[T]
	ld   int   // columns of the batch matrices
	wr   []T   // M·C×9C: the kernels of the terms, offset-major
	zp   []T   // C×ld: the state
	outp []T   // M·C×ld: the convolutions W_m∗z
	dp   []T   // M·C×ld: the pre-activation cotangents (VJPs only)
	dzp  []T   // C×ld: the transposed convolution (VJPs only)
	dwr  [][]T // per part, M·C×9C: offset-major gradient of W (VJP only)
}

var (
	_ convProducts = (*convMats[float64])(nil)
	_ convProducts = (*convMats[float32])(nil)
)

func newConvMats[T conv.Float](c *Conv, n int) *convMats[T] {
	sh := conv.Shifted[T]{In: c.c, H: c.geom.H, W: c.geom.W}
	ld := sh.Ld(n)
	return &convMats[T]{
		sh:   sh,
		ld:   ld,
		wr:   make([]T, len(c.w.Data())),
		zp:   make([]T, c.c*ld),
		outp: make([]T, c.m*c.c*ld),
	}
}

func (m *convMats[T]) vjpScratch() {
	m.dp = make([]T, len(m.outp))
	m.dzp = make([]T, len(m.zp))
}

func (m *convMats[T]) gradScratch(parts int) {
	for range parts {
		m.dwr = append(m.dwr, make([]T, len(m.wr)))
	}
}

func (m *convMats[T]) hasGradScratch() bool { return m.dwr != nil }

func (m *convMats[T]) repack(c *Conv, idx []int) int {
	if idx == nil {
		m.sh.Repack(m.wr, c.w.Data(), c.m*c.c)
		return c.m
	}
	sz := c.c * c.geom.ColRows()
	for j, k := range idx {
		m.sh.Repack(m.wr[j*sz:(j+1)*sz], c.kernel(k), c.c)
	}
	return len(idx)
}

func (m *convMats[T]) forward(z []float64, ch, rows, lo, hi int) {
	img := ch * m.sh.H * m.sh.W
	for b := lo; b < hi; b++ {
		m.sh.Pack(m.zp, m.ld, ch, z[b*img:(b+1)*img], b)
	}
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

func (m *convMats[T]) packDelta(delta []float64, rows, b int) {
	m.sh.Pack(m.dp, m.ld, rows, delta, b)
}

func (m *convMats[T]) weightGrad(dw []float64, p, rows, lo, hi int) {
	g := m.dwr[p]
	clear(g)
	m.sh.WeightGrad(g, rows, m.dp, m.zp, m.ld, lo, hi)
	m.sh.UnrepackAdd(dw, g, rows)
}

func (m *convMats[T]) adjoint(dst []float64, ch, rows, lo, hi int) {
	m.sh.Adjoint(m.dzp, rows, m.wr, m.dp, m.ld, lo, hi)
	img := ch * m.sh.H * m.sh.W
	for b := lo; b < hi; b++ {
		m.sh.Unpack(dst[b*img:(b+1)*img], m.dzp, m.ld, ch, b)
	}
}
