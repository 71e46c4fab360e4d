package layers

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/deqgo/deq/solver"
)

// The almost-sure term bounds of the mean-field cell, which let its
// certificates be drawn from a sample of its units (solver.TermBound,
// CertifySettings.Sampled).

var (
	_ solver.TermBound     = (*mfEval)(nil)
	_ solver.TermEvaluator = (*mfEval)(nil)
)

// EvalTerm implements solver.TermEvaluator: it writes the m-th term
// xU + b + φ_m(z) into dst, the value an Eval of Size 1 returns when it
// draws unit m.
func (e *sumEval) EvalTerm(dst, z []float64, m int) error {
	if err := e.checkEval(dst, z); err != nil {
		return err
	}
	if err := e.checkTerm(m); err != nil {
		return err
	}
	e.one[0] = m
	e.sum(dst, z, e.one[:], 1)
	return nil
}

// checkTerm returns an error unless 0 ≤ m < Terms().
func (e *sumEval) checkTerm(m int) error {
	if m < 0 || m >= e.m {
		return fmt.Errorf("layers: term %d outside [0, %d)", m, e.m)
	}
	return nil
}

// TermBound implements solver.TermBound. Each term deviates from the
// average by φ_m(z) − φ̄(z), so with β_m ≥ ‖φ_m(z)_e‖ for every example e
// the bound is max_m β_m + (1/M)Σ_m β_m. A unit on an example is the
// rank-one matrix a v_mᵀ with a = σ(Z_e w_m + c_m) (rows entries), so in
// ℓ2 and in ℓp and Schatten-p with p ≥ 2 ‖φ_m(z)_e‖ ≤
// ‖a‖₂‖v_m‖₂, and in ℓ∞ ‖a‖∞‖v_m‖∞. Both activations satisfy |σ(t)| ≤ |t|,
// so ‖a‖₂ ≤ ‖Z_e‖_F‖w_m‖₂ + √rows·|c_m| and ‖a‖∞ ≤ max_r ‖z_r‖₂‖w_m‖₂ +
// |c_m|; Tanh also has |σ| ≤ 1, so ‖a‖₂ ≤ √rows and ‖a‖∞ ≤ 1. The largest
// example's ‖Z_e‖_F (or row norm) is used for all. In the ℓ2 family the
// average part is also bounded through the units' second moments
// (meanTermBound), and the smaller of the two is used. It costs one pass
// over the parameters and one over z, O(M·Hidden + Len()), and in the ℓ2
// family one symmetric product of W with itself, O(M·Hidden²), against
// O(rows·M·Hidden) for an exact evaluation (rows = examples × Rows). It
// returns +Inf in other norms.
func (e *mfEval) TermBound(z []float64, norm solver.Norm) float64 {
	if len(z) != e.Len() {
		return math.Inf(1)
	}
	inf, ok := termNormFamily(norm)
	if !ok {
		return math.Inf(1)
	}
	h, m, rows := e.c.shape.Hidden, e.c.m, e.c.shape.Rows
	// zs: the largest ‖Z_e‖_F (ℓ2 family) or row norm (ℓ∞) over examples.
	zs := largestExample(z, e.rows/rows, rows, h, inf)
	w, v, c := e.c.w.Data(), e.c.v.Data(), e.c.c.Data()
	sr := math.Sqrt(float64(rows))
	maxB, meanB := termParts(m, func(t int) float64 {
		wn := 0.0
		for i := range h {
			wn += w[i*m+t] * w[i*m+t]
		}
		wn = math.Sqrt(wn)
		vt := v[t*h : (t+1)*h]
		if inf {
			a := zs*wn + math.Abs(c[t])
			if e.c.act == Tanh {
				a = math.Min(a, 1)
			}
			vn := 0.0
			for _, x := range vt {
				vn = math.Max(vn, math.Abs(x))
			}
			return a * vn
		}
		a := zs*wn + sr*math.Abs(c[t])
		if e.c.act == Tanh {
			a = math.Min(a, sr)
		}
		return a * blas64.Nrm2(blas64.Vector{N: h, Inc: 1, Data: vt})
	})
	if !inf {
		meanB = math.Min(meanB, e.meanTermBound(z))
	}
	return deviationOf(maxB, meanB)
}

