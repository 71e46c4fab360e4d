package solver

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Norm is a norm on the points of a finite-dimensional space of dimension Len.
//
// Kappa is the smoothness constant κ = B·C² of the space in the sense of the
// reference paper ("quadratically smoothable space"): there is a witness
// norm ‖·‖₊ with ‖x‖ ≤ ‖x‖₊ ≤ C‖x‖ whose square is B-smooth,
// ‖x + y‖₊² ≤ ‖x‖₊² + D(‖·‖₊²)(x)[y] + B‖y‖₊². C returns that C. The
// stochastic methods and the certificates use both (the paper's
// minibatch-variance lemma and its Banach-space concentration proposition
// hold with these constants). Each norm of this package documents its
// witness.
//
// A Norm may hold scratch space, so a single value must not be used from
// several goroutines at once; Clone returns an independent copy.
type Norm interface {
	// Len is the dimension of the points the norm measures.
	Len() int
	// Norm returns ‖x‖. It panics if len(x) != Len().
	Norm(x []float64) float64
	// Kappa returns the smoothness constant κ of the space.
	Kappa() float64
	// C returns the norm-equivalence constant C ≥ 1 of the smooth witness norm.
	C() float64
	// Clone returns a copy that shares no scratch space with the receiver.
	Clone() Norm
	// String names the norm in the syntax accepted by ParseNorm.
	String() string
}

// LP is the ℓp norm (Σ|x_i|^p)^{1/p} on R^d for 2 ≤ p < ∞.
//
// Its witness (see Norm) is an ℓr norm, r ≥ 2, whose square is
// (r − 1)-smooth (Juditsky and Nemirovski 2008, Example 3.2): of the three
// candidates r = p (C = 1, B = p − 1), r = 2 ln d when 2 < 2 ln d < p
// (C = d^{1/r − 1/p} ≤ √e, B = 2 ln d − 1) and r = 2 (C = d^{1/2 − 1/p},
// B = 1), the one with the smallest κ = B·C². So κ ≤ min{p − 1,
// e·(2 ln d − 1)}, and for p − 1 > 2 ln d the ℓ_{2 ln d} witness gives
// κ = (2 ln d − 1)·d^{2/r − 2/p} ≤ e·(2 ln d − 1).
type LP struct {
	p float64
	d int
}

var _ Norm = LP{}

// NewLP returns the ℓp norm on R^d. It returns an error if p is outside
// [2, ∞) or d < 1.
func NewLP(p float64, d int) (LP, error) {
	if !(p >= 2) || math.IsInf(p, 1) {
		return LP{}, normErr("", "ℓp norm exponent p = %v out of range [2, ∞)", p)
	}
	if d < 1 {
		return LP{}, normErr("", "ℓp norm dimension d = %d must be positive", d)
	}
	return LP{p: p, d: d}, nil
}

// P returns the exponent p.
func (n LP) P() float64 { return n.p }

// Len implements Norm.
func (n LP) Len() int { return n.d }

// Norm implements Norm. It neither overflows nor underflows: for p = 2 it
// sums the squares in one pass and falls back to rescaling by the largest
// entry when that sum leaves the range where it is accurate; for other p it
// always rescales.
func (n LP) Norm(x []float64) float64 {
	checkLen(n.d, x)
	return lpNorm(x, n.p)
}

func lpNorm(x []float64, p float64) float64 {
	if p == 2 {
		// Unscaled, the squares below 2⁻¹⁰²² lose at most 2⁻¹⁰⁷⁴ each, a
		// relative error below n·2⁻¹⁷⁴ of a sum of at least 2⁻⁹⁰⁰; a NaN
		// or infinite sum takes the scaled path.
		if ss := dot(x, x); ss >= 0x1p-900 && ss <= math.MaxFloat64 {
			return math.Sqrt(ss)
		}
	}
	scale := 0.0
	for _, v := range x {
		if a := math.Abs(v); a > scale || math.IsNaN(a) {
			scale = a
		}
	}
	if scale == 0 || math.IsNaN(scale) || math.IsInf(scale, 1) {
		return scale
	}
	if p == 2 {
		s := 0.0
		for _, v := range x {
			t := v / scale
			s += t * t
		}
		return scale * math.Sqrt(s)
	}
	s := 0.0
	for _, v := range x {
		s += pow(math.Abs(v)/scale, p)
	}
	return scale * math.Pow(s, 1/p)
}

