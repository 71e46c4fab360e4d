package deq

import (
	"cmp"
	"fmt"
	"math"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// Backward selects how a Layer differentiates a loss L through its fixed
// point z* = f(z*, x; θ). The zero value, DefaultBackward, is unset: it
// selects the default of the configuration that holds it (Implicit for
// Settings). Its text form is "implicit", "jacobian-free" or "phantom",
// and "" for DefaultBackward.
type Backward int

const (
	// DefaultBackward, the zero value, selects the default mode of the
	// configuration that holds it: Implicit for Settings.Backward.
	DefaultBackward Backward = iota
	// Implicit differentiation, the default: solve the adjoint fixed point
	// g = J_f(z*)ᵀg + ∂L/∂z* with Settings.Adjoint, then
	// ∂L/∂θ = (∂f/∂θ)ᵀg and ∂L/∂x = (∂f/∂x)ᵀg. Exact up to the adjoint
	// solve's tolerance.
	Implicit
	// JacobianFree takes g = ∂L/∂z*, as in "JFB: Jacobian-Free
	// Backpropagation for Implicit Networks" by Samy Wu Fung and others
	// (2022): one VJP, no solve. A descent direction for contractive cells,
	// not the gradient.
	JacobianFree
	// Phantom backpropagates through PhantomSteps damped steps
	// h ← (1 − λ)h + λ f(h, x) started at z* (treated as a constant), with
	// λ = PhantomDamping, the phantom gradient of "On Training Implicit
	// Models" by Zhengyang Geng and others (2021): a truncated Neumann series
	// of the implicit gradient, exact only in the limit of many steps.
	Phantom
)

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
	DefaultPhantomSteps   = 5
	DefaultPhantomDamping = 1.0
)

