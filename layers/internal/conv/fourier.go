package conv

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/internal/numeric"
)

// FourierBound bounds the ℓ2 operator norm of stride-1 convolutions with
// Out×In×K×K kernels (OIHW, row-major) on H×W images with zero padding Pad.
//
// The zero-padded convolution is the restriction of a circular convolution
// on a larger torus (H + max(Pad, K−1−Pad) rows, likewise columns) to the
// image: the wrapped-around taps land on padding, which is zero. A circular
// convolution is diagonalised by the 2-D discrete Fourier transform, where
// it acts at frequency ω as the Out×In complex matrix K̂(ω) = Σ_t W_t e^{−iω·t};
// its norm is max_ω ‖K̂(ω)‖₂, which bounds the restriction's. Each ‖K̂(ω)‖₂ is
// the largest singular value of the real 2Out×2In matrix
// [[Re K̂, −Im K̂], [Im K̂, Re K̂]], computed by gonum's SVD. The bound is
// within rounding of a certificate; it is tight up to the edge effects of
// the padding (it is the limit of the zero-padded norm as H, W grow).
type FourierBound struct {
	out, in, k, pad int
	ny, nx          int
	r               *mat.Dense
	svd             mat.SVD
	sv              []float64
}

// NewFourierBound returns the bound's workspace for the given shapes.
func NewFourierBound(out, in, k, h, w, pad int) *FourierBound {
	ext := max(pad, k-1-pad)
	return &FourierBound{
		out: out, in: in, k: k, pad: pad,
		ny: h + ext, nx: w + ext,
		r:  mat.NewDense(2*out, 2*in, nil),
		sv: make([]float64, 2*min(out, in)),
	}
}

// Norm returns max_ω ‖K̂(ω)‖₂ for the kernel w (length Out·In·K·K), an upper
// bound on the convolution's ℓ2 operator norm. It returns +Inf if an SVD
// fails, and NaN, computing nothing, if w holds NaN or ±Inf.
func (f *FourierBound) Norm(w []float64) float64 {
	if !numeric.AllFinite(w) {
		return math.NaN()
	}
	k, out, in := f.k, f.out, f.in
	kk := k * k
	best := 0.0
	raw := f.r.RawMatrix()
	for fy := 0; fy < f.ny; fy++ {
		for fx := 0; fx < f.nx; fx++ {
			// K̂(−ω) is the conjugate of K̂(ω): same singular values.
			cy, cx := (f.ny-fy)%f.ny, (f.nx-fx)%f.nx
			if cy < fy || (cy == fy && cx < fx) {
				continue
			}
			for o := 0; o < out; o++ {
				for i := 0; i < in; i++ {
					re, im := 0.0, 0.0
					taps := w[(o*in+i)*kk : (o*in+i+1)*kk]
					for ky := 0; ky < k; ky++ {
						for kx := 0; kx < k; kx++ {
							th := 2 * math.Pi * (float64(fy*(ky-f.pad))/float64(f.ny) + float64(fx*(kx-f.pad))/float64(f.nx))
							s, c := math.Sincos(th)
							v := taps[ky*k+kx]
							re += v * c
							im -= v * s
						}
					}
					raw.Data[o*raw.Stride+i] = re
					raw.Data[o*raw.Stride+in+i] = -im
					raw.Data[(out+o)*raw.Stride+i] = im
					raw.Data[(out+o)*raw.Stride+in+i] = re
				}
			}
			if !f.svd.Factorize(f.r, mat.SVDNone) {
				return math.Inf(1)
			}
			best = math.Max(best, f.svd.Values(f.sv)[0])
		}
	}
	return best
}