// VJPTermBounder is implemented by the evaluators whose sampled VJPs
// (VJPHidden) declare the bounds of a sampled certificate of an adjoint
// solve: the VJP g ↦ (∂φ_m/∂z)ᵀg of each term and a bound on its
// deviation from the average. MeanField implements it.
type VJPTermBounder interface {
	// VJPTerm writes (∂φ_m(z)/∂z)ᵀg, the VJP of the m-th term, into dst:
	// the value a VJPHidden of Size 1 returns when it draws term m.
	VJPTerm(dst, z, g []float64, m int) error
	// VJPTermBound returns B ≥ max_m ‖J_mᵀg − J̄ᵀg‖ in norm (per example
	// for a Batched norm), J_m = ∂φ_m(z)/∂z and J̄ their average, or +Inf
	// when it knows none in norm.
	VJPTermBound(z, g []float64, norm solver.Norm) float64
}

var _ VJPTermBounder = (*mfEval)(nil)

// VJPTerm implements VJPTermBounder.
func (e *mfEval) VJPTerm(dst, z, g []float64, m int) error {
	if err := e.checkHidden(dst, z, g); err != nil {
		return err
	}
	if err := e.checkTerm(m); err != nil {
		return err
	}
	e.one[0] = m
	e.fusedHidden(dst, z, g, e.one[:], 1)
	return nil
}

// VJPTermBound implements VJPTermBounder. The VJP of unit m on example e
// is the rank-one matrix u w_mᵀ with u_r = σ′_r·⟨g_r, v_m⟩ and
// 0 ≤ σ′ ≤ 1 for both activations, so its norm is at most
// ‖G_e‖_F‖v_m‖₂‖w_m‖₂ in ℓ2 and in ℓp and Schatten-p with p ≥ 2
// (Frobenius), and max_r ‖g_r‖₂‖v_m‖₂‖w_m‖∞ in ℓ∞; with β_m that bound at the
// largest example the deviation bound is max_m β_m + (1/M)Σ_m β_m; in the
// ℓ2 family the average part is also bounded through the second moments
// of V (meanVJPBound), and the smaller is used. It does not depend on z.
// It costs O(M·Hidden + Len()), and O(M·Hidden²) in the ℓ2 family.
func (e *mfEval) VJPTermBound(_, g []float64, norm solver.Norm) float64 {
	if len(g) != e.Len() {
		return math.Inf(1)
	}
	inf, ok := termNormFamily(norm)
	if !ok {
		return math.Inf(1)
	}
	h, m := e.c.shape.Hidden, e.c.m
	gs := largestExample(g, e.rows/e.c.shape.Rows, e.c.shape.Rows, h, inf)
	w, v := e.c.w.Data(), e.c.v.Data()
	maxB, meanB := termParts(m, func(t int) float64 {
		wn := 0.0
		for i := range h {
			x := w[i*m+t]
			if inf {
				wn = math.Max(wn, math.Abs(x))
			} else {
				wn += x * x
			}
		}
		if !inf {
			wn = math.Sqrt(wn)
		}
		return gs * blas64.Nrm2(blas64.Vector{N: h, Inc: 1, Data: v[t*h : (t+1)*h]}) * wn
	})
	if !inf {
		meanB = math.Min(meanB, e.meanVJPBound(g))
	}
	return deviationOf(maxB, meanB)
}

// termNormFamily reports which bound of a rank-one term applies in norm
// (per example for a Batched norm): inf for ℓ∞, else the ℓ2 (Frobenius)
// bound, which holds in ℓp and Schatten-p for p ≥ 2; ok is false for the
// other norms.
func termNormFamily(norm solver.Norm) (inf, ok bool) {
	if b, isB := norm.(*solver.Batched); isB {
		norm = b.Example
	}
	switch n := norm.(type) {
	case solver.LInf:
		return true, true
	case solver.LP:
		return false, n.P() >= 2
	case *solver.Schatten:
		return false, n.P() >= 2
	}
	return false, false
}

// largestExample returns the largest, over the n examples of rows×h
// entries of z, Frobenius norm (inf false) or row ℓ2 norm (inf true).
func largestExample(z []float64, n, rows, h int, inf bool) float64 {
	out := 0.0
	for ex := range n {
		f := 0.0
		for r := range rows {
			row := z[(ex*rows+r)*h : (ex*rows+r+1)*h]
			nr := blas64.Nrm2(blas64.Vector{N: h, Inc: 1, Data: row})
			if inf {
				f = math.Max(f, nr)
			} else {
				f += nr * nr
			}
		}
		if !inf {
			f = math.Sqrt(f)
		}
		out = math.Max(out, f)
	}
	return out
}
