package deqtest

import (
	"testing"

	"github.com/deqgo/deq/layers"
)

// check is one of the package's checks: the name its messages carry, the
// salt of its random stream (with Options.Seed) and its body.
type check struct {
	name string
	salt uint64
	body func(k *kit)
}

// run runs the check on c: it builds the check's kit (returning at once if
// that fails), runs the body with it and then reports how many mismatches
// were not shown. The body calls k.t.Helper, as the check itself does, so
// that failures point at the test that called the check.
func (ch check) run(t testing.TB, c layers.Cell, o *Options) {
	t.Helper()
	k := newKit(t, ch.name, c, o, ch.salt)
	if k == nil {
		return
	}
	defer k.summary()
	ch.body(k)
}

// The four checks CheckCell runs, in its order.
var (
	unbiasedCheck   = check{"CheckUnbiased", 0x6a09e667f3bcc908, (*kit).unbiased}
	fixedPointCheck = check{"CheckFixedPoint", 0xbb67ae8584caa73b, (*kit).fixedPoint}
	vjpCheck        = check{"CheckVJP", 0x3c6ef372fe94f82b, (*kit).vjp}
	lipschitzCheck  = check{"CheckLipschitz", 0xa54ff53a5f1d36f1, (*kit).lipschitz}
)

// CheckCell runs CheckUnbiased, CheckFixedPoint, CheckVJP and
// CheckLipschitz on c with the options o (nil means the defaults).
func CheckCell(t testing.TB, c layers.Cell, o *Options) {
	t.Helper()
	for _, ch := range []check{unbiasedCheck, fixedPointCheck, vjpCheck, lipschitzCheck} {
		ch.run(t, c, o)
	}
}

// CheckUnbiased checks that the cell's sampled oracle is an unbiased
// estimate of its exact map.
//
// At each of Options.Points random points (z, x) it first requires Eval
// with a Sample of Terms() unit samples (the exact average, by the
// Evaluator contract) to equal EvalExact up to 1e-12 of the output's
// largest entry, and, when the evaluator is a layers.GraphEvaluator,
// EvalGraph to equal EvalExact up to 1e-4 of it (a second implementation
// of the map; the tolerance allows for a float32 exact map). A cell whose
// evaluators have no graph skips that comparison. It then draws K = Options.Draws evaluations τ_k = Eval(z;
// ξ_k) of Options.SampleSize unit samples with independent seeds (two for
// a deterministic oracle) and, for every coordinate i, forms the mean m_i
// and sample standard deviation s_i of d_{k,i} = τ_{k,i} − f_i(z). By the
// central limit theorem m_i/(s_i/√K) is close to standard normal when the
// oracle is unbiased, so the check requires
//
//	|m_i| ≤ z_α·s_i/√K + K·ε·mean_k|d_{k,i}| + 1e-12·‖f(z)‖∞,
//
// with z_α the two-sided normal quantile at level α/D: a Bonferroni
// correction over the D coordinates of all points, so that a correct cell
// fails with probability about α = Options.Alpha in all. The last two terms
// allow for the rounding of the K-term sum (ε the float64 epsilon) and of
// the exact average.
func CheckUnbiased(t testing.TB, c layers.Cell, o *Options) {
	t.Helper()
	unbiasedCheck.run(t, c, o)
}