// pow returns t^p for t ≥ 0, by repeated squaring when p is an integer up to
// 64 (the common exponents), which is cheaper than math.Pow.
func pow(t, p float64) float64 {
	if p > 64 || p != math.Trunc(p) {
		return math.Pow(t, p)
	}
	r := 1.0
	for k := int(p); k > 0; k >>= 1 {
		if k&1 == 1 {
			r *= t
		}
		t *= t
	}
	return r
}

// Kappa implements Norm.
func (n LP) Kappa() float64 { return n.witness().kappa() }

// C implements Norm.
func (n LP) C() float64 { return n.witness().c }

func (n LP) witness() witness { return lrWitness(n.p, n.d, 1) }

// Clone implements Norm.
func (n LP) Clone() Norm { return n }

// String implements Norm.
func (n LP) String() string {
	if n.p == 2 {
		return "l2"
	}
	return "lp:" + strconv.FormatFloat(n.p, 'g', -1, 64)
}

// LInf is the ℓ∞ norm max_i |x_i| on R^d.
//
// ℓ∞ is not itself smooth; its witness (see Norm) is the ℓr norm with
// r = 2 ln d (Juditsky and Nemirovski 2008, Example 3.2), whose square is
// (r − 1)-smooth and for which ‖x‖∞ ≤ ‖x‖r ≤ d^{1/r}‖x‖∞ = √e‖x‖∞: B =
// 2 ln d − 1, C = √e and κ = e·(2 ln d − 1). Where the ℓ2 witness (B = 1,
// C = √d, κ = d) is smaller, that is for d ≤ 9, it is used instead; this is
// the rule of LP with p = ∞.
type LInf struct {
	d int
}

var _ Norm = LInf{}

// NewLInf returns the ℓ∞ norm on R^d. It returns an error if d < 1.
func NewLInf(d int) (LInf, error) {
	if d < 1 {
		return LInf{}, normErr("", "ℓ∞ norm dimension d = %d must be positive", d)
	}
	return LInf{d: d}, nil
}

// Len implements Norm.
func (n LInf) Len() int { return n.d }

// Norm implements Norm. A NaN entry makes the norm NaN.
func (n LInf) Norm(x []float64) float64 {
	checkLen(n.d, x)
	m := 0.0
	for _, v := range x {
		a := math.Abs(v)
		if a > m {
			m = a
		} else if math.IsNaN(a) {
			return a
		}
	}
	return m
}

// Kappa implements Norm.
func (n LInf) Kappa() float64 { return n.witness().kappa() }

// C implements Norm.
func (n LInf) C() float64 { return n.witness().c }

func (n LInf) witness() witness { return lrWitness(math.Inf(1), n.d, 1) }

// Clone implements Norm.
func (n LInf) Clone() Norm { return n }

// String implements Norm.
func (n LInf) String() string { return "linf" }

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

// Aggregate says how Batched combines per-example norms.
type Aggregate int

const (
	// AggMax takes the largest per-example norm: the norm of the product space
	// ℓ∞(E₁, …, E_B). It is the default, so a batch tolerance holds for every
	// example.
	AggMax Aggregate = iota
	// AggMean takes the mean of per-example norms (ℓ1 over examples, scaled);
	// useful for reporting, not for certificates, since the space is not smooth.
	AggMean
)

// Batched is the norm of a batch of Examples independent points, each of
// dimension Example.Len(), stored one after another. Its value is the
// aggregate (by default the maximum) of the per-example norms, and Each
// reports them one by one.
//
// Its witness (see Norm), for n examples with AggMax:
//
//   - for an Example of this package (LP, LInf, Schatten of k×c matrices):
//     the batch norm is the ℓ∞ over examples of the ℓp norms of their
//     values (entries, or the k = min{k, c} singular values), that is an ℓp
//     norm of all N = n·d values held in blocks. The witness is λ·ℓr of all
//     N values (for Schatten: λ times the Schatten-r norm of the
//     block-diagonal matrix of the examples, which restricts the
//     (r − 1)-smooth Schatten-r norm to a subspace), with B = r − 1 and
//     ‖x‖ ≤ ‖x‖₊ ≤ n^{1/r}·d^{|1/r − 1/p|}‖x‖ (λ = d^{1/p − 1/r} when
//     r > p, else 1), r chosen among 2, p and 2 ln N for the smallest κ;
//     so κ ≤ e·(2 ln N − 1) whatever p, as for LInf of dimension N;
//   - for any other Example with witness (E₊, B_E, C_E): the ℓ2 sum of the
//     examples' witnesses, (Σ‖x_i‖₊²)^{1/2}, whose square is B_E-smooth
//     (a sum of B_E-smooth squares), with C = √n·C_E, so κ = n·κ_E.
//
// With AggMean the value is at most the AggMax value and at least 1/n of
// it, so the same witness serves with C multiplied by n. A batch of one
// example reports the example's own constants.
type Batched struct {
	Example  Norm
	Examples int
	Agg      Aggregate
}

