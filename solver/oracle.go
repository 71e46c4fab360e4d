package solver

import "fmt"

// Sample names the randomness of one oracle evaluation: the average of Size
// unit samples drawn from the stream Seed. Two evaluations with the same
// Sample, at the same or at different points, use the same unit samples.
type Sample struct {
	Seed uint64
	Size int
}

// Model says what is known of an oracle's noise. The models are ordered from
// the weakest assumption to the strongest; see the reference paper, Section 2.
type Model int

const (
	// BoundedVariance assumes only E‖τ(x; ξ) − T(x)‖² ≤ σ² (eq. 2 of the paper).
	// Stochastic methods draw independent samples at the two points of a
	// difference.
	BoundedVariance Model = iota
	// LipschitzInExpectation adds E‖τ(x; ξ) − τ(y; ξ)‖² ≤ L²‖x − y‖² for a
	// multi-query oracle (Assumptions 1 and 2 of the paper).
	LipschitzInExpectation
	// SamplewiseLipschitz assumes each τ(·; ξ) is γ-Lipschitz, γ ≤ 1
	// (Assumption 3 of the paper).
	SamplewiseLipschitz
	// Deterministic oracles return T(x) exactly; a Sample is ignored.
	Deterministic
)

// String returns the model's name as accepted by ParseModel.
func (m Model) String() string {
	switch m {
	case BoundedVariance:
		return "bounded-variance"
	case LipschitzInExpectation:
		return "lipschitz-expectation"
	case SamplewiseLipschitz:
		return "samplewise-lipschitz"
	case Deterministic:
		return "deterministic"
	}
	return fmt.Sprintf("Model(%d)", int(m))
}

// ParseModel parses a Model name as printed by Model.String.
func ParseModel(s string) (Model, error) {
	for m := BoundedVariance; m <= Deterministic; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("solver: unknown oracle model %q (want bounded-variance, lipschitz-expectation, samplewise-lipschitz or deterministic)", s)
}

// Oracle gives access to an operator T on R^Len.
//
// Eval writes into dst (length Len) an estimate τ(x; ξ) of T(x) averaged over
// s.Size unit samples drawn from the stream s.Seed, and returns the number of
// unit samples it consumed, which Stats add up. The estimate must be unbiased,
// E τ(x; ξ) = T(x). Evaluating the same Sample at two points must reuse the
// same unit samples. A deterministic oracle (Model() == Deterministic) ignores
// s and returns T(x), usually reporting one sample per call; an oracle over a
// finite sum of M terms may return the exact average, and report M samples,
// when s.Size ≥ M.
//
// Eval must not keep x or dst. Implementations may hold scratch space and
// need not be safe for concurrent use.
type Oracle interface {
	Len() int
	Eval(dst, x []float64, s Sample) (samples int, err error)
	Model() Model
}

// Func adapts a deterministic function to an Oracle. Each evaluation counts as
// one sample.
type Func struct {
	// N is the dimension.
	N int
	// F writes T(x) into dst.
	F func(dst, x []float64)
}

var _ Oracle = Func{}

// Len implements Oracle.
func (f Func) Len() int { return f.N }

// Eval implements Oracle.
func (f Func) Eval(dst, x []float64, _ Sample) (int, error) {
	f.F(dst, x)
	return 1, nil
}

// Model implements Oracle; it returns Deterministic.
func (f Func) Model() Model { return Deterministic }

// Exact is implemented by stochastic oracles that can also evaluate their
// operator T exactly, such as the problems of this package's suite and the
// finite-sum cells of a DEQ. Tests and benchmarks use it to measure true
// residuals.
type Exact interface {
	// EvalExact writes T(x) into dst.
	EvalExact(dst, x []float64) error
}
