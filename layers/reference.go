package layers

import "github.com/deqgo/deq/solver"

// Referenced is implemented by a cell that can evaluate, beside its own
// map, the double-precision map f₆₄ of its parameters: every product in
// float64. For a cell with Precision Float32 the two differ by rounding
// (about 1e-7 relative, see Precision), and f₆₄ is the map whose Lipschitz
// bound γ̄ the cell proves: Proven is false under Float32, while
// ReferenceProven reports the proof for f₆₄. For a Float64 cell both are
// the cell's map.
//
// deq.Settings.CertifyFloat64 uses it: the forward solve iterates on the
// cell's single-precision map and certifies, and where needed finishes, on
// f₆₄, so that the certificate and the solver's guarantees are those of
// the proven map. Conv and Dense implement it.
type Referenced interface {
	Cell
	// ReferenceEvaluator returns an evaluator of f₆₄ for batches of n
	// examples, sharing the cell's parameters (cached as Evaluator's
	// are).
	ReferenceEvaluator(n int) (Evaluator, error)
	// ReferenceProven reports whether f₆₄ is provably Gamma()-Lipschitz
	// in the per-example norm n, in the sense of Cell.Proven.
	ReferenceProven(n solver.Norm) bool
}

var (
	_ Referenced = (*Conv)(nil)
	_ Referenced = (*Dense)(nil)
)
