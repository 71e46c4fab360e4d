package layers

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"
)

// This file holds the pieces of the cells whose pre-activation is the
// affine map zW + xU + b of a row z of the hidden state and the matching
// row x of the input (Dense), or whose injection is xU + b (MeanField,
// Experts), and small vector helpers of the cells.

// normalInit is a parameter to fill with independent N(0, 1/fanIn)
// entries.
type normalInit struct {
	p     *Param
	fanIn int
}

// initNormal fills the parameters of inits, in order, with independent
// N(0, 1/fanIn) entries drawn from one PCG stream seeded by (seed, stream):
// the order of inits fixes which draws each parameter gets.
func initNormal(seed, stream uint64, inits ...normalInit) {
	rng := rand.New(rand.NewPCG(seed, stream))
	for _, in := range inits {
		fillNormal(in.p.Data(), rng, 1/math.Sqrt(float64(in.fanIn)))
	}
}

// inputTerm sets dst, a row-major x.Rows×len(b) matrix, to xU + b: the
// input's part of the pre-activation, b added to every row. U is
// x.Cols×len(b), row-major.
func inputTerm(dst []float64, x blas64.General, u, b []float64) {
	cols := len(b)
	for r := 0; r < x.Rows; r++ {
		copy(dst[r*cols:(r+1)*cols], b)
	}
	mulAB(1, x, dense(x.Cols, cols, u), 1, dense(x.Rows, cols, dst))
}

// affineVJP back-propagates the cotangent delta (rows×k) of the
// pre-activation zW + xU + b, with W Hidden×k, U Input×k and b 1×k: it
// sets dz = δWᵀ and dx = δUᵀ (each unless nil) and adds zᵀδ, xᵀδ and the
// column sums of δ to the gradients of W, U and b.
func affineVJP(dz, dx, z, x, delta []float64, w, u, b *Param, rows int) {
	h, k := w.Dims()
	if dz != nil {
		mulABt(1, dense(rows, k, delta), dense(h, k, w.Data()), 0, dense(rows, h, dz))
	}
	mulAtB(1, dense(rows, h, z), dense(rows, k, delta), 1, dense(h, k, w.GradData()))
	inputVJP(dx, x, delta, u, b, rows)
}

// inputVJP back-propagates the cotangent delta (rows×k) of the input term
// xU + b, with U Input×k and b 1×k: it sets dx = δUᵀ unless dx is nil and
// adds xᵀδ and the column sums of δ to the gradients of U and b.
func inputVJP(dx, x, delta []float64, u, b *Param, rows int) {
	d, k := u.Dims()
	dm := dense(rows, k, delta)
	if dx != nil {
		mulABt(1, dm, dense(d, k, u.Data()), 0, dense(rows, d, dx))
	}
	mulAtB(1, dense(rows, d, x), dm, 1, dense(d, k, u.GradData()))
	addColSums(b.GradData(), delta, rows, k)
}

// affineNode returns the node zW + xU + b, b (1×k) broadcast along the
// rows.
func affineNode(z, w, x, u, b *G.Node) *G.Node {
	pre := G.Must(G.Add(G.Must(G.Mul(z, w)), G.Must(G.Mul(x, u))))
	return G.Must(G.BroadcastAdd(pre, b, nil, []byte{0}))
}

// pnorm returns the ℓp norm of x, 1 ≤ p ≤ ∞.
func pnorm(x []float64, p float64) float64 {
	switch {
	case math.IsInf(p, 1):
		m := 0.0
		for _, v := range x {
			m = math.Max(m, math.Abs(v))
		}
		return m
	case p == 1:
		s := 0.0
		for _, v := range x {
			s += math.Abs(v)
		}
		return s
	case p == 2:
		return blas64.Nrm2(blas64.Vector{N: len(x), Inc: 1, Data: x})
	}
	s := 0.0
	for _, v := range x {
		s += math.Pow(math.Abs(v), p)
	}
	return math.Pow(s, 1/p)
}

// mulScaled sets dst = w·src.
func mulScaled(dst []float64, w float64, src []float64) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = w * v
	}
}