var _ Norm = (*Batched)(nil)

// NewBatched returns the max-aggregated norm of n examples measured by ex. It
// returns an error if ex is nil, n < 1, or n·ex.Len() is not a positive int.
func NewBatched(ex Norm, n int) (*Batched, error) {
	if ex == nil {
		return nil, normErr("", "Batched example norm is nil")
	}
	if n < 1 {
		return nil, normErr("", "Batched examples = %d must be positive", n)
	}
	if d := ex.Len(); d < 1 || n > math.MaxInt/d {
		return nil, normErr("", "Batched of %d examples of dimension %d: dimension not positive or overflowing", n, d)
	}
	return &Batched{Example: ex, Examples: n}, nil
}

// Len implements Norm. It is 0 for a Batched without an Example norm, which
// Solve rejects.
func (b *Batched) Len() int {
	if b.Example == nil {
		return 0
	}
	return b.Example.Len() * b.Examples
}

// Norm implements Norm.
func (b *Batched) Norm(x []float64) float64 {
	checkLen(b.Len(), x)
	d := b.Example.Len()
	agg := 0.0
	for i := 0; i < b.Examples; i++ {
		v := b.Example.Norm(x[i*d : (i+1)*d])
		if math.IsNaN(v) {
			return v
		}
		switch b.Agg {
		case AggMean:
			agg += v / float64(b.Examples)
		default:
			agg = math.Max(agg, v)
		}
	}
	return agg
}

// Each writes the per-example norms of x into dst, which must have length
// Examples, and returns it. A nil dst is allocated.
func (b *Batched) Each(dst, x []float64) []float64 {
	checkLen(b.Len(), x)
	if dst == nil {
		dst = make([]float64, b.Examples)
	}
	if len(dst) != b.Examples {
		panic("solver: Batched.Each destination length mismatch")
	}
	d := b.Example.Len()
	for i := range dst {
		dst[i] = b.Example.Norm(x[i*d : (i+1)*d])
	}
	return dst
}

// Kappa implements Norm.
func (b *Batched) Kappa() float64 { return b.witness().kappa() }

// C implements Norm.
func (b *Batched) C() float64 { return b.witness().c }

func (b *Batched) witness() witness {
	var w witness
	switch {
	case b.Examples == 1:
		w = witnessOf(b.Example)
	default:
		if p, d, ok := lpFamily(b.Example); ok {
			w = lrWitness(p, d, b.Examples)
		} else {
			e := witnessOf(b.Example)
			w = witness{b: e.b, c: math.Sqrt(float64(b.Examples)) * e.c}
		}
	}
	if b.Agg == AggMean && b.Examples > 1 {
		w.c *= float64(b.Examples)
	}
	return w
}

// witness is a smooth witness (‖·‖₊, B, C) of a norm ‖·‖ in the sense of
// the reference paper: ‖x‖ ≤ ‖x‖₊ ≤ C‖x‖ and ‖·‖₊² is B-smooth. For the
// norms of this package ‖·‖₊ = scale·ℓr of the norm's values (entries, or
// singular values of each example, all examples of a batch together); r is
// zero for a witness known only through its constants.
type witness struct {
	r, scale float64
	b, c     float64
}

func (w witness) kappa() float64 { return w.b * w.c * w.c }

// witnessOf returns the witness of n: its own for the norms of this
// package, and B = κ/C² from Kappa and C for any other.
func witnessOf(n Norm) witness {
	switch v := n.(type) {
	case LP:
		return v.witness()
	case LInf:
		return v.witness()
	case *Schatten:
		return v.witness()
	case *Batched:
		return v.witness()
	}
	c := n.C()
	return witness{b: n.Kappa() / (c * c), c: c}
}

// lpFamily reports whether n is the ℓp norm of d values (entries, or
// singular values for Schatten) and returns p and d.
func lpFamily(n Norm) (p float64, d int, ok bool) {
	switch v := n.(type) {
	case LP:
		return v.p, v.d, true
	case LInf:
		return math.Inf(1), v.d, true
	case *Schatten:
		return v.p, min(v.rows, v.cols), true
	}
	return 0, 0, false
}

