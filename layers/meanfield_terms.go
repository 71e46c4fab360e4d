package layers

import (
	"fmt"

	"github.com/deqgo/deq/solver"
)

// Block evaluation of the mean-field cell's terms and of their VJPs, which
// a sampled certificate draws a block at a time (solver.TermsEvaluator).

var _ solver.TermsEvaluator = (*mfEval)(nil)

// VJPTermsEvaluator is implemented by the VJPTermBounders that evaluate a
// block of term VJPs at once. MeanField implements it.
type VJPTermsEvaluator interface {
	// VJPTerms writes (∂φ_{idx[j]}(z)/∂z)ᵀg, the VJP of term idx[j], into
	// dst[j·len(z) : (j+1)·len(z)] for every j, as VJPTerm would; len(dst)
	// must be len(idx)·len(z). Indices may repeat.
	VJPTerms(dst, z, g []float64, idx []int) error
}

var _ VJPTermsEvaluator = (*mfEval)(nil)

// checkTerms checks the arguments of a block of k = len(idx) terms: dst
// of k·Len() entries and every index in [0, Terms()).
func (e *sumEval) checkTerms(dst []float64, idx []int) error {
	if len(dst) != len(idx)*e.Len() {
		return fmt.Errorf("layers: dst has %d entries for %d terms of length %d", len(dst), len(idx), e.Len())
	}
	for _, m := range idx {
		if err := e.checkTerm(m); err != nil {
			return err
		}
	}
	return nil
}

// EvalTerms implements solver.TermsEvaluator: term j is xU + b + a_j v_jᵀ
// (rows×Hidden), a_j = σ(zw_j + c_j) the j-th column of A = σ(zW' + c')
// for the gathered units idx, which one matrix product computes. It
// allocates nothing.
func (e *mfEval) EvalTerms(dst, z []float64, idx []int) error {
	if len(idx) == 0 || len(idx) > e.c.m {
		return fmt.Errorf("layers: %d terms in a block, want 1 to %d", len(idx), e.c.m)
	}
	if err := e.checkEval(e.inj, z); err != nil {
		return err
	}
	if err := e.checkTerms(dst, idx); err != nil {
		return err
	}
	h, k, d := e.c.shape.Hidden, len(idx), e.Len()
	w, v, c := e.units(idx, k)
	a := e.activations(z, w, c, k)
	for j := range k {
		out, vj := dst[j*d:(j+1)*d], v[j*h:(j+1)*h]
		for r := range e.rows {
			arj := a[r*k+j]
			row, inj := out[r*h:(r+1)*h], e.inj[r*h:(r+1)*h]
			for i, x := range vj {
				row[i] = inj[i] + arj*x
			}
		}
	}
	return nil
}

// VJPTerms implements VJPTermsEvaluator: the VJP of unit j is the
// rank-one matrix δ_j w_jᵀ with δ_j = (g v_j) ⊙ σ′(zw_j + c_j), the j-th
// column of δ = (gV'ᵀ) ⊙ σ′, which one matrix product computes. It
// allocates nothing after the first call.
func (e *mfEval) VJPTerms(dst, z, g []float64, idx []int) error {
	if len(idx) == 0 || len(idx) > e.c.m {
		return fmt.Errorf("layers: %d terms in a block, want 1 to %d", len(idx), e.c.m)
	}
	if err := e.checkHidden(e.inj, z, g); err != nil {
		return err
	}
	if err := e.checkTerms(dst, idx); err != nil {
		return err
	}
	h, k, d := e.c.shape.Hidden, len(idx), e.Len()
	w, v, c := e.units(idx, k)
	if e.da == nil {
		e.da = make([]float64, e.rows*e.c.m)
	}
	a := e.activations(z, w, c, k)
	da := e.da[:e.rows*k]
	mulABt(1, dense(e.rows, h, g), dense(k, h, v), 0, dense(e.rows, k, da))
	e.c.act.backward(da, a)
	for j := range k {
		out := dst[j*d : (j+1)*d]
		for r := range e.rows {
			drj := da[r*k+j]
			row := out[r*h : (r+1)*h]
			for i := range row {
				row[i] = drj * w[i*k+j]
			}
		}
	}
	return nil
}
