package f32

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/deqgo/deq/internal/numeric"
)

// Mirror is a float32 copy of float64 values (a parameter's), refreshed
// when they change. Its zero value is empty and ready to use.
type Mirror struct {
	src []float64 // the values last rounded
	f32 []float32
}

// Of returns v rounded to float32, rounding again only when v differs (bit
// for bit) from the values last rounded. The result is owned by m and
// valid until the next call.
func (m *Mirror) Of(v []float64) []float32 {
	if len(m.f32) != len(v) {
		m.src = make([]float64, len(v))
		m.f32 = make([]float32, len(v))
	} else if numeric.SameBits(m.src, v) {
		return m.f32
	}
	copy(m.src, v)
	Convert(m.f32, v)
	return m.f32
}

// Round writes src rounded to float32 into dst (grown to len(src)) and
// returns it.
func Round(dst *[]float32, src []float64) []float32 {
	d := Scratch(dst, len(src))
	Convert(d, src)
	return d
}

// Scratch returns *s with length n, allocating it when its capacity is
// short.
func Scratch(s *[]float32, n int) []float32 {
	if cap(*s) < n {
		*s = make([]float32, n)
	}
	return (*s)[:n]
}

// Convert writes src into dst, element by element, converted to D (rounded
// from float64 to float32, or widened from float32 to float64).
func Convert[D, S float32 | float64](dst []D, src []S) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = D(v)
	}
}

// AddTo adds src, widened to float64, into dst, element by element.
func AddTo(dst []float64, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += float64(v)
	}
}

// Gemm sets (beta = 0) or adds to (beta = 1) the row-major m×n matrix dst
// the product op(a)·op(b) of the row-major matrices a (m×k, or k×m with
// ta) and b (k×n, or n×k with tb), in single precision (blas32).
//
// It is one call on the whole matrices, as blas64's float64 products are,
// with every BLAS; a product tiled in blocks (as the convolutions' are
// under gonum's own BLAS) would sum in another order and round
// differently.
func Gemm(ta, tb blas.Transpose, m, n, k int, a, b []float32, beta float32, dst []float32) {
	lda, ldb := k, n
	if ta == blas.Trans {
		lda = m
	}
	if tb == blas.Trans {
		ldb = k
	}
	blas32.Implementation().Sgemm(ta, tb, m, n, k, 1, a, max(lda, 1), b, max(ldb, 1), beta, dst, max(n, 1))
}
