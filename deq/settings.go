package deq

import (
	"fmt"
	"math"

	"github.com/deqgo/deq/solver"
)

// Backward selects how a Layer differentiates a loss L through its fixed
// point z* = f(z*, x; θ).
type Backward int

const (
	// Implicit differentiation, the default: solve the adjoint fixed point
	// g = J_f(z*)ᵀg + ∂L/∂z* with Settings.Adjoint, then
	// ∂L/∂θ = (∂f/∂θ)ᵀg and ∂L/∂x = (∂f/∂x)ᵀg. Exact up to the adjoint
	// solve's tolerance.
	Implicit Backward = iota
	// JacobianFree takes g = ∂L/∂z* (Fung et al. 2022): one VJP, no solve. A
	// descent direction for contractive cells, not the gradient.
	JacobianFree
	// Phantom backpropagates through PhantomSteps damped steps
	// h ← (1 − λ)h + λ f(h, x) started at z* (treated as a constant), with
	// λ = PhantomDamping (Geng et al. 2021): a truncated Neumann series of
	// the implicit gradient, exact only in the limit of many steps.
	Phantom
)

// String names the mode.
func (b Backward) String() string {
	switch b {
	case Implicit:
		return "implicit"
	case JacobianFree:
		return "jacobian-free"
	case Phantom:
		return "phantom"
	}
	return fmt.Sprintf("Backward(%d)", int(b))
}

// OracleMode says how a solver sees a stochastic cell (one whose
// evaluator's Model is not solver.Deterministic). Deterministic cells are
// always evaluated exactly.
type OracleMode int

const (
	// Auto gives the solver the sampled oracle if the method implements
	// solver.Validator and accepts it, and the exact operator otherwise.
	// The deterministic methods of package solver reject stochastic
	// oracles, so they get the exact operator; VR-GHAL gets the sampled one.
	Auto OracleMode = iota
	// Exact gives the solver the deterministic exact operator
	// (layers.ExactOracle).
	Exact
	// Sampled gives the solver the stochastic minibatch oracle.
	Sampled
)

// String names the mode.
func (m OracleMode) String() string {
	switch m {
	case Auto:
		return "auto"
	case Exact:
		return "exact"
	case Sampled:
		return "sampled"
	}
	return fmt.Sprintf("OracleMode(%d)", int(m))
}

// Monitor says when a Layer measures empirical Lipschitz ratios along the
// forward solve (see layers.LipschitzMonitor).
type Monitor int

const (
	// MonitorUnproven, the default, monitors when the cell does not prove
	// its bound in the forward norm (layers.Cell.Proven is false).
	MonitorUnproven Monitor = iota
	// MonitorAlways monitors every forward solve.
	MonitorAlways
	// MonitorNever never monitors.
	MonitorNever
)

// Default values used where a Settings field is zero.
const (
	DefaultNorm           = "l2"
	DefaultPhantomSteps   = 5
	DefaultPhantomDamping = 1.0
)

// Settings configure a Layer. The zero value of every field selects the
// documented default; New validates the rest.
type Settings struct {
	// Norm names the per-example norm of the forward solve, as accepted by
	// solver.ParseNorm for the cell's Rows×Hidden state ("l2", "linf",
	// "lp:P", "schatten:P"). Residuals and tolerances are measured in the
	// solver.Batched norm over the batch: the largest per-example norm.
	// Empty means DefaultNorm.
	Norm string
	// Forward is the forward fixed-point method. Nil means solver.Picard{}.
	Forward solver.Method
	// ForwardSettings are passed to solver.Solve for the forward solve
	// (zero values mean the solver package's defaults).
	ForwardSettings solver.Settings
	// ForwardOracle says how the forward method sees a stochastic cell.
	ForwardOracle OracleMode

	// Backward is the backward mode; the zero value is Implicit.
	Backward Backward
	// Adjoint is the method of the adjoint solve (Implicit only). Nil means
	// solver.Picard{}.
	Adjoint solver.Method
	// AdjointSettings are passed to solver.Solve for the adjoint solve.
	AdjointSettings solver.Settings
	// AdjointNorm names the per-example norm of the adjoint solve. Empty
	// means "l2". The adjoint map g ↦ J_f(z*)ᵀg + v is a contraction in the
	// dual of the forward norm (ℓq with 1/p + 1/q = 1), which package solver
	// does not offer for q < 2; its spectral radius is at most the forward
	// Lipschitz bound in every norm, so the iteration still converges.
	AdjointNorm string
	// AdjointOracle says how the adjoint method sees a stochastic cell: the
	// sampled adjoint uses minibatched VJPs (the same terms for every
	// evaluation with the same Sample).
	AdjointOracle OracleMode
	// PhantomSteps is the number of unrolled steps of Phantom. Zero means
	// DefaultPhantomSteps.
	PhantomSteps int
	// PhantomDamping is λ ∈ (0, 1] of Phantom. Zero means
	// DefaultPhantomDamping.
	PhantomDamping float64

	// Monitor says when to measure empirical Lipschitz ratios.
	Monitor Monitor
}

// withDefaults validates s and returns a copy with defaults filled in.
func (s *Settings) withDefaults() (Settings, error) {
	var c Settings
	if s != nil {
		c = *s
	}
	switch {
	case c.Backward < Implicit || c.Backward > Phantom:
		return c, fmt.Errorf("deq: Settings.Backward = %v is not a backward mode", c.Backward)
	case c.ForwardOracle < Auto || c.ForwardOracle > Sampled:
		return c, fmt.Errorf("deq: Settings.ForwardOracle = %v is not an oracle mode", c.ForwardOracle)
	case c.AdjointOracle < Auto || c.AdjointOracle > Sampled:
		return c, fmt.Errorf("deq: Settings.AdjointOracle = %v is not an oracle mode", c.AdjointOracle)
	case c.PhantomSteps < 0:
		return c, fmt.Errorf("deq: Settings.PhantomSteps = %d must not be negative", c.PhantomSteps)
	case c.PhantomDamping < 0 || c.PhantomDamping > 1 || math.IsNaN(c.PhantomDamping):
		return c, fmt.Errorf("deq: Settings.PhantomDamping = %v outside (0, 1]", c.PhantomDamping)
	case c.Monitor < MonitorUnproven || c.Monitor > MonitorNever:
		return c, fmt.Errorf("deq: Settings.Monitor = %d is not a monitor mode", int(c.Monitor))
	}
	if c.Norm == "" {
		c.Norm = DefaultNorm
	}
	if c.AdjointNorm == "" {
		c.AdjointNorm = "l2"
	}
	if c.Forward == nil {
		c.Forward = solver.Picard{}
	}
	if c.Adjoint == nil {
		c.Adjoint = solver.Picard{}
	}
	if c.PhantomSteps == 0 {
		c.PhantomSteps = DefaultPhantomSteps
	}
	if c.PhantomDamping == 0 {
		c.PhantomDamping = DefaultPhantomDamping
	}
	return c, nil
}