// lrWitness returns the witness of the norm max_i ‖x_i‖_p over n groups
// x_i of d values each (n = 1: the ℓp norm of d values), 2 ≤ p ≤ ∞: the
// scaled ℓr norm of all N = n·d values with B = r − 1, for the r among 2, p
// (if finite) and 2 ln N (if above 2) that gives the smallest κ = B·C².
//
// For one group x_i: ‖x_i‖_p ≤ ‖x_i‖_r when r ≤ p, and
// ‖x_i‖_p ≤ d^{1/p − 1/r}‖x_i‖_r when r > p (Hölder), so with λ = 1 or
// d^{1/p − 1/r} the witness λ‖x‖_r dominates every group's norm, hence the
// maximum; and λ‖x‖_r ≤ λ·n^{1/r}·max_i ‖x_i‖_r ≤ n^{1/r}·d^{|1/r − 1/p|}
// max_i ‖x_i‖_p, which is C.
func lrWitness(p float64, d, n int) witness {
	total := float64(n) * float64(d)
	var buf [3]float64 // on the stack: Kappa and C allocate nothing
	cands := append(buf[:0], 2)
	if !math.IsInf(p, 1) && p > 2 {
		cands = append(cands, p)
	}
	if r := 2 * math.Log(total); r > 2 {
		cands = append(cands, r)
	}
	best := witness{b: math.Inf(1), c: 1}
	for _, r := range cands {
		w := witness{r: r, scale: 1, b: r - 1}
		inv := 1 / p // 0 for p = ∞
		if r <= p {
			w.c = math.Pow(float64(n), 1/r) * math.Pow(float64(d), 1/r-inv)
		} else {
			w.scale = math.Pow(float64(d), inv-1/r)
			w.c = math.Pow(float64(n), 1/r) * w.scale
		}
		if w.kappa() < best.kappa() {
			best = w
		}
	}
	return best
}

// Clone implements Norm.
func (b *Batched) Clone() Norm {
	return &Batched{Example: b.Example.Clone(), Examples: b.Examples, Agg: b.Agg}
}

// String implements Norm. It names the per-example norm.
func (b *Batched) String() string { return b.Example.String() }

// ParseNorm parses a norm name for points of shape rows×cols (cols = 1 for
// vectors): "l2", "lp:P" (2 ≤ P < ∞; "lp:inf" is "linf"), "linf",
// "schatten:P" (2 ≤ P, "inf" allowed). ℓp norms treat the matrix as a vector
// of rows·cols entries. Names are case-insensitive and may carry surrounding
// space; the String of the result is the canonical name, which parses back to
// the same norm. Errors quote the name and, for a bad exponent, the exponent.
func ParseNorm(name string, rows, cols int) (Norm, error) {
	if rows < 1 || cols < 1 {
		return nil, normErr("", "norm shape %d×%d must be positive", rows, cols)
	}
	if rows > math.MaxInt/cols {
		return nil, normErr("", "norm shape %d×%d overflows the dimension", rows, cols)
	}
	s, err := ParseNormSpec(name)
	if err != nil {
		return nil, err
	}
	return named(name)(s.Norm(rows, cols))
}

// named returns a function that passes on a constructor's norm, or a nil
// Norm and its *NormError with Name set to the name being parsed.
// (Returning the constructor's results directly would turn a nil *Schatten
// into a non-nil Norm.)
func named(name string) func(Norm, error) (Norm, error) {
	return func(n Norm, err error) (Norm, error) {
		if err != nil {
			ne := *err.(*NormError)
			ne.Name, ne.parsed = name, true
			return nil, &ne
		}
		return n, nil
	}
}

// NormError reports a norm that cannot be made: a name ParseNorm does not
// accept, or parameters a constructor (NewLP, NewLInf, NewSchatten,
// NewBatched) rejects. Callers that report the fault in their own terms (a
// flag, a configuration field) use Reason.
type NormError struct {
	// Name is the norm name given to ParseNorm; empty for the error of a
	// constructor called directly.
	Name string
	// Reason says what is wrong, quoting the offending value.
	Reason string

	parsed bool // the error of ParseNorm, which quotes Name even if empty
}

// Error implements error.
func (e *NormError) Error() string {
	if e.Name == "" && !e.parsed {
		return "solver: " + e.Reason
	}
	return fmt.Sprintf("solver: norm %q: %s", e.Name, e.Reason)
}

// normErr returns the *NormError of a constructor (name empty) or of
// ParseNorm parsing name.
func normErr(name, format string, args ...any) error {
	return &NormError{Name: name, Reason: fmt.Sprintf(format, args...), parsed: name != ""}
}

func checkLen(n int, x []float64) {
	if len(x) != n {
		panic(fmt.Sprintf("solver: point length %d, norm dimension %d", len(x), n))
	}
}
