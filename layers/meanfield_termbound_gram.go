package layers

import (
	"math"

	"github.com/deqgo/deq/internal/numeric"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// meanTermBound returns a bound on ‖φ̄(z)_e‖_F, the average of the units
// on example e, for every example: with a_m = σ(Z_e w_m + c_m) (Rows
// entries) and Cauchy–Schwarz over the units,
//
//	‖φ̄_e‖_F ≤ (1/M)Σ_m ‖a_m‖₂‖v_m‖₂
//	        ≤ ((1/M)Σ_m ‖a_m‖₂²)^{1/2} ((1/M)Σ_m ‖v_m‖₂²)^{1/2},
//
// and, as |σ(t)| ≤ |t| for both activations,
// (1/M)Σ_m ‖a_m‖₂² ≤ Σ_r ẑ_rᵀ G ẑ_r with ẑ_r = (z_r, 1) and G the
// (Hidden+1)² second-moment matrix (1/M)Σ_m (w_m, c_m)(w_m, c_m)ᵀ; Tanh
// also has |σ| ≤ 1, so it is at most Rows. Where the units' pre-activations
// are spread over many directions this is about √Hidden times smaller than
// (1/M)Σ_m (‖Z_e‖_F‖w_m‖₂ + √Rows|c_m|)‖v_m‖₂, the average of the
// Cauchy–Schwarz bounds of the units. The Frobenius norm bounds ℓ2 and the
// ℓp and Schatten-p norms with p ≥ 2, the norms of termNormFamily's ℓ2
// family. It returns the largest bound over the examples (+Inf if NaN).
// It costs one symmetric rank-M product, O(M·Hidden²), and O(Len()·Hidden).
func (e *mfEval) meanTermBound(z []float64) float64 {
	h, m, rows := e.c.shape.Hidden, e.c.m, e.c.shape.Rows
	w, v, c := e.c.w.Data(), e.c.v.Data(), e.c.c.Data()
	mf := 1 / float64(m)
	if e.gramAt.changed(w, c, v) {
		// G_ww = (1/M) W Wᵀ (upper triangle), g = (1/M) W c, g_cc = (1/M) cᵀc.
		e.gram, e.gramC = grow(e.gram, h*h), grow(e.gramC, h)
		blas64.Syrk(blas.NoTrans, mf, blas64.General{Rows: h, Cols: m, Stride: m, Data: w}, 0,
			blas64.Symmetric{Uplo: blas.Upper, N: h, Stride: h, Data: e.gram})
		blas64.Gemv(blas.NoTrans, mf, blas64.General{Rows: h, Cols: m, Stride: m, Data: w},
			blas64.Vector{N: m, Inc: 1, Data: c}, 0, blas64.Vector{N: h, Inc: 1, Data: e.gramC})
		e.gramCC = mf * blas64.Dot(blas64.Vector{N: m, Inc: 1, Data: c}, blas64.Vector{N: m, Inc: 1, Data: c})
		e.gramVV = mf * blas64.Dot(blas64.Vector{N: m * h, Inc: 1, Data: v}, blas64.Vector{N: m * h, Inc: 1, Data: v})
	}
	gcc, vv := e.gramCC, e.gramVV
	out := 0.0
	for ex := range e.rows / rows {
		a2 := 0.0
		for r := range rows {
			zr := z[(ex*rows+r)*h : (ex*rows+r+1)*h]
			q := gcc + upperQuad(e.gram, zr) + 2*blas64.Dot(blas64.Vector{N: h, Inc: 1, Data: zr}, blas64.Vector{N: h, Inc: 1, Data: e.gramC})
			a2 += math.Max(0, q)
		}
		if e.c.act == Tanh {
			a2 = math.Min(a2, float64(rows))
		}
		out = math.Max(out, math.Sqrt(a2*vv))
	}
	if math.IsNaN(out) {
		return math.Inf(1)
	}
	return out
}

// meanVJPBound returns a bound on the Frobenius norm of the average VJP
// (1/M)Σ_m u_m w_mᵀ on every example, u_m the rows' σ′_r⟨g_r, v_m⟩: as in
// meanTermBound, by Cauchy–Schwarz over the units and 0 ≤ σ′ ≤ 1,
//
//	‖(1/M)Σ_m u_m w_mᵀ‖_F ≤ (Σ_r g_rᵀ G_v g_r)^{1/2} ((1/M)Σ_m ‖w_m‖₂²)^{1/2},
//
// G_v = (1/M)VᵀV, one symmetric product, O(M·Hidden²). It returns the
// largest bound over the examples (+Inf if NaN).
func (e *mfEval) meanVJPBound(g []float64) float64 {
	h, m, rows := e.c.shape.Hidden, e.c.m, e.c.shape.Rows
	w, v := e.c.w.Data(), e.c.v.Data()
	mf := 1 / float64(m)
	if e.gramVAt.changed(v, w) {
		e.gramV = grow(e.gramV, h*h)
		blas64.Syrk(blas.Trans, mf, blas64.General{Rows: m, Cols: h, Stride: h, Data: v}, 0,
			blas64.Symmetric{Uplo: blas.Upper, N: h, Stride: h, Data: e.gramV})
		e.gramWW = mf * blas64.Dot(blas64.Vector{N: m * h, Inc: 1, Data: w}, blas64.Vector{N: m * h, Inc: 1, Data: w})
	}
	ww := e.gramWW
	out := 0.0
	for ex := range e.rows / rows {
		u2 := 0.0
		for r := range rows {
			gr := g[(ex*rows+r)*h : (ex*rows+r+1)*h]
			q := upperQuad(e.gramV, gr)
			u2 += math.Max(0, q)
		}
		out = math.Max(out, math.Sqrt(u2*ww))
	}
	if math.IsNaN(out) {
		return math.Inf(1)
	}
	return out
}

// upperQuad returns xᵀGx for the symmetric len(x)×len(x) matrix G of which
// g holds the upper triangle (row-major).
func upperQuad(g, x []float64) float64 {
	h := len(x)
	q := 0.0
	for i, xi := range x {
		row := g[i*h : (i+1)*h]
		s := row[i] * xi
		for j := i + 1; j < h; j++ {
			s += 2 * row[j] * x[j]
		}
		q += xi * s
	}
	return q
}

// paramSnapshot is a copy of the parameter values a derived quantity was
// last computed from, so that it is recomputed only when they change.
type paramSnapshot struct{ vals [][]float64 }

// changed reports whether the values of srcs differ (bit for bit) from
// those last recorded, and records them if so, in the storage of the last
// record when the lengths are unchanged. It is true on the first call.
// Comparing costs one pass over the values.
func (s *paramSnapshot) changed(srcs ...[]float64) bool {
	same := len(s.vals) == len(srcs)
	for i := 0; same && i < len(srcs); i++ {
		same = numeric.SameBits(s.vals[i], srcs[i])
	}
	if same {
		return false
	}
	if len(s.vals) != len(srcs) {
		s.vals = make([][]float64, len(srcs))
	}
	for i, src := range srcs {
		s.vals[i] = append(s.vals[i][:0], src...)
	}
	return true
}

// grow returns s with length n, reallocated when its capacity is short.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
