package conv

import "fmt"

// Shifted computes stride-1 3×3 convolutions with padding 1 on a batch of
// C×H×W images without im2col, as nine matrix products on shifted column
// windows of one matrix, in precision T: the batch matrices, the weights
// and the products are T (float32 rounds the float64 images and weights
// that Pack and Repack take), the images float64.
//
// # Layout
//
// A batch is a row-major matrix of Rows rows (channels) and Ld() columns:
// after Base() leading zero columns, image b occupies the P() =
// (H+1)(W+1) columns from Base() + b·P(), pixel (y, x) at column
// Base() + b·P() + y(W+1) + x. Column x = W of every row and the last row
// y = H are zero padding, shared by the right and left neighbours of a row
// and by the bottom and top neighbours of two consecutive images, so the
// neighbour (y + dy, x + dx) of a pixel, dy, dx ∈ {−1, 0, 1}, is the column
// at offset dy(W+1) + dx, in the padding when it falls outside the image.
// Pack and Unpack convert an image from and to its CHW form. Padding
// columns are never written: a matrix allocated zero keeps them zero.
//
// # Kernels
//
// Weights are a row-major Out×(9·In) matrix in offset-major order: column
// k·In + c holds the weight of input channel c at kernel offset k = 3ky + kx
// (Repack converts from the OIHW order of im2col), so that kernel offset k
// is the Out×In column window starting at column k·In.
//
// The products of Forward, Adjoint and WeightGrad cover the images [lo, hi)
// of the batch and read no column of any other image except the padding of
// image lo − 1, so that calls for disjoint ranges of images may run
// concurrently on the same matrices.
type Shifted[T Float] struct {
	In, H, W int
}

// shiftedChunk is the number of output columns that Forward and Adjoint
// accumulate nine products into at a time, so that the output block stays
// in cache between them.
const shiftedChunk = 256

// Check returns an error, naming the fields, if a size is not positive.
func (s Shifted[T]) Check() error {
	if s.In < 1 || s.H < 1 || s.W < 1 {
		return fmt.Errorf("conv: Shifted.In, H, W = %d, %d, %d must be positive", s.In, s.H, s.W)
	}
	return nil
}

// P returns (H+1)(W+1), the columns of one image.
func (s Shifted[T]) P() int { return (s.H + 1) * (s.W + 1) }

// Base returns W + 2, the leading zero columns.
func (s Shifted[T]) Base() int { return s.W + 2 }

// Ld returns Base() + n·P(), the columns of a batch of n images.
func (s Shifted[T]) Ld(n int) int { return s.Base() + n*s.P() }

// offset returns the column offset of kernel position k = 3ky + kx.
func (s Shifted[T]) offset(k int) int { return (k/3-1)*(s.W+1) + k%3 - 1 }

// span returns the columns [from, to) from the first to the last pixel of
// images [lo, hi).
func (s Shifted[T]) span(lo, hi int) (from, to int) {
	return s.Base() + lo*s.P(), s.Base() + (hi-1)*s.P() + (s.H-1)*(s.W+1) + s.W
}

// Pack writes the rows×H×W image x (CHW) into the pixel columns of image b
// of the rows×ld matrix dst.
func (s Shifted[T]) Pack(dst []T, ld, rows int, x []float64, b int) {
	s.move(true, dst, x, ld, rows, b)
}

// Unpack writes the pixel columns of image b of the rows×ld matrix src
// into the rows×H×W image dst (CHW).
func (s Shifted[T]) Unpack(dst []float64, src []T, ld, rows, b int) {
	s.move(false, src, dst, ld, rows, b)
}

