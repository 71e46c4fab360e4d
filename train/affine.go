package train

import (
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/deqgo/deq/internal/f32"
	"github.com/deqgo/deq/internal/team"
)

// The inputs of the model's affine maps whose float32 roundings work32
// keeps between affine and affineBackward.
const (
	opEncoder  = iota // the standardised images, the encoder's input
	opFeatures        // the readout's features
	opHidden          // the readout's hidden units
	numOps
)

// work32 is the float32 scratch of the dense model's encoder and readout
// under layers.Float32 for one batch size: each affine map's input
// rounded by affine (read again by affineBackward for the weight
// gradient), a cotangent rounded, a product and a weight gradient, each
// grown on first use.
type work32 struct {
	in     [numOps][]float32
	g, out []float32
	grad   []float32
}

// general returns the rows×cols row-major matrix over data.
func general(rows, cols int, data []float64) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}

// splitMin is the smallest number of multiply–adds of an affine map's
// product (n·rows·cols) that a rowSplit divides between goroutines.
const splitMin = 1 << 22

// rowSplit divides the products of an affine map (the dense model's
// encoder) between the goroutines of a team: the forward product by the
// batch's rows, the weight gradient by the weight's rows, so that no two
// parts write the same memory and the result does not depend on the
// order in which they run. The methods it runs are bound once, so a split
// call allocates nothing.
type rowSplit struct {
	team       *team.Team
	min        int // the smallest product split, splitMin
	call       affineCall
	fwd, wgrad func(p, lo, hi int)
}

// newRowSplit returns a rowSplit with one part per core, or nil on one
// core.
func newRowSplit() *rowSplit {
	parts := runtime.GOMAXPROCS(0)
	if parts < 2 {
		return nil
	}
	r := &rowSplit{team: team.New(parts), min: splitMin}
	r.fwd, r.wgrad = r.call.forwardRows, r.call.gradRows
	runtime.AddCleanup(r, (*team.Team).Close, r.team)
	return r
}

// run calls part over [0, n), on r's team when the product is large
// enough, in one call otherwise.
func (r *rowSplit) run(n int, part func(p, lo, hi int)) {
	c := &r.call
	if c.n*c.w.rows*c.w.cols < r.min {
		part(0, 0, n)
		return
	}
	r.team.Run(n, part)
}

// affineCall holds the operands of an affine map's products: the forward
// product x·W + b into dst, or the weight gradient xᵀg, for n rows.
type affineCall struct {
	dst, x, g []float64
	n         int
	w, b      *param
	s         *work32
	op        int
	w32, g32  []float32 // W's float32 mirror and g rounded (s != nil)
}

// affine writes y = x·W + b (n rows) into dst, split by r (nil: one call).
//
// With s not nil the product runs in single precision: x is rounded to
// float32 into s.in[op] (where affineBackward finds it), W through its
// float32 mirror, the product is accumulated in float32 (f32.Gemm) and
// widened before b is added in float64.
func affine(dst []float64, n int, x []float64, w, b *param, s *work32, op int, r *rowSplit) {
	c := affineCall{dst: dst[:n*w.cols], x: x, n: n, w: w, b: b, s: s, op: op}
	if s != nil {
		f32.Scratch(&s.in[op], n*w.rows)
		f32.Scratch(&s.out, n*w.cols)
		c.w32 = w.m32.Of(w.data)
	}
	if r == nil {
		c.forwardRows(0, 0, n)
		return
	}
	r.call = c
	r.run(n, r.fwd)
	r.call = affineCall{}
}

// forwardRows is affine on the rows [lo, hi) of x.
func (c *affineCall) forwardRows(_, lo, hi int) {
	rows, cols := c.w.rows, c.w.cols
	dst := c.dst[lo*cols : hi*cols]
	if c.s != nil {
		in, out := c.s.in[c.op][lo*rows:hi*rows], c.s.out[lo*cols:hi*cols]
		f32.Convert(in, c.x[lo*rows:hi*rows])
		f32.Gemm(blas.NoTrans, blas.NoTrans, hi-lo, cols, rows, in, c.w32, 0, out)
		for i := range hi - lo {
			row, o := dst[i*cols:(i+1)*cols], out[i*cols:(i+1)*cols]
			for j, v := range o {
				row[j] = c.b.data[j] + float64(v)
			}
		}
		return
	}
	for i := range hi - lo {
		copy(dst[i*cols:(i+1)*cols], c.b.data)
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, general(hi-lo, rows, c.x[lo*rows:]), general(rows, cols, c.w.data), 1, general(hi-lo, cols, dst))
}

// gradRows adds the rows [lo, hi) of the weight gradient xᵀg (the
// weight's rows: the input's columns) to W's gradient.
func (c *affineCall) gradRows(_, lo, hi int) {
	rows, cols, n := c.w.rows, c.w.cols, c.n
	if c.s != nil {
		gw := c.s.grad[lo*cols : hi*cols]
		blas32.Implementation().Sgemm(blas.Trans, blas.NoTrans, hi-lo, cols, n, 1, c.s.in[c.op][lo:n*rows], rows, c.g32, cols, 0, gw, cols)
		f32.AddTo(c.w.grad[lo*cols:hi*cols], gw)
		return
	}
	xs := blas64.General{Rows: n, Cols: hi - lo, Stride: rows, Data: c.x[lo : n*rows]}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, xs, general(n, cols, c.g), 1, general(hi-lo, cols, c.w.grad[lo*cols:]))
}

// affineBackward adds the gradients of ⟨g, x·W + b⟩ (n rows) to W and b
// and, if dx is not nil, writes g·Wᵀ into dx; r (nil: one call) splits
// the weight gradient.
//
// With s not nil (as for the affine call of x it follows) the products
// run in single precision: g is rounded to float32, the weight gradient
// xᵀg is taken with the rounding of x that affine left in s.in[op],
// accumulated in float32 and added to W's gradient in float64, and g·Wᵀ
// uses W's float32 mirror. b's gradient, the column sums of g, is summed
// in float64.
func affineBackward(dx []float64, n int, x, g []float64, w, b *param, s *work32, op int, r *rowSplit) {
	for i := range n {
		for j, v := range g[i*w.cols : (i+1)*w.cols] {
			b.grad[j] += v
		}
	}
	c := affineCall{x: x, g: g, n: n, w: w, s: s, op: op}
	if s != nil {
		c.g32 = f32.Round(&s.g, g[:n*w.cols])
		f32.Scratch(&s.grad, w.rows*w.cols)
	}
	if r == nil {
		c.gradRows(0, 0, w.rows)
	} else {
		r.call = c
		r.run(w.rows, r.wgrad)
		r.call = affineCall{}
	}
	if dx == nil {
		return
	}
	if s != nil {
		out := f32.Scratch(&s.out, n*w.rows)
		f32.Gemm(blas.NoTrans, blas.Trans, n, w.rows, w.cols, c.g32, w.m32.Of(w.data), 0, out)
		f32.Convert(dx, out)
		return
	}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, general(n, w.cols, g), general(w.rows, w.cols, w.data), 0, general(n, w.rows, dx))
}
