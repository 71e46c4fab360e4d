package solver

// Sample names the randomness of one oracle evaluation: the average of Size
// unit samples drawn from the stream Seed. Two evaluations with the same
// Sample, at the same or at different points, use the same unit samples.
type Sample struct {
	Seed uint64
	Size int
}

// Model says what is known of an oracle's noise. The models are ordered from
// the weakest assumption to the strongest; see the preliminaries of the reference paper.
// The zero value, UnspecifiedModel, is not a model: where a Model is a
// setting (VRGHAL.Model) it means "the oracle's own Model()", and an Oracle
// must not report it.
type Model int

const (
	// UnspecifiedModel is the zero Model: no assumption stated. Settings
	// that hold a Model read it as "take the oracle's".
	UnspecifiedModel Model = iota
	// BoundedVariance assumes only E‖τ(x; ξ) − T(x)‖² ≤ σ² (the paper's
	// bounded-variance assumption). Stochastic methods draw independent
	// samples at the two points of a difference.
	BoundedVariance
	// LipschitzInExpectation adds E‖τ(x; ξ) − τ(y; ξ)‖² ≤ L²‖x − y‖² for a
	// multi-query oracle (the paper's multi-query oracle and
	// Lipschitz-in-expectation assumptions).
	LipschitzInExpectation
	// SamplewiseLipschitz assumes each τ(·; ξ) is γ-Lipschitz, γ ≤ 1 (the
	// paper's nonexpansive or contractive stochastic oracle assumption).
	SamplewiseLipschitz
	// Deterministic oracles return T(x) exactly; a Sample is ignored.
	Deterministic
)

// isOracleModel reports whether m is a model an Oracle may report.
func (m Model) isOracleModel() bool { return m >= BoundedVariance && m <= Deterministic }

// Oracle gives access to an operator T on R^Len. Model must report one of
// BoundedVariance, LipschitzInExpectation, SamplewiseLipschitz and
// Deterministic; Solve rejects an oracle that reports another value.
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