// CheckFixedPoint checks that a stochastic solve of the cell lands within
// its residual certificate of the deterministic fixed point, in every norm
// among Options.Norms in which the cell proves its bound γ̄ = Gamma() < 1.
//
// For a random input x and each such norm it solves z = f(z, x) on the
// exact map (layers.ExactOracle) with solver.Anderson, then solver.Picard
// if Anderson stops short, to a residual r* ≤ FixedPointTol, giving z*.
// It then solves on the sampled oracle with solver.MinibatchKM (step 1/2,
// minibatches of Options.SolveBatch unit samples, Options.Budget unit
// samples, tolerance Options.SolveTol), giving ẑ and a certificate (failure
// probability Options.Delta, calls of Options.SolveBatch unit samples) that
// bounds each example's residual ‖f(ẑ) − ẑ‖ by B_b. The default
// SolveBatch is the largest sampled size, the largest power of two below
// Terms(), so that the solve runs on sampled minibatches, never the exact
// average. Every layers cell is a finite sum, so the solver certifies ẑ with
// one exact evaluation (solver.FiniteSum): B_b is the exact residual and the
// check tests the solver, the certificate and the declared contraction
// together (a bias of the sampled oracle is CheckUnbiased's to catch). A
// γ̄-contraction has ‖z − z_fix‖ ≤ ‖f(z) − z‖/(1 − γ̄), so every
// example must satisfy
//
//	‖ẑ_b − z*_b‖ ≤ (B_b + r*)/(1 − γ̄)·(1 + 1e-9),
//
// the r* term accounting for z*'s own distance from the fixed point. A
// correct cell fails with probability at most Options.Delta per norm (the
// certificate's; zero with an exact certificate). A cell with γ̄ ≥ 1 is skipped with a log line: the bound
// needs a contraction.
func CheckFixedPoint(t testing.TB, c layers.Cell, o *Options) {
	t.Helper()
	fixedPointCheck.run(t, c, o)
}

// CheckVJP checks the cell's vector–Jacobian products against central
// finite differences of its forward evaluations.
//
// At each of Options.Points random points (z, x), with a random cotangent
// g, let φ = ⟨g, f(z, x; θ)⟩ computed by EvalExact (after SetInput). VJP's
// (∂f/∂z)ᵀg, (∂f/∂x)ᵀg and the gradient it adds to every parameter must
// match (φ(a + h·e_i) − φ(a − h·e_i))/(2h) for up to Options.MaxCoords
// coordinates i of each argument a, h = Options.Step. VJPHidden is checked
// the same way against ⟨g, Eval(z; s)⟩ for a Sample s of
// Options.SampleSize unit samples held fixed (and for the exact Sample,
// against which it must also agree with VJP's dz).
//
// A coordinate fails when its error exceeds
//
//	RelTol·max_i|D_i| + 64·ε·Σ_j|g_j f_j|/h,
//
// D_i the argument's difference quotients: the first term is the relative
// tolerance (with h = 1e-6 the truncation error of a central difference of
// a smooth map, O(h²), is far below 1e-6 relative), the second the
// float64 rounding of φ (ε the machine epsilon, 64 ulps of the magnitude
// of its terms) amplified by 1/h. A point that fails is redrawn up to
// Options.Retries times, and reported only if every draw fails, so that
// ReLU kinks (see the package documentation) do not cause failures. The
// parameters and their gradients are restored on return.
func CheckVJP(t testing.TB, c layers.Cell, o *Options) {
	t.Helper()
	vjpCheck.run(t, c, o)
}

// CheckLipschitz checks the declared Lipschitz bound γ̄ = Cell.Gamma on
// pairs of states, in every norm among Options.Norms in which the cell
// proves it (Cell.Proven).
//
// At each of Options.Points random points it draws Options.Pairs random
// pairs (z₁, z₂ = z₁ + δ·ζ, ζ standard normal, δ log-uniform in
// [10⁻³, 1]) and Options.Ascent adversarial pairs (z₁, z₁ + 10⁻³·v), where
// v follows power iteration on JᵀJ, J = ∂f/∂z at z₁: v ← Jᵀ(f(z₁ + 10⁻³v)
// − f(z₁)) through VJPHidden, normalised, which steers v towards the
// directions f stretches most. Every example b of every pair must satisfy
//
//	‖f(z₁)_b − f(z₂)_b‖ ≤ γ̄·‖z₁_b − z₂_b‖·(1 + 1e-9)
//
// for the exact map (EvalExact) and, when the oracle's Model is
// solver.SamplewiseLipschitz, for the sampled map Eval(·; s) with one
// Sample s of Options.SampleSize unit samples per pair. Failures report the
// ratio, the bound and the pair's distance.
func CheckLipschitz(t testing.TB, c layers.Cell, o *Options) {
	t.Helper()
	lipschitzCheck.run(t, c, o)
}