// Settings configure a Layer. The zero value of every field selects the
// documented default; New validates the rest.
type Settings struct {
	// Norm is the per-example norm of the forward solve on the cell's
	// Rows×Hidden state (a solver.LP, solver.LInf or *solver.Schatten, say
	// from solver.ParseNorm(name, Rows, Hidden)); its Len must be the cell's
	// Shape().HiddenLen(). Residuals and tolerances are measured in the
	// solver.Batched norm over the batch: the largest per-example norm. The
	// Layer keeps its own clone. Nil means ℓ2.
	Norm solver.Norm
	// Forward is the forward fixed-point method. Nil means solver.Picard{}.
	// A method with a contraction constant (the Gamma of solver.GHAL,
	// solver.VRGHAL and solver.GrowingBatch) must not claim less than the
	// cell's Gamma() when the cell proves that bound in Norm: New refuses
	// it, and sets a zero Gamma to the cell's. With Dropout the masked map's
	// bound is Gamma()/(1 − Dropout), so a zero Gamma keeps the method's
	// default (1; GHAL and VR-GHAL are refused when the cell's bound exceeds
	// one). When the cell proves no bound in Norm, Gamma is left as given.
	Forward solver.Method
	// ForwardSettings are passed to solver.Solve for the forward solve
	// (zero values mean the solver package's defaults). Its
	// Certify.Sampled chooses, for a stochastic cell that declares its
	// term bounds (layers.MeanField), a certificate from a sample of the
	// cell's terms at failure probability Certify.Delta instead of the
	// exact pass over all of them, whenever the sample is cheaper (see
	// solver.CertifySettings.Sampled); false, the zero value, keeps exact
	// certificates. Sampled certificates are offered in ℓ2, Schatten-2 and
	// ℓ∞ (Norm), not under Dropout.
	ForwardSettings solver.Settings
	// ForwardOracle says how the forward method sees a stochastic cell; the
	// zero value is Auto.
	ForwardOracle OracleMode

	// Backward is the backward mode; the zero value, DefaultBackward, is
	// Implicit.
	Backward Backward
	// Adjoint is the method of the adjoint solve (Implicit only). Nil means
	// solver.Picard{}. Its contraction constant is checked as Forward's;
	// a zero one is set to the cell's Gamma() only when Norm and
	// AdjointNorm are both ℓ2 (where J_fᵀ has J_f's Lipschitz constant) and
	// there is no Dropout.
	Adjoint solver.Method
	// AdjointSettings are passed to solver.Solve for the adjoint solve.
	// Its Certify.Sampled and Certify.Delta choose the adjoint's
	// certificate as ForwardSettings' do the forward's, from a sample of
	// the terms' VJPs (layers.VJPTermBounder) in AdjointNorm.
	AdjointSettings solver.Settings
	// AdjointNorm is the per-example norm of the adjoint solve, as Norm.
	// Nil means ℓ2. The adjoint map g ↦ J_f(z*)ᵀg + v is a contraction in the
	// dual of the forward norm (ℓq with 1/p + 1/q = 1), which package solver
	// does not offer for q < 2; its spectral radius is at most the forward
	// Lipschitz bound in every norm, so the iteration still converges.
	AdjointNorm solver.Norm
	// AdjointOracle says how the adjoint method sees a stochastic cell: the
	// sampled adjoint uses minibatched VJPs (the same terms for every
	// evaluation with the same Sample). The zero value is Auto.
	AdjointOracle OracleMode
	// PhantomSteps is the number of unrolled steps of Phantom. Zero means
	// DefaultPhantomSteps.
	PhantomSteps int
	// PhantomDamping is λ ∈ (0, 1] of Phantom. Zero means
	// DefaultPhantomDamping.
	PhantomDamping float64

	// Monitor says when to measure empirical Lipschitz ratios; the zero
	// value is MonitorUnproven.
	Monitor Monitor

	// CorrectionStates is the number K of states of the forward solver's
	// trajectory that Forward collects into Solution.States for the
	// fixed-point correction of "Deep Equilibrium Optical Flow Estimation"
	// by Shaojie Bai, Zhengyang Geng, Yash Savani and J. Zico Kolter (CVPR
	// 2022; see CorrectionBackward): K − 1 iterates about evenly spaced over
	// the solve's iterations, then the returned z*. The states come from the
	// solver's Recorder (a solver.PointRecorder wrapping
	// ForwardSettings.Recorder, which still sees every point), so every
	// method that records its iterates qualifies: Picard, KM, Halpern,
	// GHAL, Anderson, Broyden, and VR-GHAL with its epoch points; a method
	// that records none makes Forward fail naming this field. Memory:
	// 2(K − 1) + 2 states, whatever the number of iterations. Zero means no
	// collection.
	CorrectionStates int

	// Dropout is the drop probability p ∈ [0, 1) of DEQ dropout, the
	// variational dropout that "Deep Equilibrium Models" by Shaojie Bai,
	// J. Zico Kolter and Vladlen Koltun (NeurIPS 2019) applies to the
	// fixed-point map: Forward draws one Bernoulli mask m per batch (each
	// entry of the state kept with probability 1 − p) and solves the fixed
	// point of f̃(z) = m ⊙ f(z, x)/(1 − p), the same mask at every solver
	// iteration, so that the fixed point is defined. Backward (adjoint,
	// Jacobian-free and phantom), JacobianRegularize and the correction
	// helpers differentiate the same masked map, with the Solution's mask.
	// The mask is drawn from ForwardSettings.Seed (set per batch by
	// SetSeeds), so a run is reproducible and each batch gets a fresh mask
	// when its seeds change. Layer.SetEvaluation(true) turns it off.
	//
	// A fixed mask makes f̃ a deterministic map, unlike the sampled oracle
	// of a stochastic cell, which redraws its terms at every call: the
	// oracle is an unbiased estimate of f whose fixed point is f's, while
	// f̃ is a different map with its own fixed point (f̃ is unbiased for f
	// only averaged over masks, and its fixed point is not the average of
	// the masked fixed points). Its Lipschitz bound is the cell's γ̄ scaled
	// by 1/(1 − p) in every ℓp norm (the mask's entries are 0 or 1/(1 − p);
	// in Schatten-p for p ≠ 2 masking entries gives no such bound), which
	// may exceed one: the contraction, the certificates' γ̄ and GHAL's
	// schedule are then lost, and the Lipschitz monitor compares ratios with
	// γ̄/(1 − p). Zero means no dropout.
	Dropout float64

	// CertifyFloat64, for a cell that computes in single precision and
	// evaluates its double-precision map f₆₄ too (layers.Referenced:
	// Conv and Dense with Precision layers.Float32), solves every forward
	// pass in two stages with Forward: first on the cell's float32 map,
	// then on f₆₄ from the point the first stage returned. The second
	// stage stops at its first certificate when that point already meets
	// the tolerance, which it does unless the tolerance is near float32
	// rounding (about 1e-7 relative) or the first stage stopped short of
	// it; otherwise it iterates on f₆₄ until it meets the tolerance or
	// its own limits. Solution.Result is then the second stage's, with
	// both stages' work in its Stats, and its Status, Certificate and the
	// method's guarantees are those of f₆₄: Solution.Proven is
	// ReferenceProven, and a contraction constant of Forward is checked
	// against the cell's bound as for a cell that proves it. Under a
	// relative tolerance the second stage keeps the first stage's
	// absolute one. The gradients stay those of the float32 map (the
	// backward pass and the adjoint solve use the cell's own evaluator).
	// For a cell in float64, whose reference map is its own, the solve
	// has one stage. New refuses CertifyFloat64 for a cell that is not a
	// layers.Referenced. False, the zero value, solves on the cell's own
	// map only.
	CertifyFloat64 bool

	// Split is the number of parts into which Forward and Backward split a
	// batch's examples, for a cell that can be forked (layers.Forker):
	// consecutive groups of examples, of sizes differing by at most one,
	// each solved on its own goroutine with an evaluator of its own (a
	// fork of the cell), so that a batch's solves use up to Split cores.
	// Each part is its own solve (and its own float64 stage, adjoint
	// solve and dropout mask slice): its method's iterations and stopping
	// are its own, so the iterates differ from those of one solve of the
	// whole batch, a batched method's (Anderson's, Broyden's) coupling
	// between examples is cut at the parts' boundaries, and every part
	// stops when its own examples meet the tolerance. The parts' results
	// are merged into one (see Solution.Parts): since a Batched norm is
	// the largest per-example norm, the merged certificate bounds the
	// whole batch's residual. The parameter gradients are then added in
	// part order; when the forks' evaluators are layers.SplitVJPer (the
	// float32 Dense cell's), their products are computed concurrently
	// first. A batch of fewer examples than Split is
	// split into one part per example. Zero and one mean one solve of the
	// whole batch. New refuses Split > 1 for a cell that is not a
	// layers.Forker, and with CorrectionStates, whose trajectory is one
	// solve's.
	Split int
}

