package deq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/internal/check"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// Default values used where a JacobianOptions field is zero.
const (
	DefaultJacobianIterations = 30
	DefaultJacobianTol        = 1e-6
	DefaultJVPStep            = 1e-6
	DefaultProbes             = 1
)

// JacobianOptions control the Jacobian measurements SpectralRadius,
// SpectralNorm and JacobianFrobenius. The zero value of every field is its
// documented default; a nil *JacobianOptions means the defaults.
type JacobianOptions struct {
	// Iterations caps the Krylov (SpectralRadius) or power (SpectralNorm)
	// iterations; SpectralRadius also stops at the per-example dimension,
	// where its answer is exact. Zero means DefaultJacobianIterations.
	Iterations int
	// Tol stops the iterations once every example's estimate changed by at
	// most Tol relative to its value in the last iteration. Zero means
	// DefaultJacobianTol.
	Tol float64
	// Step is the relative step of the central differences that give
	// Jacobian–vector products: h = Step·max(1, ‖z‖∞) along unit
	// directions. Zero means DefaultJVPStep.
	Step float64
	// Probes is the number of Hutchinson probes of JacobianFrobenius. Zero
	// means DefaultProbes.
	Probes int
	// Gaussian draws standard normal probes instead of the default
	// Rademacher (±1) ones, whose estimator has the smaller variance.
	Gaussian bool
	// Seed seeds the start vectors and the probes.
	Seed uint64
}

func (o *JacobianOptions) withDefaults() (JacobianOptions, error) {
	var c JacobianOptions
	if o != nil {
		c = *o
	}
	if err := cmp.Or(
		check.NotNegative("deq: JacobianOptions.Iterations", c.Iterations),
		check.NotNegative("deq: JacobianOptions.Probes", c.Probes),
		check.PositiveFinite("deq: JacobianOptions.Tol", c.Tol),
		check.PositiveFinite("deq: JacobianOptions.Step", c.Step),
	); err != nil {
		return c, err
	}
	if c.Iterations == 0 {
		c.Iterations = DefaultJacobianIterations
	}
	if c.Tol == 0 {
		c.Tol = DefaultJacobianTol
	}
	if c.Step == 0 {
		c.Step = DefaultJVPStep
	}
	if c.Probes == 0 {
		c.Probes = DefaultProbes
	}
	return c, nil
}

// SpectralEstimate is a per-example measurement of J_b = ∂f_b/∂z_b, the
// Jacobian of example b's output with respect to its own state (the
// batch's Jacobian is block diagonal).
type SpectralEstimate struct {
	// Value is the largest of PerExample.
	Value float64
	// PerExample holds each example's estimate.
	PerExample []float64
	// Iterations is the number of iterations run (Jacobian–vector products
	// for the whole batch).
	Iterations int
	// Converged reports whether every example met JacobianOptions.Tol (or
	// its Krylov space became invariant) within JacobianOptions.Iterations.
	Converged bool
}

// FrobeniusEstimate is a Hutchinson estimate of the squared Frobenius norm
// of the Jacobian ∂f/∂z.
type FrobeniusEstimate struct {
	// Value estimates the mean over examples of ‖J_b‖_F², J_b = ∂f_b/∂z_b.
	// It is unbiased.
	Value float64
	// StdErr is the sample standard error of Value over the probes; NaN
	// with a single probe.
	StdErr float64
	// PerExample holds each example's estimate of ‖J_b‖_F².
	PerExample []float64
	// Probes is the number of probes averaged.
	Probes int
}

// jac holds what the measurements share.
type jac struct {
	ctx   context.Context
	ev    layers.Evaluator
	z     []float64
	n, d  int // examples, per-example length
	h     float64
	fp    []float64
	fm    []float64
	zp    []float64
	exact solver.Sample
}

// prepare validates the options and the arguments of a measurement, and
// returns its random stream: JacobianOptions.Seed on the measurement's own
// stream.
func prepare(ctx context.Context, ev layers.Evaluator, z []float64, o *JacobianOptions, stream uint64) (JacobianOptions, *jac, *rand.Rand, error) {
	opts, err := o.withDefaults()
	if err != nil {
		return opts, nil, nil, err
	}
	j, err := newJac(ctx, ev, z, opts.Step)
	return opts, j, rand.New(rand.NewPCG(opts.Seed, stream)), err
}

