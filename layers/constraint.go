package layers

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/internal/check"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/solver"
)

// Default values used where a Constraint field is zero.
const (
	DefaultGamma      = 0.9
	DefaultPowerIters = 2
)

// Constraint bounds the Lipschitz constant in z of a cell's linear maps in
// an ℓp norm of the per-example hidden state.
//
// Cells apply a weight matrix W (Hidden×Hidden) to every row z of a hidden
// state as z ↦ zW, that is, to column vectors as z ↦ Wᵀz. Project rescales W
// in place so that the induced operator norm ‖Wᵀ‖_{p→p} stays at most Gamma:
//
//   - P = 2 (the default): spectral normalisation. PowerIters steps of power
//     iteration from a persistent vector estimate σ̂ ≤ ‖W‖₂ and rescale W by
//     Gamma/σ̂ when σ̂ > Gamma; every ExactEvery-th call (every call by
//     default) the exact largest singular value σ (gonum's SVD) is computed
//     and W rescaled by Gamma/σ when σ > Gamma. When σ̂ < Gamma, a Cholesky
//     factorisation of t·I − WᵀW, t below Gamma² by a bound on its rounding
//     errors, is tried first: when it succeeds it proves σ < Gamma, so W is
//     left as it is, as the SVD would have left it, at about a third of the
//     SVD's cost. Only the exact check makes the bound certain; between
//     checks it holds up to the accuracy of the power iteration.
//   - P = +Inf (ℓ∞): every row of Wᵀ (column of W) whose absolute sum
//     exceeds Gamma is rescaled to sum Gamma, so max_i Σ_j |W_ji| ≤ Gamma
//     exactly.
//   - 2 < P < ∞: W is rescaled as a whole so that the Riesz–Thorin bound
//     ‖Wᵀ‖_p ≤ ‖Wᵀ‖₁^{1/p} ‖Wᵀ‖_∞^{1−1/p} is at most Gamma; the true
//     operator norm may be smaller, so this is conservative.
//
// With an elementwise 1-Lipschitz activation the cell z ↦ σ(zW + c) is then
// Gamma-Lipschitz in that ℓp norm, applied to a vector or entrywise to a
// Rows×Hidden matrix state (each row is mapped by the same W). The ℓ2
// constraint also covers the Schatten norms as far as the cell's Proven
// says; ConstraintFor picks the constraint for a solver norm.
//
// The zero value is the ℓ2 constraint with the default bound.
type Constraint struct {
	// P is the exponent of the ℓp norm: 2 ≤ P < ∞, or math.Inf(1) for ℓ∞.
	// Zero means 2.
	P float64
	// Gamma is the bound γ̄ > 0. Zero means DefaultGamma. The solvers need
	// γ̄ < 1 for a contraction and γ̄ ≤ 1 for a nonexpansive cell.
	Gamma float64
	// PowerIters is the number of power-iteration steps per Project for
	// P = 2. Zero means DefaultPowerIters.
	PowerIters int
	// ExactEvery makes every ExactEvery-th Project for P = 2 compute the
	// exact spectral norm. Zero means 1: every call.
	ExactEvery int
}

// ConstraintFor returns the Constraint (with only P set) under which a
// cell's bound holds in the per-example norm n, as far as the cell's Proven
// reports: P = p for solver.LP, +Inf for solver.LInf and 2 for every
// *solver.Schatten (‖W‖₂ bounds the linear part in every Schatten norm). A
// *solver.Batched is read through its Example, and nil means ℓ2. Other
// norms are an error.
func ConstraintFor(n solver.Norm) (Constraint, error) {
	if b, ok := n.(*solver.Batched); ok {
		n = b.Example
	}
	switch n := n.(type) {
	case nil:
		return Constraint{P: 2}, nil
	case solver.LP:
		return Constraint{P: n.P()}, nil
	case solver.LInf:
		return Constraint{P: math.Inf(1)}, nil
	case *solver.Schatten:
		return Constraint{P: 2}, nil
	}
	return Constraint{}, fmt.Errorf("layers: ConstraintFor: no ℓp constraint for the norm %v (%T)", n, n)
}

// normKind is the family of the constraint norm.
type normKind int

const (
	kindL2 normKind = iota
	kindLInf
	kindLP
)

// opNorm enforces a Constraint on h×h matrices. It holds scratch space and
// the persistent power-iteration vector.
type opNorm struct {
	kind       normKind
	p          float64
	gamma      float64
	powerIters int
	exactEvery int
	calls      int
	u, v       []float64
	a          *mat.Dense
	svd        mat.SVD
	sv         []float64
}

