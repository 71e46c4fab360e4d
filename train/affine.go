package train

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/deqgo/deq/internal/f32"
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

// affine writes y = x·W + b (n rows) into dst.
//
// With s not nil the product runs in single precision: x is rounded to
// float32 into s.in[op] (where affineBackward finds it), W through its
// float32 mirror, the product is accumulated in float32 (f32.Gemm) and
// widened before b is added in float64.
func affine(dst []float64, n int, x []float64, w, b *param, s *work32, op int) {
	dst = dst[:n*w.cols]
	if s != nil {
		out := f32.Scratch(&s.out, n*w.cols)
		f32.Gemm(blas.NoTrans, blas.NoTrans, n, w.cols, w.rows, f32.Round(&s.in[op], x[:n*w.rows]), w.m32.Of(w.data), 0, out)
		for r := range n {
			row, o := dst[r*w.cols:(r+1)*w.cols], out[r*w.cols:(r+1)*w.cols]
			for j, v := range o {
				row[j] = b.data[j] + float64(v)
			}
		}
		return
	}
	for r := range n {
		copy(dst[r*w.cols:(r+1)*w.cols], b.data)
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, general(n, w.rows, x), general(w.rows, w.cols, w.data), 1, general(n, w.cols, dst))
}

// affineBackward adds the gradients of ⟨g, x·W + b⟩ (n rows) to W and b
// and, if dx is not nil, writes g·Wᵀ into dx.
//
// With s not nil (as for the affine call of x it follows) the products
// run in single precision: g is rounded to float32, the weight gradient
// xᵀg is taken with the rounding of x that affine left in s.in[op],
// accumulated in float32 and added to W's gradient in float64, and g·Wᵀ
// uses W's float32 mirror. b's gradient, the column sums of g, is summed
// in float64.
func affineBackward(dx []float64, n int, x, g []float64, w, b *param, s *work32, op int) {
	for r := range n {
		for j, v := range g[r*w.cols : (r+1)*w.cols] {
			b.grad[j] += v
		}
	}
	if s != nil {
		g32 := f32.Round(&s.g, g[:n*w.cols])
		gw := f32.Scratch(&s.grad, w.rows*w.cols)
		f32.Gemm(blas.Trans, blas.NoTrans, w.rows, w.cols, n, s.in[op][:n*w.rows], g32, 0, gw)
		f32.AddTo(w.grad, gw)
		if dx != nil {
			out := f32.Scratch(&s.out, n*w.rows)
			f32.Gemm(blas.NoTrans, blas.Trans, n, w.rows, w.cols, g32, w.m32.Of(w.data), 0, out)
			f32.Convert(dx, out)
		}
		return
	}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, general(n, w.rows, x), general(n, w.cols, g), 1, general(w.rows, w.cols, w.grad))
	if dx != nil {
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, general(n, w.cols, g), general(w.rows, w.cols, w.data), 0, general(n, w.rows, dx))
	}
}