func newJac(ctx context.Context, ev layers.Evaluator, z []float64, step float64) (*jac, error) {
	if ctx == nil {
		return nil, errors.New("deq: nil context")
	}
	if ev == nil {
		return nil, errors.New("deq: nil evaluator")
	}
	if len(z) != ev.Len() {
		return nil, fmt.Errorf("deq: z has length %d, want the evaluator's Len() = %d", len(z), ev.Len())
	}
	n := ev.Examples()
	if err := checkFinite("z", z, n); err != nil {
		return nil, err
	}
	zmax := 0.0
	for _, v := range z {
		zmax = math.Max(zmax, math.Abs(v))
	}
	return &jac{
		ctx: ctx, ev: ev, z: z, n: n, d: ev.Len() / n,
		h:     step * math.Max(1, zmax),
		fp:    make([]float64, len(z)),
		fm:    make([]float64, len(z)),
		zp:    make([]float64, len(z)),
		exact: solver.Sample{Size: max(ev.Terms(), 1)},
	}, nil
}

// jvp writes J·v into dst by central differences of EvalExact; each
// example's block of v must have ℓ2 norm one or zero. It returns an error
// wrapping solver.ErrNonFinite if J·v is not finite.
func (j *jac) jvp(dst, v []float64) error {
	if err := j.stopped(); err != nil {
		return err
	}
	for i := range j.z {
		j.zp[i] = j.z[i] + j.h*v[i]
	}
	if err := j.ev.EvalExact(j.fp, j.zp); err != nil {
		return err
	}
	for i := range j.z {
		j.zp[i] = j.z[i] - j.h*v[i]
	}
	if err := j.ev.EvalExact(j.fm, j.zp); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = (j.fp[i] - j.fm[i]) / (2 * j.h)
	}
	if !numeric.AllFinite(dst) {
		return checkFinite("Jacobian–vector product", dst, j.n)
	}
	return nil
}

// vjp writes Jᵀ·g into dst through the evaluator's exact VJPHidden. It
// returns an error wrapping solver.ErrNonFinite if Jᵀ·g is not finite.
func (j *jac) vjp(dst, g []float64) error {
	if err := j.stopped(); err != nil {
		return err
	}
	if _, err := j.ev.VJPHidden(dst, j.z, g, j.exact); err != nil {
		return err
	}
	if !numeric.AllFinite(dst) {
		return checkFinite("vector–Jacobian product", dst, j.n)
	}
	return nil
}

// finiteHessenberg returns an error wrapping solver.ErrNonFinite if
// example b's Hessenberg matrix m holds a NaN or ±Inf: no eigenvalue
// computation is ever run on one (LAPACK's balancing does not terminate
// on it).
func finiteHessenberg(m mat.Matrix, b int) error {
	r, c := m.Dims()
	for i := range r {
		for k := range c {
			if v := m.At(i, k); v-v != 0 {
				return fmt.Errorf("deq: SpectralRadius: the Hessenberg matrix of example %d holds %v at (%d, %d): %w", b, v, i, k, solver.ErrNonFinite)
			}
		}
	}
	return nil
}

// stopped returns an error wrapping the context's error once it is done,
// and nil before: every measurement checks it before each Jacobian product.
func (j *jac) stopped() error {
	if err := j.ctx.Err(); err != nil {
		return fmt.Errorf("deq: Jacobian measurement stopped: %w", err)
	}
	return nil
}

// vec returns a new vector of the state's length.
func (j *jac) vec() []float64 { return make([]float64, len(j.z)) }

// block returns example b's block of v.
func (j *jac) block(v []float64, b int) []float64 { return v[b*j.d : (b+1)*j.d] }

