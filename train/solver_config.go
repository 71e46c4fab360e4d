package train

import (
	"cmp"
	"math"

	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/solver"
)

// SolverConfig names a fixed-point method and its budget.
type SolverConfig struct {
	// Method is a method of the solver registry (see Methods); the zero
	// value is unset, which Defaults fills in. The
	// deterministic methods see the cell's exact operator; the stochastic
	// one (VR-GHAL) sees the minibatch oracle of a stochastic cell (and the
	// exact operator, as a deterministic oracle, of the dense cell).
	Method solver.MethodSpec
	// Tol is the residual tolerance in the model's norm, for every example
	// of a batch, absolute unless Relative: a solve succeeds when a proven
	// bound on its residual is at most Tol (see solver.Status). A batch
	// "meets the tolerance" when its certificate's bound is at most Tol.
	Tol float64
	// MaxIter limits iterations (epochs for VR-GHAL).
	MaxIter int
	// MethodSettings are the method's settings (solver.MethodSettings):
	// Delta is also the failure probability of the residual certificate;
	// SampleScale multiplies VR-GHAL's sample sizes (zero means 1, the
	// paper's constants); Memory is Anderson's or Broyden's memory (zero
	// means the solver package's default).
	solver.MethodSettings
	// CertDelta, when positive, certifies the solves of a stochastic cell
	// that declares its term bounds (the meanfield and experts cells) from
	// a sample of the cell's terms, with probability at least
	// 1 − CertDelta, whenever that is cheaper than the exact pass
	// (solver.CertifySettings.Sampled; the methods that certify their own
	// stops use it too). Zero, the default, keeps exact certificates at
	// probability one.
	CertDelta float64 `json:",omitempty"`
	// Relative makes Tol relative to the residual of the solve's start
	// point (solver.Settings.Relative). The zero value, the default, is an
	// absolute tolerance: the start point of a forward solve depends on
	// the batch (and, with warm starts, on the previous epoch's fixed
	// point, whose residual is already small), so a tolerance relative to
	// it would ask different batches for different accuracies, and the
	// certificates, which bound the absolute residual, would no longer
	// be compared with one number. Eval is relative when Forward is. The
	// adjoint solve (Backward.Solver) ignores it: its tolerance is always
	// relative, its right-hand side ∂L/∂z* setting the scale.
	Relative bool `json:",omitempty"`
}

// BackwardConfig selects how gradients pass through the fixed point.
type BackwardConfig struct {
	// Mode is the backward mode. The zero value, deq.DefaultBackward, selects
	// DefaultConvBackward (deq.JacobianFree: one VJP, no adjoint solve) for the
	// conv cell and deq.Implicit (solve the adjoint fixed point with Solver)
	// for the others.
	Mode deq.Backward
	// Solver is the adjoint solver of implicit mode. Zero fields take the
	// values of DefaultBackwardSolver() (DefaultsFor(ConvCell)'s for the
	// conv cell). Its Tol is relative: the adjoint solve stops when its
	// residual is at most Tol times its residual at the start point
	// g = ∂L/∂z* (the cotangents of a mean loss are tiny, so an absolute
	// tolerance would stop at once). Its certificate is skipped (the
	// adjoint's status is still checked).
	Solver SolverConfig
	// PhantomSteps is the number of unrolled steps of phantom mode. Zero
	// means deq.DefaultPhantomSteps.
	PhantomSteps int
}

// merge validates s and fills its zero fields from base.
func (s SolverConfig) merge(field string, base SolverConfig) (SolverConfig, error) {
	switch {
	case !s.Method.IsZero() && s.Method.Info().Baseline:
		return s, fieldErr(field+".Method", s.Method, "is a stochastic baseline, which needs a variance bound a DEQ cell does not have (want "+names(Methods())+")")
	case s.Tol < 0 || notFinite(s.Tol):
		return s, fieldErr(field+".Tol", s.Tol, "must be positive and finite")
	case s.MaxIter < 0:
		return s, fieldErr(field+".MaxIter", s.MaxIter, "must not be negative")
	case s.Delta < 0 || s.Delta >= 1 || math.IsNaN(s.Delta):
		return s, fieldErr(field+".Delta", s.Delta, "must lie in (0, 1)")
	case s.CertDelta < 0 || s.CertDelta >= 1 || math.IsNaN(s.CertDelta):
		return s, fieldErr(field+".CertDelta", s.CertDelta, "must lie in [0, 1)")
	case s.SampleScale < 0 || notFinite(s.SampleScale):
		return s, fieldErr(field+".SampleScale", s.SampleScale, "must be positive and finite")
	case s.Memory < 0:
		return s, fieldErr(field+".Memory", s.Memory, "must not be negative")
	}
	d := s
	if d.Method.IsZero() {
		d.Method = base.Method
	}
	d.Tol = cmp.Or(s.Tol, base.Tol)
	d.MaxIter = cmp.Or(s.MaxIter, base.MaxIter)
	d.MethodSettings = s.MethodSettings.Or(base.MethodSettings)
	d.CertDelta = cmp.Or(s.CertDelta, base.CertDelta)
	d.Relative = s.Relative || base.Relative
	return d, nil
}

// method builds the solver.Method of s for a cell with Lipschitz bound
// gamma.
func (s SolverConfig) method(gamma float64) solver.Method {
	return s.Method.New(solver.MethodOptions{Gamma: gamma, MethodSettings: s.MethodSettings})
}

// settings returns the solver.Settings of s; relative makes Tol relative
// to the first residual.
func (s SolverConfig) settings(skipCert, relative bool) solver.Settings {
	return solver.Settings{
		Tol:      s.Tol,
		Relative: relative,
		MaxIter:  s.MaxIter,
		Certify:  solver.CertifySettings{Skip: skipCert, Delta: cmp.Or(s.CertDelta, s.Delta), Sampled: s.CertDelta > 0},
	}
}

// oracle returns the oracle mode under which the method of s sees a
// stochastic cell: the sampled oracle for the stochastic methods, the
// exact operator for the others.
func (s SolverConfig) oracle() deq.OracleMode {
	if s.Method.Info().Stochastic {
		return deq.Sampled
	}
	return deq.Auto
}
