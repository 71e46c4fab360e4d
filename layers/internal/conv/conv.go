package conv

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// Geom is the geometry of a 2-D convolution with square K×K kernels on
// images of In channels of H×W pixels, stored channel-major (CHW, row-major
// within a channel), with zero padding Pad on every side and stride Stride.
type Geom struct {
	In, H, W       int
	K, Stride, Pad int
}

// Check returns an error if a field is out of range or the output is empty.
func (g Geom) Check() error {
	switch {
	case g.In < 1 || g.H < 1 || g.W < 1:
		return fmt.Errorf("conv: image %d×%d×%d must have positive sizes", g.In, g.H, g.W)
	case g.K < 1 || g.Stride < 1 || g.Pad < 0:
		return fmt.Errorf("conv: kernel %d, stride %d, padding %d out of range", g.K, g.Stride, g.Pad)
	case g.OutH() < 1 || g.OutW() < 1:
		return fmt.Errorf("conv: empty output for a %d×%d image and kernel %d", g.H, g.W, g.K)
	}
	return nil
}

// OutH returns the output height ⌊(H + 2·Pad − K)/Stride⌋ + 1.
func (g Geom) OutH() int { return (g.H+2*g.Pad-g.K)/g.Stride + 1 }

// OutW returns the output width.
func (g Geom) OutW() int { return (g.W+2*g.Pad-g.K)/g.Stride + 1 }

// ColRows returns In·K·K, the rows of the column matrix.
func (g Geom) ColRows() int { return g.In * g.K * g.K }

// ColCols returns OutH·OutW, the columns of the column matrix.
func (g Geom) ColCols() int { return g.OutH() * g.OutW() }

// ImageLen returns In·H·W.
func (g Geom) ImageLen() int { return g.In * g.H * g.W }

// blocks calls fn for every row (c, ky, kx) of the column matrix col, in
// order, with that row (OutH·OutW entries) and channel c of the image x, so
// that Im2Col and its adjoint walk the same geometry.
func (g Geom) blocks(col, x []float64, fn func(row, img []float64, ky, kx int)) {
	n := g.OutH() * g.OutW()
	hw := g.H * g.W
	r := 0
	for c := 0; c < g.In; c++ {
		img := x[c*hw : (c+1)*hw]
		for ky := 0; ky < g.K; ky++ {
			for kx := 0; kx < g.K; kx++ {
				fn(col[r*n:(r+1)*n], img, ky, kx)
				r++
			}
		}
	}
}

// unitSpan returns, for Stride 1 and kernel column kx, the output columns
// [lo, hi) among the ow = OutW() that read inside the image (ix = ox + kx − Pad); hi ≤ lo when
// none do.
func (g Geom) unitSpan(kx, ow int) (lo, hi int) {
	return min(ow, max(0, g.Pad-kx)), min(ow, g.W+g.Pad-kx)
}

// Im2Col writes the column matrix of the image x into col, a row-major
// ColRows×ColCols matrix: row (c, ky, kx), column (oy, ox) holds
// x[c, oy·Stride + ky − Pad, ox·Stride + kx − Pad], or 0 outside the image.
// A weight matrix of shape Out×(In·K·K) (OIHW order) times col is then the
// convolution, Out×(OutH·OutW).
func (g Geom) Im2Col(col, x []float64) {
	oh, ow := g.OutH(), g.OutW()
	g.blocks(col, x, func(dst, img []float64, ky, kx int) {
		for oy := 0; oy < oh; oy++ {
			row := dst[oy*ow : (oy+1)*ow]
			iy := oy*g.Stride + ky - g.Pad
			if iy < 0 || iy >= g.H {
				clear(row)
				continue
			}
			src := img[iy*g.W : (iy+1)*g.W]
			if g.Stride == 1 {
				// ix = ox + kx − Pad: a shifted copy with zero ends.
				lo, hi := g.unitSpan(kx, ow)
				clear(row[:lo])
				if hi > lo {
					copy(row[lo:hi], src[lo+kx-g.Pad:hi+kx-g.Pad])
				} else {
					hi = lo
				}
				clear(row[hi:])
				continue
			}
			for ox := range row {
				ix := ox*g.Stride + kx - g.Pad
				if ix < 0 || ix >= g.W {
					row[ox] = 0
				} else {
					row[ox] = src[ix]
				}
			}
		}
	})
}