// move copies the rows×H×W image img into the pixel columns of image b of
// the rows×ld matrix mat if pack is set, and back otherwise.
func (s Shifted[T]) move(pack bool, mat []T, img []float64, ld, rows, b int) {
	hw, w := s.H*s.W, s.W
	at := s.Base() + b*s.P()
	for c := range rows {
		ic := img[c*hw : (c+1)*hw]
		mc := mat[c*ld+at:]
		for y := range s.H {
			// Rows of W entries: an inline loop (T's shape is known here)
			// costs less than a call to f32.Convert per row.
			mr, ir := mc[y*(w+1):y*(w+1)+w], ic[y*w:(y+1)*w]
			if pack {
				for i, v := range ir {
					mr[i] = T(v)
				}
			} else {
				for i, v := range mr {
					ir[i] = float64(v)
				}
			}
		}
	}
}

// Repack writes the rows×(In·9) OIHW weights w into dst in offset-major
// order (see Shifted).
func (s Shifted[T]) Repack(dst []T, w []float64, rows int) { s.reorder(false, w, dst, rows) }

// UnrepackAdd adds the offset-major rows×(9·In) matrix g into the OIHW
// matrix dst: the adjoint of Repack.
func (s Shifted[T]) UnrepackAdd(dst []float64, g []T, rows int) { s.reorder(true, dst, g, rows) }

// reorder copies the OIHW matrix oihw into the offset-major matrix om, or
// adds om into oihw if add is set.
func (s Shifted[T]) reorder(add bool, oihw []float64, om []T, rows int) {
	r := 9 * s.In
	for o := range rows {
		a, b := oihw[o*r:(o+1)*r], om[o*r:(o+1)*r]
		for c := range s.In {
			for k := range 9 {
				if add {
					a[c*9+k] += float64(b[k*s.In+c])
				} else {
					b[k*s.In+c] = T(a[c*9+k])
				}
			}
		}
	}
}

// Forward writes into the columns of images [lo, hi) of the rows×ld matrix
// out the convolution of the In×ld batch x with the rows×(9·In)
// offset-major weights w: out[:, p] = Σ_k W_k·x[:, p + offset_k]. The
// padding columns of out between the first and last pixel get values that
// mean nothing.
func (s Shifted[T]) Forward(out []T, rows int, w, x []T, ld, lo, hi int) {
	s.products(false, out, rows, w, x, ld, lo, hi)
}

// Adjoint writes into the columns of images [lo, hi) of the In×ld matrix
// dx the transposed convolution of the rows×ld batch d (zero in its
// padding) with the offset-major weights w: dx[:, p] = Σ_k W_kᵀ·d[:, p −
// offset_k]. The padding columns of dx between the first and last pixel get
// values that mean nothing.
func (s Shifted[T]) Adjoint(dx []T, rows int, w, d []T, ld, lo, hi int) {
	s.products(true, dx, rows, w, d, ld, lo, hi)
}

// products runs Forward, or Adjoint when adj is set, image by image (so
// that the padding row of an image is skipped) in chunks of at most
// shiftedChunk columns.
func (s Shifted[T]) products(adj bool, out []T, rows int, w, x []T, ld, lo, hi int) {
	r := 9 * s.In
	m, k, sign := rows, s.In, 1
	if adj {
		m, k, sign = s.In, rows, -1
	}
	for b := lo; b < hi; b++ {
		from, to := s.span(b, b+1)
		for j := from; j < to; j += shiftedChunk {
			n := min(shiftedChunk, to-j)
			for o := range 9 {
				beta := T(1)
				if o == 0 {
					beta = 0
				}
				Gemm(adj, false, m, n, k, 1, w[o*s.In:], r, x[j+sign*s.offset(o):], ld, beta, out[j:], ld)
			}
		}
	}
}

// WeightGrad adds into the offset-major rows×(9·In) matrix dw the gradient
// of ⟨d, Forward(w, x)⟩ over images [lo, hi): dW_k += d·x[:, · +
// offset_k]ᵀ, d the rows×ld cotangent (zero in its padding).
func (s Shifted[T]) WeightGrad(dw []T, rows int, d, x []T, ld, lo, hi int) {
	from, to := s.span(lo, hi)
	r := 9 * s.In
	for k := range 9 {
		Gemm(false, true, rows, s.In, to-from, 1, d[from:], ld, x[from+s.offset(k):], ld, 1, dw[k*s.In:], r)
	}
}
