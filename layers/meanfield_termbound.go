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
	if m < 0 || m >= e.m {
		return fmt.Errorf("layers: EvalTerm: term %d outside [0, %d)", m, e.m)
	}
	e.one[0] = m
	e.sum(dst, z, e.one[:], 1)
	return nil
}

// TermBound implements solver.TermBound. Each term deviates from the
// average by φ_m(z) − φ̄(z), so with β_m ≥ ‖φ_m(z)_e‖ for every example e
// the bound is max_m β_m + (1/M)Σ_m β_m. A unit on an example is the
// rank-one matrix a v_mᵀ with a = σ(Z_e w_m + c_m) (rows entries), so in
// ℓ2, every ℓp with p ≥ 2 and every Schatten-p norm ‖φ_m(z)_e‖ ≤
// ‖a‖₂‖v_m‖₂, and in ℓ∞ ‖a‖∞‖v_m‖∞. Both activations satisfy |σ(t)| ≤ |t|,
// so ‖a‖₂ ≤ ‖Z_e‖_F‖w_m‖₂ + √rows·|c_m| and ‖a‖∞ ≤ max_r ‖z_r‖₂‖w_m‖₂ +
// |c_m|; Tanh also has |σ| ≤ 1, so ‖a‖₂ ≤ √rows and ‖a‖∞ ≤ 1. The largest
// example's ‖Z_e‖_F (or row norm) is used for all. It costs one pass over
// the parameters and one over z, O(M·Hidden + Len()), against
// O(rows·M·Hidden) for an exact evaluation. It returns +Inf in other
// norms.
func (e *mfEval) TermBound(z []float64, norm solver.Norm) float64 {
	if len(z) != e.Len() {
		return math.Inf(1)
	}
	ex := norm
	if b, ok := norm.(*solver.Batched); ok {
		ex = b.Example
	}
	inf := false
	switch n := ex.(type) {
	case solver.LInf:
		inf = true
	case solver.LP:
		if n.P() < 2 {
			return math.Inf(1)
		}
	case *solver.Schatten:
	default:
		return math.Inf(1)
	}
	h, m, rows := e.c.shape.Hidden, e.c.m, e.c.shape.Rows
	// zs: the largest ‖Z_e‖_F (ℓ2 family) or row norm (ℓ∞) over examples.
	zs := 0.0
	for ex := 0; ex < e.rows/rows; ex++ {
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
		zs = math.Max(zs, f)
	}
	w, v, c := e.c.w.Data(), e.c.v.Data(), e.c.c.Data()
	sr := math.Sqrt(float64(rows))
	maxB, sumB := 0.0, 0.0
	for t := range m {
		wn := 0.0
		for i := range h {
			wn += w[i*m+t] * w[i*m+t]
		}
		wn = math.Sqrt(wn)
		vt := v[t*h : (t+1)*h]
		var a, vn float64
		if inf {
			a = zs*wn + math.Abs(c[t])
			if e.c.act == Tanh {
				a = math.Min(a, 1)
			}
			for _, x := range vt {
				vn = math.Max(vn, math.Abs(x))
			}
		} else {
			a = zs*wn + sr*math.Abs(c[t])
			if e.c.act == Tanh {
				a = math.Min(a, sr)
			}
			vn = blas64.Nrm2(blas64.Vector{N: h, Inc: 1, Data: vt})
		}
		b := a * vn
		maxB = math.Max(maxB, b)
		sumB += b
	}
	out := maxB + sumB/float64(m)
	if math.IsNaN(out) {
		return math.Inf(1)
	}
	return out
}
