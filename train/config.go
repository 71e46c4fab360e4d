package train

import (
	"fmt"
	"math"
	"strings"

	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// Default values used where a Config field is zero.
const (
	DefaultEpochs        = 10
	DefaultBatchSize     = 128
	DefaultLR            = 1e-3
	DefaultClipNorm      = 5.0
	DefaultMaxBadBatches = 10
	DefaultEvalBatchSize = 500
	DefaultHidden        = 64
	DefaultUnitsPerDim   = 4 // Wide: Units = 4·Hidden
	DefaultTerms         = 8 // Mixture
	DefaultGamma         = 0.9
	DefaultForwardTol    = 1e-3
	DefaultForwardIter   = 40
	DefaultBackwardTol   = 1e-3
	DefaultBackwardIter  = 40
	DefaultDelta         = 0.05
	DefaultBeta1         = 0.9
	DefaultBeta2         = 0.999
	DefaultAdamEps       = 1e-8
)

// Config configures a training run. The zero value of every field selects
// the documented default (Defaults returns the filled-in copy); negative,
// NaN and unknown values are errors naming the field.
//
// A Config is saved in every checkpoint, and Resume refuses a checkpoint
// whose run differs, so every field here is part of a run's identity: the
// same Config, data and build give the same metrics and checkpoint bytes.
type Config struct {
	// Seed seeds the initialisation, the per-epoch shuffles and every
	// solver draw (each batch's solves get seeds derived from Seed and the
	// batch's position).
	Seed uint64
	// Epochs is the number of passes over the training set. Zero means
	// DefaultEpochs.
	Epochs int
	// BatchSize is the number of images per training batch. Zero means
	// DefaultBatchSize. The last partial batch of an epoch is dropped (the
	// training graph has a fixed batch size); with shuffling, every image
	// is seen in most epochs.
	BatchSize int
	// EvalBatchSize is the number of test images per evaluation batch. Zero
	// means DefaultEvalBatchSize.
	EvalBatchSize int
	// Normalize standardises the pixels with statistics of the training set
	// (saved in the model): "global" (the default), "per-pixel" or "none".
	Normalize string

	// LR is the peak learning rate of Adam. Zero means DefaultLR.
	LR float64
	// Schedule is the learning-rate schedule over the run's optimiser
	// steps t = 0, …, T−1 (T = Epochs × batches per epoch):
	//
	//	"cosine" (the default)  LR·(1 + cos(πt/T))/2
	//	"step"                  LR, then LR/10 from epoch ⌊Epochs/2⌋ and LR/100 from ⌊3·Epochs/4⌋
	//	"constant"              LR
	Schedule string
	// WeightDecay is the decoupled weight decay of AdamW: every step first
	// shrinks each weight matrix (not the biases) by the factor
	// 1 − lr_t·WeightDecay. Zero means none.
	WeightDecay float64
	// ClipNorm clips the gradient by its global norm: when the Euclidean
	// norm of all parameter gradients together exceeds ClipNorm, they are
	// scaled down to it. Zero means DefaultClipNorm; a negative value
	// disables clipping.
	ClipNorm float64
	// Beta1, Beta2 and AdamEps are Adam's moment decays and denominator
	// offset. Zero means DefaultBeta1, DefaultBeta2 and DefaultAdamEps.
	Beta1, Beta2, AdamEps float64

	// MaxBadBatches is the number of consecutive skipped batches (see
	// Trainer) after which training stops with ErrTooManyBadBatches. Zero
	// means DefaultMaxBadBatches.
	MaxBadBatches int

	// Model describes the network.
	Model ModelConfig
	// Forward is the forward solver of training. Zero fields take the
	// values of DefaultForward().
	Forward SolverConfig
	// Backward is the backward mode and its solver.
	Backward BackwardConfig
	// Eval is the forward solver of evaluation. Zero fields take Forward's
	// values, except that a zero Tol means Forward.Tol/10 and a zero
	// MaxIter 2·Forward.MaxIter: evaluation solves more tightly.
	Eval SolverConfig
}

// ModelConfig describes an encoder → DEQ → readout classifier:
//
//	e  = relu(x·We + be)           (Encoder features)
//	z* = f(z*, e; θ)                (the cell, Hidden features)
//	logits = z*·Wr + br
//
// on images standardised as Config.Normalize says. Hidden states are
// vectors (Rows = 1).
type ModelConfig struct {
	// Cell is "dense" (the default, deterministic), "wide" (a stochastic
	// two-layer cell averaging Units hidden units) or "mixture" (a
	// stochastic cell averaging Terms terms, each reading
	// Encoder/Terms encoder features).
	Cell string
	// Hidden is the size of the hidden state. Zero means DefaultHidden.
	Hidden int
	// Encoder is the number of encoder features. Zero means Hidden (for
	// mixture, the multiple of Terms nearest above Hidden).
	Encoder int
	// Activation is the cell's activation, "relu" (the default) or "tanh".
	Activation string
	// Gamma is the Lipschitz bound γ̄ in z that the cell is projected onto
	// after every step. Zero means DefaultGamma. It must lie in (0, 1) for
	// the deterministic solvers to contract.
	Gamma float64
	// Norm is the per-example norm of the hidden state, as accepted by
	// solver.ParseNorm ("l2" (the default), "lp:P", "linf",
	// "schatten:P"). Residuals, tolerances and certificates are measured in
	// it, and the cell's Lipschitz constraint uses it (l2 for schatten:P,
	// which on vector states is the ℓ2 norm).
	Norm string
	// Units is the Wide cell's number of hidden units M. Zero means
	// DefaultUnitsPerDim·Hidden.
	Units int
	// Terms is the Mixture cell's number of terms M. Zero means
	// DefaultTerms.
	Terms int
	// ExactEvery makes every ExactEvery-th projection of an l2-constrained
	// dense or mixture cell compute the exact spectral norm (an SVD);
	// projections in between use power iteration. Zero means 1.
	ExactEvery int
}

// SolverConfig names a fixed-point method and its budget.
type SolverConfig struct {
	// Method is "picard", "km", "halpern", "ghal", "anderson", "broyden" or
	// "vrghal". The deterministic methods see the cell's exact operator;
	// vrghal sees the minibatch oracle of a stochastic cell (and the exact
	// operator, as a deterministic oracle, of the dense cell).
	Method string
	// Tol is the residual tolerance in the model's norm, for every example
	// of a batch. VR-GHAL stops when its estimated residual is at most
	// Tol/2, leaving the other half for the estimate's error. A batch
	// "meets the tolerance" when its certified bound is at most Tol.
	Tol float64
	// MaxIter limits iterations (epochs for VR-GHAL).
	MaxIter int
	// Delta is the failure probability of the residual certificate and of
	// VR-GHAL's run.
	Delta float64
	// SampleScale multiplies VR-GHAL's sample sizes (zero means 1, the
	// paper's constants).
	SampleScale float64
	// Memory is Anderson's or Broyden's memory (zero means the solver
	// package's default).
	Memory int
}

// DefaultForward returns the forward solver used where Config.Forward's
// fields are zero: Broyden, DefaultForwardTol, DefaultForwardIter
// iterations, DefaultDelta.
func DefaultForward() SolverConfig {
	return SolverConfig{Method: "broyden", Tol: DefaultForwardTol, MaxIter: DefaultForwardIter, Delta: DefaultDelta}
}

// DefaultBackwardSolver returns the adjoint solver used where
// Config.Backward.Solver's fields are zero: Broyden, DefaultBackwardTol
// (relative), DefaultBackwardIter iterations, DefaultDelta.
func DefaultBackwardSolver() SolverConfig {
	return SolverConfig{Method: "broyden", Tol: DefaultBackwardTol, MaxIter: DefaultBackwardIter, Delta: DefaultDelta}
}

// BackwardConfig selects how gradients pass through the fixed point.
type BackwardConfig struct {
	// Mode is "implicit" (the default: solve the adjoint fixed point with
	// Solver), "jacobian-free" or "phantom" (see deq.Backward).
	Mode string
	// Solver is the adjoint solver of implicit mode. Zero fields take the
	// values of DefaultBackwardSolver(). Its Tol is relative: the adjoint
	// solve stops when its residual is at most Tol times its residual at
	// the start point g = ∂L/∂z* (the cotangents of a mean loss are tiny,
	// so an absolute tolerance would stop at once). Its certificate is
	// skipped (the adjoint's status is still checked).
	Solver SolverConfig
	// PhantomSteps is the number of unrolled steps of phantom mode. Zero
	// means deq.DefaultPhantomSteps.
	PhantomSteps int
}

// Methods returns the accepted SolverConfig.Method names: the methods of
// the solver registry that are not stochastic baselines.
func Methods() []string {
	var out []string
	for _, m := range solver.Methods() {
		if !m.Baseline {
			out = append(out, m.Name)
		}
	}
	return out
}

// Cells returns the accepted ModelConfig.Cell names.
func Cells() []string { return []string{"dense", "wide", "mixture"} }

// BackwardModes returns the accepted BackwardConfig.Mode names.
func BackwardModes() []string { return []string{"implicit", "jacobian-free", "phantom"} }

// Schedules returns the accepted Config.Schedule names.
func Schedules() []string { return []string{"cosine", "step", "constant"} }

// Normalizations returns the accepted Config.Normalize names.
func Normalizations() []string { return []string{"global", "per-pixel", "none"} }

// Defaults validates c and returns a copy with every default filled in.
func (c Config) Defaults() (Config, error) {
	d := c
	switch {
	case c.Epochs < 0:
		return d, fieldErr("Epochs", c.Epochs, "must not be negative")
	case c.BatchSize < 0:
		return d, fieldErr("BatchSize", c.BatchSize, "must not be negative")
	case c.EvalBatchSize < 0:
		return d, fieldErr("EvalBatchSize", c.EvalBatchSize, "must not be negative")
	case c.LR < 0 || notFinite(c.LR):
		return d, fieldErr("LR", c.LR, "must be positive and finite")
	case c.WeightDecay < 0 || notFinite(c.WeightDecay):
		return d, fieldErr("WeightDecay", c.WeightDecay, "must be non-negative and finite")
	case notFinite(c.ClipNorm):
		return d, fieldErr("ClipNorm", c.ClipNorm, "must be finite (negative disables clipping)")
	case c.Beta1 < 0 || c.Beta1 >= 1 || math.IsNaN(c.Beta1):
		return d, fieldErr("Beta1", c.Beta1, "must lie in (0, 1)")
	case c.Beta2 < 0 || c.Beta2 >= 1 || math.IsNaN(c.Beta2):
		return d, fieldErr("Beta2", c.Beta2, "must lie in (0, 1)")
	case c.AdamEps < 0 || notFinite(c.AdamEps):
		return d, fieldErr("AdamEps", c.AdamEps, "must be positive and finite")
	case c.MaxBadBatches < 0:
		return d, fieldErr("MaxBadBatches", c.MaxBadBatches, "must not be negative")
	}
	d.Epochs = orInt(c.Epochs, DefaultEpochs)
	d.BatchSize = orInt(c.BatchSize, DefaultBatchSize)
	d.EvalBatchSize = orInt(c.EvalBatchSize, DefaultEvalBatchSize)
	d.LR = orFloat(c.LR, DefaultLR)
	d.ClipNorm = orFloat(c.ClipNorm, DefaultClipNorm)
	d.Beta1 = orFloat(c.Beta1, DefaultBeta1)
	d.Beta2 = orFloat(c.Beta2, DefaultBeta2)
	d.AdamEps = orFloat(c.AdamEps, DefaultAdamEps)
	d.MaxBadBatches = orInt(c.MaxBadBatches, DefaultMaxBadBatches)
	if d.Normalize == "" {
		d.Normalize = "global"
	}
	if err := oneOf("Normalize", d.Normalize, Normalizations()); err != nil {
		return d, err
	}
	if d.Schedule == "" {
		d.Schedule = "cosine"
	}
	if err := oneOf("Schedule", d.Schedule, Schedules()); err != nil {
		return d, err
	}
	var err error
	if d.Model, err = c.Model.defaults(); err != nil {
		return d, err
	}
	if d.Forward, err = c.Forward.merge("Forward", DefaultForward()); err != nil {
		return d, err
	}
	if d.Backward.Mode == "" {
		d.Backward.Mode = "implicit"
	}
	if err := oneOf("Backward.Mode", d.Backward.Mode, BackwardModes()); err != nil {
		return d, err
	}
	if c.Backward.PhantomSteps < 0 {
		return d, fieldErr("Backward.PhantomSteps", c.Backward.PhantomSteps, "must not be negative")
	}
	d.Backward.PhantomSteps = orInt(c.Backward.PhantomSteps, deq.DefaultPhantomSteps)
	if d.Backward.Solver, err = c.Backward.Solver.merge("Backward.Solver", DefaultBackwardSolver()); err != nil {
		return d, err
	}
	evalBase := d.Forward
	evalBase.Tol /= 10
	evalBase.MaxIter *= 2
	if d.Eval, err = c.Eval.merge("Eval", evalBase); err != nil {
		return d, err
	}
	return d, nil
}

func (m ModelConfig) defaults() (ModelConfig, error) {
	d := m
	switch {
	case m.Hidden < 0:
		return d, fieldErr("Model.Hidden", m.Hidden, "must not be negative")
	case m.Encoder < 0:
		return d, fieldErr("Model.Encoder", m.Encoder, "must not be negative")
	case m.Gamma < 0 || m.Gamma >= 1 || math.IsNaN(m.Gamma):
		return d, fieldErr("Model.Gamma", m.Gamma, "must lie in (0, 1)")
	case m.Units < 0:
		return d, fieldErr("Model.Units", m.Units, "must not be negative")
	case m.Terms < 0:
		return d, fieldErr("Model.Terms", m.Terms, "must not be negative")
	case m.ExactEvery < 0:
		return d, fieldErr("Model.ExactEvery", m.ExactEvery, "must not be negative")
	}
	if d.Cell == "" {
		d.Cell = "dense"
	}
	if err := oneOf("Model.Cell", d.Cell, Cells()); err != nil {
		return d, err
	}
	if d.Activation == "" {
		d.Activation = "relu"
	}
	if _, err := layers.ParseActivation(d.Activation); err != nil {
		return d, fmt.Errorf("train: Config.Model.Activation: %w", err)
	}
	if d.Norm == "" {
		d.Norm = "l2"
	}
	if _, err := solver.ParseNorm(d.Norm, 1, 1); err != nil {
		return d, fmt.Errorf("train: Config.Model.Norm: %w", err)
	}
	d.Hidden = orInt(m.Hidden, DefaultHidden)
	d.Gamma = orFloat(m.Gamma, DefaultGamma)
	d.ExactEvery = orInt(m.ExactEvery, 1)
	switch d.Cell {
	case "wide":
		d.Units = orInt(m.Units, DefaultUnitsPerDim*d.Hidden)
		d.Terms = 0
		d.Encoder = orInt(m.Encoder, d.Hidden)
	case "mixture":
		d.Terms = orInt(m.Terms, DefaultTerms)
		d.Units = 0
		if d.Encoder == 0 {
			d.Encoder = (d.Hidden + d.Terms - 1) / d.Terms * d.Terms
		}
		if d.Encoder%d.Terms != 0 {
			return d, fmt.Errorf("train: Config.Model.Encoder = %d is not a multiple of Terms = %d", d.Encoder, d.Terms)
		}
	default:
		d.Units, d.Terms = 0, 0
		d.Encoder = orInt(m.Encoder, d.Hidden)
	}
	return d, nil
}

// merge validates s and fills its zero fields from base.
func (s SolverConfig) merge(field string, base SolverConfig) (SolverConfig, error) {
	switch {
	case s.Tol < 0 || notFinite(s.Tol):
		return s, fieldErr(field+".Tol", s.Tol, "must be positive and finite")
	case s.MaxIter < 0:
		return s, fieldErr(field+".MaxIter", s.MaxIter, "must not be negative")
	case s.Delta < 0 || s.Delta >= 1 || math.IsNaN(s.Delta):
		return s, fieldErr(field+".Delta", s.Delta, "must lie in (0, 1)")
	case s.SampleScale < 0 || notFinite(s.SampleScale):
		return s, fieldErr(field+".SampleScale", s.SampleScale, "must be positive and finite")
	case s.Memory < 0:
		return s, fieldErr(field+".Memory", s.Memory, "must not be negative")
	}
	d := s
	if d.Method == "" {
		d.Method = base.Method
	}
	if err := oneOf(field+".Method", d.Method, Methods()); err != nil {
		return d, err
	}
	d.Tol = orFloat(s.Tol, base.Tol)
	d.MaxIter = orInt(s.MaxIter, base.MaxIter)
	d.Delta = orFloat(s.Delta, base.Delta)
	d.SampleScale = orFloat(s.SampleScale, base.SampleScale)
	d.Memory = orInt(s.Memory, base.Memory)
	return d, nil
}

// method builds the solver.Method of s for a cell with Lipschitz bound
// gamma.
func (s SolverConfig) method(gamma float64) solver.Method {
	return s.entry().New(solver.MethodOptions{Gamma: gamma, Delta: s.Delta, SampleScale: s.SampleScale, Memory: s.Memory})
}

// entry returns the registry entry of s.Method.
func (s SolverConfig) entry() solver.MethodInfo {
	m, err := solver.LookupMethod(s.Method)
	if err != nil {
		panic("train: " + err.Error()) // merge validated the name
	}
	return m
}

// settings returns the solver.Settings of s; relative makes Tol relative
// to the first residual.
func (s SolverConfig) settings(skipCert, relative bool) solver.Settings {
	return solver.Settings{
		Tol:      s.Tol,
		Relative: relative,
		MaxIter:  s.MaxIter,
		Certify:  solver.CertifySettings{Skip: skipCert, Delta: s.Delta},
	}
}

func fieldErr(field string, v any, why string) error {
	return fmt.Errorf("train: Config.%s = %v %s", field, v, why)
}

func oneOf(field, v string, allowed []string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("train: Config.%s = %q is not one of %s", field, v, strings.Join(allowed, ", "))
}

func notFinite(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orFloat(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}