// newOpNorm validates c and returns its enforcer for h×h matrices.
func newOpNorm(c Constraint, h int) (*opNorm, error) {
	o := &opNorm{
		gamma:      cmp.Or(c.Gamma, DefaultGamma),
		powerIters: cmp.Or(c.PowerIters, DefaultPowerIters),
		exactEvery: cmp.Or(c.ExactEvery, 1),
	}
	if err := cmp.Or(
		check.PositiveFinite("layers: Constraint.Gamma", c.Gamma),
		check.NotNegative("layers: Constraint.PowerIters", c.PowerIters),
		check.NotNegative("layers: Constraint.ExactEvery", c.ExactEvery),
	); err != nil {
		return nil, err
	}
	switch p := c.P; {
	case p == 0 || p == 2:
		o.kind, o.p = kindL2, 2
	case math.IsInf(p, 1):
		o.kind, o.p = kindLInf, p
	case p > 2:
		o.kind, o.p = kindLP, p
	default:
		return nil, fmt.Errorf("layers: Constraint.P = %v must be 0 (meaning 2), at least 2, or +Inf", c.P)
	}
	if o.kind == kindL2 {
		o.u = make([]float64, h)
		o.v = make([]float64, h)
		for i := range o.u {
			o.u[i] = 1 / math.Sqrt(float64(h))
		}
		o.a = mat.NewDense(h, h, nil)
		o.sv = make([]float64, h)
	}
	return o, nil
}

// dualExponent returns q with 1/p + 1/q = 1.
func (o *opNorm) dualExponent() float64 {
	switch o.kind {
	case kindL2:
		return 2
	case kindLInf:
		return 1
	}
	return o.p / (o.p - 1)
}

// proven reports whether a cell that is γ̄-Lipschitz in this constraint's
// ℓp norm (row-wise on rows×h states, with an elementwise activation) is
// γ̄-Lipschitz in the per-example norm n.
func (o *opNorm) proven(n solver.Norm, rows int) bool {
	if b, ok := n.(*solver.Batched); ok {
		n = b.Example
	}
	switch n := n.(type) {
	case solver.LP:
		return (o.kind == kindL2 && n.P() == 2) || (o.kind == kindLP && n.P() == o.p)
	case solver.LInf:
		return o.kind == kindLInf
	case *solver.Schatten:
		// Schatten-2 is the entrywise ℓ2 norm; a 1×h state has a single
		// singular value, its ℓ2 norm.
		return o.kind == kindL2 && (n.P() == 2 || rows == 1)
	}
	return false
}

// Bound returns the certified bound on ‖Wᵀ‖_{p→p} for the h×h matrix w that
// Project enforces: the exact spectral norm for ℓ2, the maximum absolute
// column sum of W for ℓ∞, the Riesz–Thorin bound for other ℓp. It returns
// NaN, computing nothing, when w holds NaN or ±Inf.
func (o *opNorm) bound(w []float64, h int) float64 {
	if !numeric.AllFinite(w) {
		return math.NaN()
	}
	switch o.kind {
	case kindL2:
		return o.spectral(w, h)
	case kindLInf:
		return maxColSum(w, h)
	}
	return math.Pow(maxRowSum(w, h), 1/o.p) * math.Pow(maxColSum(w, h), 1-1/o.p)
}

// spectral returns the largest singular value of the h×h matrix w.
func (o *opNorm) spectral(w []float64, h int) float64 {
	copy(o.a.RawMatrix().Data, w)
	if !o.svd.Factorize(o.a, mat.SVDNone) {
		// Fall back to the Frobenius norm, an upper bound.
		return blas64.Nrm2(blas64.Vector{N: len(w), Inc: 1, Data: w})
	}
	return o.svd.Values(o.sv)[0]
}

// belowGamma reports whether a Cholesky factorisation proves that the
// largest singular value of the h×h matrix w is below γ. It factorises
// M = t·I − WᵀW with t = γ² − E, where E bounds the rounding errors of
// forming WᵀW (at most (h+1)u‖W‖_F² in the 2-norm, u = 2⁻⁵³), of the
// diagonal subtraction (u(t + ‖W‖_F²)) and of the factorisation itself: a
// Cholesky factorisation that runs to completion is the exact one of M + ΔM
// with ‖ΔM‖₂ ≤ (h+1)u·tr(M)/(1 − (h+1)u), and tr(M) ≤ h·γ². E is twice
// their sum, rounded up: 4(h+2)u(‖W‖_F² + 2hγ²). Success then means
// t·I − WᵀW ⪰ −(E/2)·I, so σ_max² ≤ γ² − E/2 < γ². A false result proves
// nothing (σ may be just below γ, within the margin E); the caller then
// computes σ exactly. The cost is one symmetric rank-h update and one
// Cholesky factorisation, h³ + h³/3 flops, against the several h³ of the
// SVD.
func (o *opNorm) belowGamma(w []float64, h int) bool {
	const u = 0x1p-53
	hf := float64(h)
	g2 := o.gamma * o.gamma
	fro2 := floats.Dot(w, w)
	t := g2 - 4*(hf+2)*u*(fro2+2*hf*g2)
	if !(t > 0) || math.IsInf(fro2, 1) {
		return false
	}
	m := blas64.Symmetric{Uplo: blas.Upper, N: h, Stride: h, Data: o.a.RawMatrix().Data}
	blas64.Syrk(blas.Trans, -1, blas64.General{Rows: h, Cols: h, Stride: h, Data: w}, 0, m)
	for i := range h {
		m.Data[i*h+i] += t
	}
	_, ok := lapack64.Potrf(m)
	return ok
}

