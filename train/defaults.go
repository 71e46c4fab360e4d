package train

import (
	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// Defaults of the run where a Config field is zero: the training loop and
// evaluation.
const (
	DefaultEpochs        = 10
	DefaultBatchSize     = 128
	DefaultEvalBatchSize = 500
	DefaultMaxBadBatches = 10
)

// Defaults of the optimiser (Adam with gradient clipping) where a Config
// field is zero.
const (
	DefaultLR       = 1e-3
	DefaultClipNorm = 5.0
	DefaultBeta1    = 0.9
	DefaultBeta2    = 0.999
	DefaultAdamEps  = 1e-8
)

// Defaults of the model where a ModelConfig field is zero.
const (
	DefaultHidden      = 64
	DefaultUnitsPerDim = 4 // MeanField: Units = 4·Hidden
	DefaultTerms       = 8 // Experts: Terms = 8 experts
	DefaultGamma       = 0.9
)

// Defaults of the forward and adjoint solvers where a SolverConfig field is
// zero (see DefaultForward and DefaultBackwardSolver).
const (
	DefaultForwardTol   = 1e-3
	DefaultForwardIter  = 40
	DefaultBackwardTol  = 1e-3
	DefaultBackwardIter = 40
	DefaultDelta        = 0.05
)

// Defaults of the conv model (Model.Cell = ConvCell) where they differ from
// the others', chosen for 28×28 digit images (see DefaultsFor).
const (
	DefaultConvChannels     = 48
	DefaultConvEpochs       = 12
	DefaultConvBatchSize    = 64
	DefaultConvLR           = 2e-3
	DefaultConvForwardTol   = 1e-2
	DefaultConvForwardIter  = 30
	DefaultConvBackwardIter = 20
	// DefaultConvCertifyEvery is the conv cell's default ExactEvery: every
	// DefaultConvCertifyEvery-th projection enforces the Fourier bound on
	// the kernels' operator norms (layers.ConvConfig.CertifyEvery).
	DefaultConvCertifyEvery = 100
	// DefaultConvGroups is the conv model's default number of GroupNorm
	// groups (Model.Groups zero: the greatest common divisor of Channels and
	// DefaultConvGroups): on digit images the normalisation gains accuracy
	// that the unnormalised, provably Lipschitz cell does not reach.
	DefaultConvGroups = 8
	// DefaultConvShift is the conv model's default Augment.Shift: every
	// training image moves by up to one pixel in each direction, which
	// raised held-out accuracy on digits (see DataAugment for
	// Fashion-MNIST).
	DefaultConvShift = 1
	// DefaultConvEncoderLayers is the conv model's default
	// Model.EncoderLayers: the stride-2 convolution block, then two 3×3
	// stride-1 C→C blocks (layers.ConvEncoder). The stem does the local
	// feature work, and the fixed point converges in fewer solver
	// iterations at no lower accuracy.
	DefaultConvEncoderLayers = 3
	// DefaultConvPrecision is the conv model's default Model.Precision:
	// single-precision products in the cell and in the encoder's blocks
	// after the first, faster at the same solver work and accuracy. A cell
	// whose float64 map is proven (no GroupNorm, the projection, ℓ2 or
	// Schatten-2) has its forward and evaluation solves certified on that
	// map (Model.CertifiesFloat64), so the methods that need a proven
	// bound (NeedsProvenBound) run on it in float32. A run whose implicit
	// adjoint method needs one defaults to layers.Float64 instead: the
	// adjoint solve runs on the float32 map, which meets γ̄ only up to
	// rounding (layers.Precision).
	DefaultConvPrecision = layers.Float32
	// DefaultConvBackward is the conv model's default Backward.Mode: the
	// one-step Jacobian-free gradient (as TorchDEQ's default, a one-step
	// phantom gradient without damping), which skips the adjoint solve and
	// trains faster at the accuracy of implicit differentiation. The
	// descent direction is not the gradient; Backward.Mode deq.Implicit
	// restores it.
	DefaultConvBackward = deq.JacobianFree
)

// defaultMethod returns the default method of the forward and adjoint
// solves: Broyden's.
func defaultMethod() solver.MethodSpec { return method(solver.Broyden{}) }

// DefaultForward returns the forward solver used where Config.Forward's
// fields are zero: Broyden, DefaultForwardTol, DefaultForwardIter
// iterations, DefaultDelta.
func DefaultForward() SolverConfig {
	return SolverConfig{Method: defaultMethod(), Tol: DefaultForwardTol, MaxIter: DefaultForwardIter, MethodSettings: solver.MethodSettings{Delta: DefaultDelta}}
}

// DefaultBackwardSolver returns the adjoint solver used where
// Config.Backward.Solver's fields are zero: Broyden, DefaultBackwardTol
// (relative), DefaultBackwardIter iterations, DefaultDelta.
func DefaultBackwardSolver() SolverConfig {
	return SolverConfig{Method: defaultMethod(), Tol: DefaultBackwardTol, MaxIter: DefaultBackwardIter, MethodSettings: solver.MethodSettings{Delta: DefaultDelta}}
}

// DefaultsFor returns the defaults of a run with a cell of kind k: the
// fields that Config.Defaults fills in where they are zero and whose
// defaults depend on the cell (Epochs, BatchSize, LR, Forward,
// Backward.Mode, Backward.Solver and Augment). They are DefaultEpochs,
// DefaultBatchSize, DefaultLR, DefaultForward(), deq.Implicit,
// DefaultBackwardSolver() and no augmentation (for every cell), except for
// the conv cell: DefaultConvBackward (the one-step Jacobian-free gradient), DefaultConvEpochs,
// DefaultConvBatchSize, DefaultConvLR, Anderson acceleration forward (tol
// DefaultConvForwardTol, DefaultConvForwardIter iterations) and backward
// (DefaultConvBackwardIter iterations, for an implicit run), and
// translations of up to DefaultConvShift pixels. (The defaults of the model's fields are
// ModelConfig's; the conv cell's precision, DefaultConvPrecision, also
// depends on the solvers and the backward mode.) The conv
// defaults follow the convolutional DEQs of the literature on digit images
// (Anderson with a small iteration budget, batches of 64, Adam at 2e-3 with
// a cosine schedule); the forward tolerance is absolute in the per-example
// ℓ2 norm of a state with C·14·14 entries of order one, so 1e-2 is a
// relative accuracy of about 1e-4.
func DefaultsFor(k CellKind) Config {
	c := Config{
		Epochs: DefaultEpochs, BatchSize: DefaultBatchSize, LR: DefaultLR,
		Forward:  DefaultForward(),
		Backward: BackwardConfig{Mode: deq.Implicit, Solver: DefaultBackwardSolver()},
	}
	if k == ConvCell {
		anderson := method(solver.Anderson{})
		c.Epochs, c.BatchSize, c.LR = DefaultConvEpochs, DefaultConvBatchSize, DefaultConvLR
		c.Forward = SolverConfig{Method: anderson, Tol: DefaultConvForwardTol, MaxIter: DefaultConvForwardIter, MethodSettings: solver.MethodSettings{Delta: DefaultDelta}}
		c.Backward.Mode = DefaultConvBackward
		c.Backward.Solver = SolverConfig{Method: anderson, Tol: DefaultBackwardTol, MaxIter: DefaultConvBackwardIter, MethodSettings: solver.MethodSettings{Delta: DefaultDelta}}
		c.Augment.Shift = DefaultConvShift
	}
	return c
}

// DataAugment returns the augmentation of a run with a cell of kind k on
// the data set named name (datasets.Open's names): the cell's default
// (DefaultsFor), and for the conv cell on Fashion-MNIST its translations
// together with random mirroring (Flip), chosen on 10,000 training images
// held out from Fashion-MNIST's training set, where the two together
// validated above no augmentation (docs/results.md). Mirroring does not
// preserve digits and is off for every other data set. Config.Defaults
// does not apply it, since a Config does not name its data set; `deq
// train` does, for the settings whose flags are not given.
func DataAugment(k CellKind, name string) AugmentConfig {
	a := DefaultsFor(k).Augment
	if k == ConvCell && name == datasets.FashionMNIST {
		a.Flip = true
	}
	return a
}

// method returns the registry entry of m's type, which must exist.
func method(m solver.Method) solver.MethodSpec {
	r, err := solver.MethodSpecOf(m)
	if err != nil {
		panic(err)
	}
	return r
}
