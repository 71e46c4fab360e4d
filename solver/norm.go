package solver

import (
	"fmt"
	"math"
	"strconv"
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