// SpectralRadius estimates, for each example b, the spectral radius
// ρ(J_b) = max|λ| over the eigenvalues λ of J_b = ∂f_b/∂z_b at z: the
// quantity whose value below one makes z a locally attracting fixed point
// of the iteration z ← f(z). ρ(J_b) ≤ ‖J_b‖ in every operator norm, so a
// cell's Lipschitz bound bounds it.
//
// It runs the Arnoldi iteration, the Krylov-subspace refinement of power
// iteration (it keeps every power iterate, orthonormalised, instead of the
// last one), on every example at once: Jacobian–vector products come from
// central differences of EvalExact (see JacobianOptions.Step), and after
// each one the eigenvalues of each example's small Hessenberg matrix (the
// Ritz values) give the estimate, their largest modulus. Unlike plain power
// iteration it converges when the dominant eigenvalues are a complex pair
// or of opposite signs. After dim(z_b) iterations (or an invariant
// subspace) the Ritz values are the eigenvalues of J_b up to the
// differences' error. For a piecewise-linear activation the differences
// see the generalized Jacobian of the pieces around z.
//
// ev must hold the batch's input (SetInput); z is the point, usually z*.
// A NaN or ±Inf in z, in a Jacobian–vector product or in a Hessenberg
// matrix is an error wrapping solver.ErrNonFinite, returned before any
// eigenvalue computation sees it.
// ctx is checked before every Jacobian product: once it is done the
// measurement returns the estimate so far with an error wrapping ctx.Err().
func SpectralRadius(ctx context.Context, ev layers.Evaluator, z []float64, o *JacobianOptions) (SpectralEstimate, error) {
	opts, j, rng, err := prepare(ctx, ev, z, o, 0x510e527fade682d1)
	if err != nil {
		return SpectralEstimate{}, err
	}
	n, d := j.n, j.d
	kmax := min(opts.Iterations, d)
	// q[b][i] is example b's i-th Arnoldi vector; hs[b] its Hessenberg
	// matrix, (kmax+1)×kmax.
	q := make([][][]float64, n)
	hs := make([]*mat.Dense, n)
	done := make([]bool, n)
	est := SpectralEstimate{PerExample: make([]float64, n)}
	v, w := j.vec(), j.vec()
	for b := range n {
		q0 := make([]float64, d)
		for i := range q0 {
			q0[i] = rng.NormFloat64()
		}
		scaleTo(q0, 1/norm2(q0))
		q[b] = [][]float64{q0}
		hs[b] = mat.NewDense(kmax+1, kmax, nil)
	}
	var eig mat.Eigen
	for k := 0; k < kmax; k++ {
		for b := range n {
			vb := j.block(v, b)
			if done[b] {
				clear(vb)
				continue
			}
			copy(vb, q[b][k])
		}
		if err := j.jvp(w, v); err != nil {
			return est, err
		}
		est.Iterations = k + 1
		allConverged := true
		for b := range n {
			if done[b] {
				continue
			}
			wb := j.block(w, b)
			// Modified Gram–Schmidt, twice for orthogonality.
			for range 2 {
				for i := 0; i <= k; i++ {
					c := dot(q[b][i], wb)
					hs[b].Set(i, k, hs[b].At(i, k)+c)
					axpy(wb, -c, q[b][i])
				}
			}
			beta := norm2(wb)
			hs[b].Set(k+1, k, beta)
			sq := hs[b].Slice(0, k+1, 0, k+1)
			if err := finiteHessenberg(sq, b); err != nil {
				return est, err
			}
			if !eig.Factorize(sq, mat.EigenNone) {
				return est, fmt.Errorf("deq: SpectralRadius: eigenvalues of the %d×%d Hessenberg matrix of example %d did not converge", k+1, k+1, b)
			}
			rho := 0.0
			for _, l := range eig.Values(nil) {
				rho = math.Max(rho, cmplx.Abs(l))
			}
			old := est.PerExample[b]
			est.PerExample[b] = rho
			invariant := beta <= 1e-12*math.Max(rho, 1e-300)
			switch {
			case invariant:
				done[b] = true
			case k > 0 && math.Abs(rho-old) <= opts.Tol*rho:
				done[b] = true
			default:
				allConverged = false
				qn := make([]float64, d)
				copy(qn, wb)
				scaleTo(qn, 1/beta)
				q[b] = append(q[b], qn)
			}
		}
		if allConverged {
			est.Converged = true
			break
		}
	}
	if est.Iterations == d {
		est.Converged = true
	}
	est.Value = floats.Max(est.PerExample)
	return est, nil
}

