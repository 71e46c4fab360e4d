package deq

import (
	"fmt"
	"math"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// The declarations that let the forward and adjoint solves of a stochastic
// cell be certified from a sample of the cell's terms when
// Settings.ForwardSettings.Certify.Sampled or
// Settings.AdjointSettings.Certify.Sampled is set (see
// solver.CertifySettings.Sampled). The forward oracle is the cell's
// evaluator itself, which declares them when its cell can (MeanField); the
// monitored forward oracle passes them on; the adjoint oracle derives them
// from the evaluator's layers.VJPTermBounder.

var (
	_ solver.TermBound     = finiteSumMonitor{}
	_ solver.TermEvaluator = finiteSumMonitor{}
	_ solver.TermBound     = (*adjointOracle)(nil)
	_ solver.TermEvaluator = (*adjointOracle)(nil)
)

// TermBound implements solver.TermBound with the wrapped oracle's bound,
// or +Inf when it declares none.
func (m finiteSumMonitor) TermBound(x []float64, norm solver.Norm) float64 {
	if tb, ok := m.Wrapped().(solver.TermBound); ok {
		return tb.TermBound(x, norm)
	}
	return math.Inf(1)
}

// EvalTerm implements solver.TermEvaluator with the wrapped oracle's
// EvalTerm.
func (m finiteSumMonitor) EvalTerm(dst, x []float64, t int) error {
	if te, ok := m.Wrapped().(solver.TermEvaluator); ok {
		return te.EvalTerm(dst, x, t)
	}
	return fmt.Errorf("deq: the forward oracle evaluates no single term")
}

// masked returns m ⊙ g (g itself without dropout), in the oracle's
// scratch.
func (a *adjointOracle) masked(g []float64) []float64 {
	if a.mask == nil {
		return g
	}
	a.mg = append(a.mg[:0], g...)
	a.mask.apply(a.mg)
	return a.mg
}

// TermBound implements solver.TermBound: the evaluator's bound on the
// deviation of one term's VJP at z* for the cotangent m ⊙ g (the constant
// right-hand side cancels), or +Inf for the exact operator and for
// evaluators that declare none.
func (a *adjointOracle) TermBound(g []float64, norm solver.Norm) float64 {
	tb, ok := a.ev.(layers.VJPTermBounder)
	if !ok || a.exact {
		return math.Inf(1)
	}
	return tb.VJPTermBound(a.z, a.masked(g), norm)
}

// EvalTerm implements solver.TermEvaluator: the m-th term's VJP at z* for
// the cotangent m ⊙ g, plus the right-hand side.
func (a *adjointOracle) EvalTerm(dst, g []float64, m int) error {
	tb, ok := a.ev.(layers.VJPTermBounder)
	if !ok {
		return fmt.Errorf("deq: the cell's evaluator evaluates no single term's VJP")
	}
	if err := tb.VJPTerm(dst, a.z, a.masked(g), m); err != nil {
		return err
	}
	for i, v := range a.rhs {
		dst[i] += v
	}
	return nil
}

var (
	_ solver.TermsEvaluator = finiteSumMonitor{}
	_ solver.TermsEvaluator = (*adjointOracle)(nil)
)

// EvalTerms implements solver.TermsEvaluator with the wrapped oracle's
// EvalTerms, or its EvalTerm on each index when it evaluates no blocks.
func (m finiteSumMonitor) EvalTerms(dst, x []float64, idx []int) error {
	if te, ok := m.Wrapped().(solver.TermsEvaluator); ok {
		return te.EvalTerms(dst, x, idx)
	}
	if len(dst) != len(idx)*len(x) {
		return fmt.Errorf("deq: dst has %d entries for %d terms of length %d", len(dst), len(idx), len(x))
	}
	d := len(x)
	for j, t := range idx {
		if err := m.EvalTerm(dst[j*d:(j+1)*d], x, t); err != nil {
			return err
		}
	}
	return nil
}

// EvalTerms implements solver.TermsEvaluator: the VJPs of the terms idx at
// z* for the cotangent m ⊙ g, each plus the right-hand side, with the
// evaluator's layers.VJPTermsEvaluator when it has one and EvalTerm on
// each index otherwise.
func (a *adjointOracle) EvalTerms(dst, g []float64, idx []int) error {
	d := len(g)
	if len(dst) != len(idx)*d {
		return fmt.Errorf("deq: dst has %d entries for %d terms of length %d", len(dst), len(idx), d)
	}
	te, ok := a.ev.(layers.VJPTermsEvaluator)
	if !ok {
		for j, t := range idx {
			if err := a.EvalTerm(dst[j*d:(j+1)*d], g, t); err != nil {
				return err
			}
		}
		return nil
	}
	if err := te.VJPTerms(dst, a.z, a.masked(g), idx); err != nil {
		return err
	}
	for j := range idx {
		out := dst[j*d : (j+1)*d]
		for i, v := range a.rhs {
			out[i] += v
		}
	}
	return nil
}