// forwardProven reports whether the forward solve's map is proven
// Lipschitz in norm: the cell's own map, or with CertifyFloat64 its
// float64 reference.
func (c *Settings) forwardProven(cell layers.Cell, norm solver.Norm) bool {
	if r, ok := cell.(layers.Referenced); ok && c.CertifyFloat64 {
		return r.ReferenceProven(norm)
	}
	return cell.Proven(norm)
}

// withDefaults validates s against a cell of shape sh and returns a copy
// with defaults filled in and the norms cloned.
func (s *Settings) withDefaults(sh layers.Shape) (Settings, error) {
	var c Settings
	if s != nil {
		c = *s
	}
	switch {
	case !c.Backward.valid():
		return c, fmt.Errorf("deq: Settings.Backward = %v is not a backward mode", c.Backward)
	case !c.ForwardOracle.valid():
		return c, fmt.Errorf("deq: Settings.ForwardOracle = %v is not an oracle mode", c.ForwardOracle)
	case !c.AdjointOracle.valid():
		return c, fmt.Errorf("deq: Settings.AdjointOracle = %v is not an oracle mode", c.AdjointOracle)
	case c.PhantomSteps < 0:
		return c, fmt.Errorf("deq: Settings.PhantomSteps = %d must not be negative", c.PhantomSteps)
	case c.PhantomDamping < 0 || c.PhantomDamping > 1 || math.IsNaN(c.PhantomDamping):
		return c, fmt.Errorf("deq: Settings.PhantomDamping = %v outside (0, 1]", c.PhantomDamping)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return c, fmt.Errorf("deq: Settings.Dropout = %v outside [0, 1)", c.Dropout)
	case c.CorrectionStates < 0:
		return c, fmt.Errorf("deq: Settings.CorrectionStates = %d must not be negative", c.CorrectionStates)
	case !c.Monitor.valid():
		return c, fmt.Errorf("deq: Settings.Monitor = %v is not a monitor mode", c.Monitor)
	case c.Split < 0:
		return c, fmt.Errorf("deq: Settings.Split = %d must not be negative", c.Split)
	case c.Split > 1 && c.CorrectionStates > 0:
		return c, fmt.Errorf("deq: Settings.Split = %d: CorrectionStates = %d collects the trajectory of one solve, not of %d parts", c.Split, c.CorrectionStates, c.Split)
	}
	var err error
	if c.Norm, err = exampleNorm("Norm", c.Norm, sh); err != nil {
		return c, err
	}
	if c.AdjointNorm, err = exampleNorm("AdjointNorm", c.AdjointNorm, sh); err != nil {
		return c, err
	}
	for _, f := range []struct {
		name    string
		sampled bool
		norm    solver.Norm
	}{{"ForwardSettings", c.ForwardSettings.Certify.Sampled, c.Norm}, {"AdjointSettings", c.AdjointSettings.Certify.Sampled, c.AdjointNorm}} {
		if _, err := solver.SampledRule(f.norm); f.sampled && err != nil {
			return c, fmt.Errorf("deq: Settings.%s.Certify.Sampled: %w", f.name, err)
		}
	}
	if c.Backward == DefaultBackward {
		c.Backward = Implicit
	}
	if c.Forward == nil {
		c.Forward = solver.Picard{}
	}
	if c.Adjoint == nil {
		c.Adjoint = solver.Picard{}
	}
	c.PhantomSteps = cmp.Or(c.PhantomSteps, DefaultPhantomSteps)
	c.PhantomDamping = cmp.Or(c.PhantomDamping, DefaultPhantomDamping)
	return c, nil
}

// exampleNorm checks the per-example norm of Settings.field for a cell of
// shape sh and returns a clone of it, or ℓ2 when it is nil.
func exampleNorm(field string, n solver.Norm, sh layers.Shape) (solver.Norm, error) {
	if n == nil {
		return solver.NewLP(2, sh.HiddenLen())
	}
	if n.Len() != sh.HiddenLen() {
		return nil, fmt.Errorf("deq: Settings.%s = %v has length %d, want the cell's Rows·Hidden = %d", field, n, n.Len(), sh.HiddenLen())
	}
	if s, ok := n.(*solver.Schatten); ok {
		if r, c := s.Dims(); r != sh.Rows || c != sh.Hidden {
			return nil, fmt.Errorf("deq: Settings.%s = %v is on %d×%d matrices, want the cell's %d×%d", field, n, r, c, sh.Rows, sh.Hidden)
		}
	}
	return n.Clone(), nil
}