// project rescales the h×h matrix w in place to satisfy the constraint and
// returns the bound that now holds (for ℓ2 between exact checks: the power
// estimate).
//
// It returns NaN, leaving w and the iteration state alone, when w holds
// NaN or ±Inf: no SVD or Cholesky factorisation ever sees one.
func (o *opNorm) project(w []float64, h int) float64 {
	if !numeric.AllFinite(w) {
		return math.NaN()
	}
	switch o.kind {
	case kindL2:
		o.calls++
		est := o.power(w, h)
		if est > o.gamma {
			scale(w, o.gamma/est)
			est = o.gamma
		}
		if (o.calls-1)%o.exactEvery != 0 {
			return est
		}
		if est < o.gamma && o.belowGamma(w, h) {
			// σ < γ: the SVD would leave W as it is.
			return o.gamma
		}
		s := o.spectral(w, h)
		if s > o.gamma {
			scale(w, o.gamma/s)
			s = o.gamma
		}
		return s
	case kindLInf:
		for j := 0; j < h; j++ {
			s := 0.0
			for i := 0; i < h; i++ {
				s += math.Abs(w[i*h+j])
			}
			if s > o.gamma {
				f := o.gamma / s
				for i := 0; i < h; i++ {
					w[i*h+j] *= f
				}
			}
		}
		return maxColSum(w, h)
	}
	b := o.bound(w, h)
	if b > o.gamma {
		scale(w, o.gamma/b)
		b = o.gamma
	}
	return b
}

// power runs power iteration on WWᵀ from the persistent vector u and returns
// the estimate ‖Wᵀu‖ ≤ ‖W‖₂ of its last step.
func (o *opNorm) power(w []float64, h int) float64 {
	W := blas64.General{Rows: h, Cols: h, Stride: h, Data: w}
	u := blas64.Vector{N: h, Inc: 1, Data: o.u}
	v := blas64.Vector{N: h, Inc: 1, Data: o.v}
	est := 0.0
	for range o.powerIters {
		blas64.Gemv(blas.Trans, 1, W, u, 0, v)
		est = blas64.Nrm2(v)
		if est == 0 {
			return 0
		}
		blas64.Scal(1/est, v)
		blas64.Gemv(blas.NoTrans, 1, W, v, 0, u)
		nu := blas64.Nrm2(u)
		if nu == 0 {
			return est
		}
		blas64.Scal(1/nu, u)
	}
	return est
}

func scale(w []float64, f float64) {
	for i := range w {
		w[i] *= f
	}
}

// maxColSum returns max_j Σ_i |w_ij| for a rows×h matrix.
func maxColSum(w []float64, h int) float64 {
	m := 0.0
	for j := 0; j < h; j++ {
		s := 0.0
		for i := j; i < len(w); i += h {
			s += math.Abs(w[i])
		}
		m = math.Max(m, s)
	}
	return m
}

// maxRowSum returns max_i Σ_j |w_ij| for a matrix with rows of length h.
func maxRowSum(w []float64, h int) float64 {
	m := 0.0
	for i := 0; i < len(w); i += h {
		s := 0.0
		for _, v := range w[i : i+h] {
			s += math.Abs(v)
		}
		m = math.Max(m, s)
	}
	return m
}

// ProjectionState is the state that Project keeps between calls besides the
// parameters: the number of calls made (which decides when the exact
// spectral check of the ℓ2 constraint runs) and, for ℓ2, the persistent
// power-iteration vector. Restoring it with SetProjectionState makes the
// projections that follow bit-for-bit those of the cell it was taken from,
// which a training checkpoint needs to resume a run exactly.
type ProjectionState struct {
	// Calls counts the projections of one weight matrix made so far.
	Calls int
	// Vector is the power-iteration vector (ℓ2 only; nil otherwise).
	Vector []float64
}

// state returns a copy of the projection state.
func (o *opNorm) state() ProjectionState {
	return ProjectionState{Calls: o.calls, Vector: slices.Clone(o.u)}
}

// setState restores a state taken by state from an opNorm of the same norm
// and size; kind names the cell in errors.
func (o *opNorm) setState(kind string, s ProjectionState) error {
	switch {
	case s.Calls < 0:
		return fmt.Errorf("layers: %s.SetProjectionState: Calls = %d is negative", kind, s.Calls)
	case len(s.Vector) != len(o.u):
		return fmt.Errorf("layers: %s.SetProjectionState: Vector has length %d, want %d", kind, len(s.Vector), len(o.u))
	}
	for _, v := range s.Vector {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("layers: %s.SetProjectionState: Vector holds %v", kind, v)
		}
	}
	o.calls = s.Calls
	copy(o.u, s.Vector)
	return nil
}

// ProjectionStater is implemented by cells whose Project keeps state
// between calls (Dense, Experts and Conv; MeanField's Project is a pure
// function of its parameters).
type ProjectionStater interface {
	ProjectionState() ProjectionState
	SetProjectionState(ProjectionState) error
}

var _ ProjectionStater = (*Dense)(nil)
