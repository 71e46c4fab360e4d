package solver

import (
	"math"
	"strconv"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Schatten is the Schatten-p norm of a rows×cols matrix stored row-major: the
// ℓp norm of its singular values, for 2 ≤ p ≤ ∞ (p = 2 is the Frobenius norm,
// p = ∞ the spectral norm).
//
// A Schatten-p norm is the ℓp norm of the k = min{rows, cols} singular
// values, and Schatten-r is (r − 1)-smooth for r ≥ 2 (Ball, Carlen and Lieb
// 1994; Juditsky and Nemirovski 2008, Example 3.3), so its witness (see
// Norm) is the Schatten-r norm chosen by the rule of LP with d = k:
// κ ≤ min{p − 1, e·(2 ln k − 1)}.
//
// Values of p other than 2 compute the eigenvalues σ_i² of the k×k Gram
// matrix (AᵀA or AAᵀ, k = min{rows, cols}) of the matrix rescaled by its
// largest entry, with LAPACK's symmetric eigensolver, in scratch space held
// by the value: use Clone for each goroutine. Squaring loses the relative
// accuracy of singular values far below σ_max, but not that of the norm: for
// p ≥ 2 every term σ_i^p is computed to within about p·k·ε·σ_max^p, so the
// norm keeps a relative accuracy of order k·ε.
type Schatten struct {
	p          float64
	rows, cols int
	scaled     blas64.General   // the point divided by its largest entry
	gram       blas64.Symmetric // its k×k Gram matrix
	eig        []float64
	work       []float64
}

var _ Norm = (*Schatten)(nil)

// NewSchatten returns the Schatten-p norm on rows×cols matrices. It returns an
// error if p is outside [2, ∞], a dimension is not positive or rows·cols
// overflows an int. For p ≠ 2 it allocates rows·cols + k² + O(k) floats of
// scratch space, k = min{rows, cols}.
func NewSchatten(p float64, rows, cols int) (*Schatten, error) {
	if !(p >= 2) {
		return nil, normErr("", "Schatten norm exponent p = %v out of range [2, ∞]", p)
	}
	if rows < 1 || cols < 1 {
		return nil, normErr("", "Schatten norm shape %d×%d must be positive", rows, cols)
	}
	if rows > math.MaxInt/cols {
		return nil, normErr("", "Schatten norm shape %d×%d overflows the dimension", rows, cols)
	}
	s := &Schatten{p: p, rows: rows, cols: cols}
	if p != 2 {
		k := min(rows, cols)
		s.scaled = blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: make([]float64, rows*cols)}
		s.gram = blas64.Symmetric{N: k, Stride: k, Uplo: blas.Upper, Data: make([]float64, k*k)}
		s.eig = make([]float64, k)
		query := []float64{0}
		lapack64.Syev(lapack.EVNone, s.gram, s.eig, query, -1)
		s.work = make([]float64, int(query[0]))
	}
	return s, nil
}

// P returns the exponent p.
func (n *Schatten) P() float64 { return n.p }

// Dims returns the matrix shape.
func (n *Schatten) Dims() (rows, cols int) { return n.rows, n.cols }

// Len implements Norm.
func (n *Schatten) Len() int { return n.rows * n.cols }

// Norm implements Norm. It does not allocate.
func (n *Schatten) Norm(x []float64) float64 {
	checkLen(n.rows*n.cols, x)
	if n.p == 2 {
		return lpNorm(x, 2)
	}
	scale := 0.0
	for _, v := range x {
		a := math.Abs(v)
		if math.IsNaN(a) {
			return a
		}
		if a > scale {
			scale = a
		}
	}
	if scale == 0 || math.IsInf(scale, 1) {
		return scale
	}
	for i, v := range x {
		n.scaled.Data[i] = v / scale
	}
	t := blas.Trans // AᵀA, cols×cols
	if n.rows < n.cols {
		t = blas.NoTrans // AAᵀ, rows×rows
	}
	blas64.Syrk(t, 1, n.scaled, 0, n.gram)
	if !lapack64.Syev(lapack.EVNone, n.gram, n.eig, n.work, len(n.work)) {
		return math.NaN()
	}
	top := n.eig[len(n.eig)-1] // eigenvalues ascend; top ≥ 1 since an entry is ±1
	if math.IsInf(n.p, 1) {
		return scale * math.Sqrt(top)
	}
	half := n.p / 2
	s := 0.0
	for _, l := range n.eig {
		if l > 0 { // rounding can make the eigenvalues of a singular Gram matrix negative
			s += pow(l/top, half)
		}
	}
	return scale * math.Sqrt(top) * math.Pow(s, 1/n.p)
}

// Kappa implements Norm.
func (n *Schatten) Kappa() float64 { return n.witness().kappa() }

// C implements Norm.
func (n *Schatten) C() float64 { return n.witness().c }

func (n *Schatten) witness() witness { return lrWitness(n.p, min(n.rows, n.cols), 1) }

// Clone implements Norm.
func (n *Schatten) Clone() Norm {
	c, _ := NewSchatten(n.p, n.rows, n.cols)
	return c
}

// String implements Norm.
func (n *Schatten) String() string {
	if math.IsInf(n.p, 1) {
		return "schatten:inf"
	}
	return "schatten:" + strconv.FormatFloat(n.p, 'g', -1, 64)
}