// SpectralNorm estimates, for each example b, the spectral norm ‖J_b‖₂ =
// σ_max(J_b), the largest singular value of J_b = ∂f_b/∂z_b at z: the
// local Lipschitz constant of f in ℓ2, which a cell's ℓ2 bound γ̄ bounds.
//
// It runs power iteration on J_bᵀJ_b, v ← Jᵀ(Jv)/‖Jᵀ(Jv)‖, with J·v from
// central differences of EvalExact and Jᵀ·u from the exact VJPHidden, and
// returns ‖J_b v‖ for the last unit v: a lower bound on σ_max(J_b) (up to
// the differences' error) that converges to it at the rate
// (σ₂/σ₁)² per iteration.
//
// ev must hold the batch's input (SetInput); z is the point, usually z*.
// A NaN or ±Inf in z or in a Jacobian product is an error wrapping
// solver.ErrNonFinite.
// ctx is checked before every Jacobian product: once it is done the
// measurement returns the estimate so far with an error wrapping ctx.Err().
func SpectralNorm(ctx context.Context, ev layers.Evaluator, z []float64, o *JacobianOptions) (SpectralEstimate, error) {
	opts, j, rng, err := prepare(ctx, ev, z, o, 0x9b05688c2b3e6c1f)
	if err != nil {
		return SpectralEstimate{}, err
	}
	n := j.n
	v, u, w := j.vec(), j.vec(), j.vec()
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	for b := range n {
		vb := j.block(v, b)
		scaleTo(vb, 1/norm2(vb))
	}
	est := SpectralEstimate{PerExample: make([]float64, n)}
	for k := range opts.Iterations {
		if err := j.jvp(u, v); err != nil {
			return est, err
		}
		if err := j.vjp(w, u); err != nil {
			return est, err
		}
		est.Iterations = k + 1
		converged := true
		for b := range n {
			s := norm2(j.block(u, b))
			if k == 0 || math.Abs(s-est.PerExample[b]) > opts.Tol*s {
				converged = false
			}
			est.PerExample[b] = s
			wb, vb := j.block(w, b), j.block(v, b)
			if nw := norm2(wb); nw > 0 {
				copy(vb, wb)
				scaleTo(vb, 1/nw)
			}
		}
		if converged {
			est.Converged = true
			break
		}
	}
	est.Value = floats.Max(est.PerExample)
	return est, nil
}

// JacobianFrobenius returns Hutchinson's estimate of ‖J_b‖_F², J_b =
// ∂f_b/∂z_b at z, averaged over the examples, the quantity the Jacobian
// regularisation of "Stabilizing Equilibrium Models by Jacobian
// Regularization" by Shaojie Bai, Vladlen Koltun and J. Zico Kolter (ICML
// 2021) adds to the loss.
//
// For a probe v with E[vvᵀ] = I, E‖J_bᵀv_b‖² = tr(J_bJ_bᵀ) = ‖J_b‖_F², so
// each of JacobianOptions.Probes probes (Rademacher, or Gaussian) costs one
// exact VJPHidden for the whole batch. With A = J_bJ_bᵀ the variance of one
// probe's estimate is 2(‖A‖_F² − Σ_i A_ii²) for Rademacher probes and
// 2‖A‖_F² for Gaussian ones; StdErr estimates the resulting standard error
// from the probes' spread.
//
// ev must hold the batch's input (SetInput); z is the point, usually z*.
// A NaN or ±Inf in z or in a vector–Jacobian product is an error wrapping
// solver.ErrNonFinite.
// ctx is checked before every Jacobian product: once it is done the
// measurement returns the estimate so far with an error wrapping ctx.Err().
func JacobianFrobenius(ctx context.Context, ev layers.Evaluator, z []float64, o *JacobianOptions) (FrobeniusEstimate, error) {
	opts, j, rng, err := prepare(ctx, ev, z, o, 0x1f83d9abfb41bd6b)
	if err != nil {
		return FrobeniusEstimate{}, err
	}
	v, w := j.vec(), j.vec()
	est := FrobeniusEstimate{PerExample: make([]float64, j.n), Probes: opts.Probes}
	var acc running
	for range opts.Probes {
		drawProbe(rng, v, opts.Gaussian)
		if err := j.vjp(w, v); err != nil {
			return est, err
		}
		batch := 0.0
		for b := range j.n {
			wb := j.block(w, b)
			x := dot(wb, wb)
			est.PerExample[b] += x / float64(opts.Probes)
			batch += x / float64(j.n)
		}
		acc.add(batch)
	}
	est.Value, est.StdErr = acc.mean, acc.stdErr()
	return est, nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func norm2(a []float64) float64 { return math.Sqrt(dot(a, a)) }

func axpy(dst []float64, a float64, x []float64) {
	for i, v := range x {
		dst[i] += a * v
	}
}

func scaleTo(v []float64, a float64) {
	for i := range v {
		v[i] *= a
	}
}
