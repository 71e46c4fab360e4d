package layers

import (
	"math"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/deqgo/deq/solver"
)

// The almost-sure term bounds of the experts cell (see
// meanfield_termbound.go for the mean-field cell's).

var (
	_ solver.TermBound     = (*expEval)(nil)
	_ solver.TermEvaluator = (*expEval)(nil)
	_ VJPTermBounder       = (*expEval)(nil)
)

// expertNorms returns, for expert m, ‖W_m‖_F, ‖c_m‖₂ and max_j |c_mj|.
func (e *expEval) expertNorms(m int) (wf, c2, cinf float64) {
	h := e.c.shape.Hidden
	w := e.c.wm(m)
	wf = blas64.Nrm2(blas64.Vector{N: h * h, Inc: 1, Data: w})
	cm := e.c.c.Data()[m*h : (m+1)*h]
	c2 = blas64.Nrm2(blas64.Vector{N: h, Inc: 1, Data: cm})
	for _, x := range cm {
		cinf = math.Max(cinf, math.Abs(x))
	}
	return wf, c2, cinf
}

// TermBound implements solver.TermBound. Expert m on example e is
// σ(Z_e W_m + 1c_m), and both activations satisfy |σ(t)| ≤ |t|, so its
// Frobenius norm is at most ‖Z_e‖_F‖W_m‖_F + √rows‖c_m‖₂ (a bound in ℓ2,
// every ℓp with p ≥ 2 and Schatten-p with p ≥ 2) and each entry at most
// ‖z_r‖₂‖W_m‖_F + max_j |c_mj| (ℓ∞); Tanh also bounds them by √(rows·Hidden)
// and 1. With β_m that bound at the largest example the deviation bound is
// max_m β_m + (1/M)Σ_m β_m. It costs O(M·Hidden² + Len()), against
// O(rows·M·Hidden²) for an exact evaluation.
func (e *expEval) TermBound(z []float64, norm solver.Norm) float64 {
	if len(z) != e.Len() {
		return math.Inf(1)
	}
	inf, ok := termNormFamily(norm)
	if !ok {
		return math.Inf(1)
	}
	h, rows := e.c.shape.Hidden, e.c.shape.Rows
	zs := largestExample(z, e.rows/rows, rows, h, inf)
	sr := math.Sqrt(float64(rows))
	return termDeviation(e.c.m, func(m int) float64 {
		wf, c2, cinf := e.expertNorms(m)
		if inf {
			b := zs*wf + cinf
			if e.c.act == Tanh {
				b = math.Min(b, 1)
			}
			return b
		}
		b := zs*wf + sr*c2
		if e.c.act == Tanh {
			b = math.Min(b, math.Sqrt(float64(rows*h)))
		}
		return b
	})
}

// VJPTerm implements VJPTermBounder.
func (e *expEval) VJPTerm(dst, z, g []float64, m int) error {
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

// VJPTermBound implements VJPTermBounder. The VJP of expert m on example
// e is (G_e ⊙ σ′)W_mᵀ with 0 ≤ σ′ ≤ 1, of Frobenius norm at most
// ‖G_e‖_F‖W_m‖_F and entries at most ‖g_r‖₂‖W_m‖_F; the deviation bound is
// max_m β_m + (1/M)Σ_m β_m as for TermBound.
func (e *expEval) VJPTermBound(_, g []float64, norm solver.Norm) float64 {
	if len(g) != e.Len() {
		return math.Inf(1)
	}
	inf, ok := termNormFamily(norm)
	if !ok {
		return math.Inf(1)
	}
	h, rows := e.c.shape.Hidden, e.c.shape.Rows
	gs := largestExample(g, e.rows/rows, rows, h, inf)
	return termDeviation(e.c.m, func(m int) float64 {
		wf, _, _ := e.expertNorms(m)
		return gs * wf
	})
}

// termDeviation returns max_m β(m) + (1/M)Σ_m β(m) over the m terms, a
// bound on ‖φ_m − φ̄‖ when ‖φ_m‖ ≤ β(m), or +Inf if it is NaN.
func termDeviation(m int, beta func(int) float64) float64 {
	maxB, meanB := termParts(m, beta)
	return deviationOf(maxB, meanB)
}

// termParts returns max_t β_t and (1/m)Σ_t β_t over t < m.
func termParts(m int, beta func(int) float64) (maxB, meanB float64) {
	sumB := 0.0
	for t := range m {
		b := beta(t)
		maxB = math.Max(maxB, b)
		sumB += b
	}
	return maxB, sumB / float64(m)
}

// deviationOf returns the deviation bound maxB + meanB, with maxB ≥
// max_m ‖φ_m‖ and meanB ≥ ‖φ̄‖, or +Inf when it is NaN.
func deviationOf(maxB, meanB float64) float64 {
	out := maxB + meanB
	if math.IsNaN(out) {
		return math.Inf(1)
	}
	return out
}