// Col2ImAdd adds the adjoint of Im2Col applied to col into x: every entry of
// col is added to the pixel it was copied from (entries from the padding are
// dropped).
func (g Geom) Col2ImAdd(x, col []float64) {
	oh, ow := g.OutH(), g.OutW()
	g.blocks(col, x, func(src, img []float64, ky, kx int) {
		for oy := 0; oy < oh; oy++ {
			iy := oy*g.Stride + ky - g.Pad
			if iy < 0 || iy >= g.H {
				continue
			}
			row := src[oy*ow : (oy+1)*ow]
			dst := img[iy*g.W : (iy+1)*g.W]
			if g.Stride == 1 {
				if lo, hi := g.unitSpan(kx, ow); hi > lo {
					d := dst[lo+kx-g.Pad : hi+kx-g.Pad]
					for i, v := range row[lo:hi] {
						d[i] += v
					}
				}
				continue
			}
			for ox, v := range row {
				ix := ox*g.Stride + kx - g.Pad
				if ix >= 0 && ix < g.W {
					dst[ix] += v
				}
			}
		}
	})
}

// Block size of Gemm: gonum's Dgemm multiplies serially (and allocates
// nothing) when the result has fewer than four 64×64 blocks, and 64×64×64
// blocks keep its operands in cache, as its own parallel path does.
const block = 64

// even returns the block size at most block that splits x into the fewest,
// most nearly equal blocks.
func even(x int) int {
	nb := (x + block - 1) / block
	return (x + nb - 1) / nb
}

// Float is the element type of the matrix products: float64 (through
// gonum's blas64) or float32 (through blas32, single precision).
type Float interface{ float32 | float64 }

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, op(A)
// m×k and op(B) k×n, through blas64 (float64) or blas32 (float32). With
// gonum's own implementation installed it multiplies in blocks of at most
// 64×64×64 (split evenly), so that gonum stays on its serial,
// allocation-free path with operands in cache; with any other (OpenBLAS,
// which deq's command runs on one thread) it makes one call, which blocks
// for the cache itself and spends less on calls and packing
// (BenchmarkGemmShapes). One call may run on several OpenBLAS threads when
// the environment asks for them (OPENBLAS_NUM_THREADS > 1; deq's command
// sets one otherwise), also inside a Team's parts. tA and tB select
// transposes: A is then k×m with
// stride lda, B n×k with stride ldb.
func Gemm[T Float](tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	if tA {
		ta = blas.Trans
	}
	if tB {
		tb = blas.Trans
	}
	if !native[T]() {
		gemm(ta, tb, m, n, k, alpha, a, max(lda, 1), b, max(ldb, 1), beta, c, max(ldc, 1))
		return
	}
	tiled(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// tiled is Gemm in blocks of at most 64×64×64, split evenly, for m, n > 0.
func tiled[T Float](ta, tb blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	tA, tB := ta == blas.Trans, tb == blas.Trans
	if k == 0 {
		for i := 0; i < m; i += block {
			for j := 0; j < n; j += block {
				gemm(ta, tb, min(block, m-i), min(block, n-j), 0, alpha, a, max(lda, 1), b, max(ldb, 1), beta, c[i*ldc+j:], ldc)
			}
		}
		return
	}
	bm, bn, bk := even(m), even(n), even(k)
	for i := 0; i < m; i += bm {
		mi := min(bm, m-i)
		for j := 0; j < n; j += bn {
			nj := min(bn, n-j)
			cs := c[i*ldc+j:]
			for l := 0; l < k; l += bk {
				kl := min(bk, k-l)
				var as, bs []T
				if tA {
					as = a[l*lda+i:]
				} else {
					as = a[i*lda+l:]
				}
				if tB {
					bs = b[j*ldb+l:]
				} else {
					bs = b[l*ldb+j:]
				}
				bt := T(1)
				if l == 0 {
					bt = beta
				}
				gemm(ta, tb, mi, nj, kl, alpha, as, lda, bs, ldb, bt, cs, ldc)
			}
		}
	}
}

// native reports whether the BLAS installed for T (blas64 or blas32) is
// gonum's own.
func native[T Float]() bool {
	var t T
	switch any(t).(type) {
	case float64:
		_, ok := blas64.Implementation().(gonum.Implementation)
		return ok
	default:
		_, ok := blas32.Implementation().(gonum.Implementation)
		return ok
	}
}

// gemm calls the installed Dgemm (float64) or Sgemm (float32).
func gemm[T Float](ta, tb blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	switch a := any(a).(type) {
	case []float64:
		blas64.Implementation().Dgemm(ta, tb, m, n, k, float64(alpha), a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	case []float32:
		blas32.Implementation().Sgemm(ta, tb, m, n, k, float32(alpha), a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	}
}
