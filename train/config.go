package train

import (
	"cmp"
	"encoding"
	"fmt"
	"math"
	"reflect"

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
	DefaultUnitsPerDim   = 4 // MeanField: Units = 4·Hidden
	DefaultTerms         = 8 // Experts: Terms = 8 experts
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
	// DefaultConvGroups). On digit images the normalisation is worth about
	// three points of test accuracy over the unnormalised, provably
	// Lipschitz cell, which its certificate does not buy back: an
	// unnormalised conv DEQ at γ̄ = 0.9 or 0.99 stays near the level of a
	// dense DEQ, in PyTorch as here.
	DefaultConvGroups = 8
	// DefaultConvShift is the conv model's default Augment.Shift: every
	// training image moves by up to one pixel in each direction. On
	// mnist-10k, screened on 1,000 held-out training images over the
	// default 12 epochs, it raised validation accuracy from 97.9% to 98.7%
	// while every validation solve met its tolerance (and at least 96.3%
	// of the forward solves of epochs 6–12, against 91.7% without)
	// (two pixels raised accuracy too, but late in training the forward
	// solves then hit their iteration cap; README, "Conv DEQ on real
	// digits"). On Fashion-MNIST it cost 0.7 points of test accuracy over
	// four epochs (90.23% against 90.94%), so `deq train` leaves it off
	// there unless --shift is given.
	DefaultConvShift = 1
	// DefaultConvEncoderLayers is the conv model's default
	// Model.EncoderLayers: the stride-2 convolution block, then two 3×3
	// stride-1 C→C blocks (layers.ConvEncoder). On mnist-10k, screened on
	// 1,000 held-out training images over the default 12 epochs (single
	// precision, seeds 1 and 2), it halved the DEQ layer's solver work —
	// 9.8 forward Anderson iterations per batch at epoch 12 of seed 1
	// against 24.2 with the single block — at a validation accuracy no
	// lower (README, "Conv DEQ on real digits"): the stem does the local
	// feature work, and the fixed point converges in fewer steps. On
	// Fashion-MNIST (measured after the choice, one seed, four epochs,
	// single precision) it reached 92.21% test against 90.94% with one
	// block, every solve within tolerance.
	DefaultConvEncoderLayers = 3
	// DefaultConvPrecision is the conv model's default Model.Precision:
	// single-precision products in the cell and in the encoder's blocks
	// after the first. On an idle machine one training epoch of mnist-10k
	// at the conv defaults without translations (`deq train --data
	// mnist-10k --cell conv --epochs 1 --shift 0 [--precision float32]
	// --json`, the three-block encoder) took 65.9 s in float32 against
	// 85.8 s in float64 (1.3×), with the same solver work (10.1 and 10.2
	// forward, 7.3 backward iterations per batch) and test accuracy
	// (95.95% and 96.05%, two of 2,000 test images apart; README, "Conv DEQ
	// on real digits"). A conv run whose forward, adjoint or evaluation
	// method needs a proven Lipschitz bound (Method.NeedsProvenBound) and
	// whose cell would prove it in float64 (no GroupNorm, the projection,
	// ℓ2 or Schatten-2) defaults to Float64 instead: float32 products meet
	// γ̄ only up to rounding, so the cell's bound is not proven
	// (layers.Precision).
	DefaultConvPrecision = Float32
	// DefaultConvBackward is the conv model's default Backward.Mode: the
	// one-step Jacobian-free gradient (as TorchDEQ's default, a one-step
	// phantom gradient without damping), which skips the adjoint solve.
	// Screened on 1,000 held-out training digits of mnist-10k over the
	// 12-epoch default schedule (`deq train --data mnist-10k --cell conv
	// --val 1000 --seed S --backward jacobian-free`, seeds 1 and 2) it
	// validated at 99.1% and 98.8% against 98.9% and 98.8% with implicit
	// differentiation, every forward solve within tolerance, and one
	// training epoch without translations took 32.2 s against 52.8 s on
	// an idle machine (1.64×; 1.50× between the fastest epochs of a peer
	// bench run; README, "Conv DEQ on real digits"). The descent direction is not
	// the gradient; Backward.Mode Implicit restores it.
	DefaultConvBackward = JacobianFree
)

// Config configures a training run. The zero value of every field selects
// the documented default (Defaults returns the filled-in copy); negative,
// NaN and unknown values are errors naming the field (*FieldError).
//
// The enumerations are typed values; their text forms (the names of their
// Parse functions) are the JSON form of a Config in checkpoints and
// metrics.
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
	// DefaultEpochs (DefaultConvEpochs for the conv cell; see DefaultsFor).
	Epochs int
	// BatchSize is the number of images per training batch. Zero means
	// DefaultBatchSize (DefaultConvBatchSize for the conv cell). The last
	// partial batch of an epoch is dropped (training batches have a fixed
	// size); with shuffling, every image is seen in most epochs.
	BatchSize int
	// EvalBatchSize is the number of test images per evaluation batch. Zero
	// means DefaultEvalBatchSize.
	EvalBatchSize int
	// Normalize standardises the pixels with statistics of the training set
	// (saved in the model); the zero value is NormalizeGlobal.
	Normalize Normalization

	// LR is the peak learning rate of Adam. Zero means DefaultLR
	// (DefaultConvLR for the conv cell).
	LR float64
	// Schedule is the learning-rate schedule over the run's optimiser
	// steps t = 0, …, T−1 (T = Epochs × batches per epoch):
	//
	//	Cosine (the zero value)  LR·(1 + cos(πt/T))/2
	//	Step                     LR, then LR/10 from epoch ⌊Epochs/2⌋ and LR/100 from ⌊3·Epochs/4⌋
	//	Constant                 LR
	Schedule Schedule
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
	// values of DefaultForward() (DefaultsFor(ConvCell).Forward for the
	// conv cell).
	Forward SolverConfig
	// Backward is the backward mode and its solver.
	Backward BackwardConfig
	// Eval is the forward solver of evaluation. Zero fields take Forward's
	// values, except that a zero Tol means Forward.Tol/10 and a zero
	// MaxIter 2·Forward.MaxIter: evaluation solves more tightly.
	Eval SolverConfig

	// Aids are the training aids of the DEQ literature (Jacobian
	// regularisation, fixed-point correction, DEQ dropout). The zero value
	// uses none of them.
	Aids AidsConfig `json:",omitzero"`

	// Augment is the data augmentation of the training batches (never of
	// the test set). Its zero value takes the cell's default,
	// DefaultsFor(Model.Cell).Augment: translations of up to
	// DefaultConvShift pixels for the conv cell, none for the others, and
	// no rotation or scaling for any cell.
	Augment AugmentConfig `json:",omitzero"`
}

// AugmentConfig configures the data augmentation of the training batches
// (see Config.Augment).
type AugmentConfig struct {
	// Shift is the largest random translation, in pixels, of a training
	// image: before standardisation every image of every training batch is
	// moved by an offset (dy, dx) drawn uniformly from [−Shift, Shift]²,
	// zero filling the pixels moved in (datasets.Shifter), with offsets
	// drawn from a stream of Config.Seed and the batch's position, so that
	// runs and resumed runs repeat. Zero means the cell's default; a
	// negative value means none (stored as −1 where the cell's default is
	// a shift, as 0 otherwise). It must be less than the images' side.
	Shift int `json:",omitempty"`
	// Rotate is the largest random rotation, in degrees, of a training
	// image, and Scale the largest random relative change of its size:
	// before standardisation, and before its translation, every image of
	// every training batch is rotated about its centre by an angle drawn
	// uniformly from [−Rotate, Rotate] and scaled by a factor drawn
	// uniformly from [1 − Scale, 1 + Scale], by bilinear interpolation
	// with zero fill (datasets.Warper), the draws from their own stream of
	// Config.Seed and the batch's position, so that runs and resumed runs
	// repeat. Zero means none, for every cell: no cell has a default
	// rotation or scaling, and unlike Shift there is no negative spelling
	// (a negative value is refused). Rotate must be less than 180 and
	// Scale less than 1.
	Rotate float64 `json:",omitempty"`
	// Scale is the largest random relative change of scale of a training
	// image (see Rotate).
	Scale float64 `json:",omitempty"`
}

// defaults fills the defaults of a from the cell's, base (the shift's
// bound by the image size is checked by New).
func (a AugmentConfig) defaults(base AugmentConfig) AugmentConfig {
	d := a
	d.Shift = cmp.Or(a.Shift, base.Shift)
	if d.Shift < 0 {
		d.Shift = 0
		if base.Shift > 0 {
			d.Shift = -1
		}
	}
	return d
}

// DefaultCorrectionGamma is the decay γ of fixed-point correction where
// AidsConfig.CorrectionGamma is zero (TorchDEQ's default).
const DefaultCorrectionGamma = 0.8

// AidsConfig configures the training aids of the DEQ literature that the
// training step composes with the main loss (see Trainer, "Training
// aids"). The zero value of every field turns its aid off; a checkpoint
// written before these fields existed loads as a run without aids.
type AidsConfig struct {
	// JacWeight is the weight w of the Jacobian regularisation of
	// "Stabilizing Equilibrium Models by Jacobian Regularization" by
	// Shaojie Bai, Vladlen Koltun and J. Zico Kolter (ICML 2021): every
	// JacFreq-th step adds w·R to the loss, R the one-probe Hutchinson
	// estimate of the mean over examples of ‖∂f/∂z‖_F² at z*
	// (deq.Layer.JacobianRegularize), with its exact gradient. Zero means
	// none. Only cells with a fused Jacobian penalty support it (dense);
	// the others are refused with a *FieldError naming this field.
	JacWeight float64 `json:",omitempty"`
	// JacFreq applies the Jacobian regularisation at every JacFreq-th
	// optimiser step (steps 0, JacFreq, 2·JacFreq, …). Zero means 1 when
	// JacWeight is positive; it must be zero otherwise.
	JacFreq int `json:",omitempty"`
	// CorrectionStates is the number K of states z_k of the forward
	// solver's trajectory (the last being z*) at which fixed-point
	// correction, from "Deep Equilibrium Optical Flow Estimation" by
	// Shaojie Bai, Zhengyang Geng, Yash Savani and J. Zico Kolter (CVPR
	// 2022), applies the readout's loss to f(z_k, x), with weights
	// γ^(K−1−k) normalised to sum to one, and passes its gradient through
	// the one-step path (each z_k held constant). Zero means none.
	CorrectionStates int `json:",omitempty"`
	// CorrectionGamma is the decay γ ∈ (0, 1] of the correction weights.
	// Zero means DefaultCorrectionGamma when CorrectionStates is positive;
	// it must be zero otherwise.
	CorrectionGamma float64 `json:",omitempty"`
	// Dropout is the probability p ∈ [0, 1) of DEQ dropout
	// (deq.Settings.Dropout), the variational dropout of "Deep Equilibrium
	// Models" by Shaojie Bai, J. Zico Kolter and Vladlen Koltun (NeurIPS
	// 2019): one mask per training batch, drawn from the batch's forward
	// seed (redrawn for every batch), fixed across the solver's iterations
	// so that the fixed point is defined, off in evaluation. A fixed mask
	// is a deterministic map with its own fixed point, unlike the sampled
	// oracle of a stochastic cell, which redraws its terms at every call
	// and is unbiased for the exact operator. The mask scales γ̄ by
	// 1/(1 − p); GHAL and VR-GHAL are refused in training, naming this
	// field, when that exceeds one. Zero means none.
	Dropout float64 `json:",omitempty"`
}

// defaults validates a and fills its defaults.
func (a AidsConfig) defaults() (AidsConfig, error) {
	d := a
	switch {
	case a.JacWeight < 0 || notFinite(a.JacWeight):
		return d, fieldErr("Aids.JacWeight", a.JacWeight, "must be non-negative and finite")
	case a.JacFreq < 0:
		return d, fieldErr("Aids.JacFreq", a.JacFreq, "must not be negative")
	case a.JacFreq > 0 && a.JacWeight == 0:
		return d, fieldErr("Aids.JacFreq", a.JacFreq, "applies only with a positive Aids.JacWeight")
	case a.CorrectionStates < 0:
		return d, fieldErr("Aids.CorrectionStates", a.CorrectionStates, "must not be negative")
	case a.CorrectionGamma < 0 || a.CorrectionGamma > 1 || math.IsNaN(a.CorrectionGamma):
		return d, fieldErr("Aids.CorrectionGamma", a.CorrectionGamma, "must lie in (0, 1]")
	case a.CorrectionGamma > 0 && a.CorrectionStates == 0:
		return d, fieldErr("Aids.CorrectionGamma", a.CorrectionGamma, "applies only with a positive Aids.CorrectionStates")
	case a.Dropout < 0 || a.Dropout >= 1 || math.IsNaN(a.Dropout):
		return d, fieldErr("Aids.Dropout", a.Dropout, "must lie in [0, 1)")
	}
	if a.JacWeight > 0 {
		d.JacFreq = cmp.Or(a.JacFreq, 1)
	}
	if a.CorrectionStates > 0 {
		d.CorrectionGamma = cmp.Or(a.CorrectionGamma, DefaultCorrectionGamma)
	}
	return d, nil
}

// ModelConfig describes an encoder → DEQ → readout classifier:
//
//	e  = relu(x·We + be)           (Encoder features)
//	z* = f(z*, e; θ)                (the cell, Hidden features)
//	logits = z*·Wr + br
//
// on images standardised as Config.Normalize says. Hidden states are
// vectors (Rows = 1), except for the conv model:
//
//	h₁ = N₁(We₁∗x + be₁)            (stride 2: C×⌈H/2⌉×⌈W/2⌉)
//	h_k = N_k(We_k∗relu(h_{k−1}) + be_k), k = 2, …, L  (3×3, stride 1)
//	e  = h_L                        (layers.ConvEncoder, L = EncoderLayers)
//	z* = f(z*, e; θ)                (layers.Conv, the same shape)
//	logits = pool(z*)·Wr + br       (2×2 average pooling)
//
// whose states are C×(H'·W') matrices; N_k is block k's GroupNorm of
// Groups (by default), or without it relu (and the relu between blocks is
// then that relu alone), the cell is N(relu(W∗z + e + b)) or
// relu(W∗z + e + b), and L is DefaultConvEncoderLayers by default (1 gives the
// single stride-2 block).
type ModelConfig struct {
	// Cell is DenseCell (the zero value, deterministic), MeanFieldCell (a
	// stochastic cell: the injection of the encoder's features plus the
	// mean-field average of Units hidden units), ExpertsCell (the
	// injection plus the average of Terms dense experts) or ConvCell.
	Cell CellKind
	// Hidden is the size of the hidden state. Zero means DefaultHidden.
	Hidden int
	// Encoder is the number of encoder features. Zero means Hidden.
	Encoder int
	// Activation is the cell's activation; the zero value is layers.ReLU.
	Activation layers.Activation
	// Gamma is the Lipschitz bound γ̄ in z that the cell is projected onto
	// after every step. Zero means DefaultGamma. It must lie in (0, 1) for
	// the deterministic solvers to contract.
	Gamma float64
	// Norm is the per-example norm of the hidden state; the zero value is
	// ℓ2. Residuals, tolerances and certificates are measured in it, and
	// the cell's Lipschitz constraint is layers.ConstraintFor it (ℓ2 for
	// Schatten-p, which on vector states is the ℓ2 norm).
	Norm NormSpec
	// Units is the MeanField cell's number of hidden units M. Zero means
	// DefaultUnitsPerDim·Hidden.
	Units int
	// Terms is the Experts cell's number of experts M (its terms). Zero
	// means DefaultTerms. (The name is the one checkpoints have always
	// stored, so that they keep loading.)
	Terms int
	// ExactEvery makes every ExactEvery-th projection of an l2-constrained
	// dense or experts cell compute the exact spectral norm (an SVD);
	// projections in between use power iteration. Zero means 1. For the
	// conv cell it is layers.ConvConfig.CertifyEvery: every ExactEvery-th
	// projection also enforces the Fourier upper bound on the kernels'
	// operator norms; zero means DefaultConvCertifyEvery.
	ExactEvery int

	// Channels is the conv model's number of channels C: the encoder maps
	// an H×W image to C×⌈H/2⌉×⌈W/2⌉ features (a 3×3 convolution of stride
	// 2), the cell's state has that shape, and the readout averages it over
	// 2×2 blocks before its linear map. Zero means DefaultConvChannels.
	// Only for ConvCell (whose Hidden and Encoder must be zero: the state
	// has C·⌈H/2⌉·⌈W/2⌉ entries).
	Channels int `json:",omitempty"`
	// Groups is the number of GroupNorm groups (dividing Channels) of the
	// conv model's encoder and cell; the cell's Lipschitz bound is then not
	// proven (see layers.Conv), and the stochastic solver refuses it. Zero
	// means gcd(Channels, DefaultConvGroups); a negative value means no
	// GroupNorm (stored as −1): the cell σ(W∗z + u + b) whose bound γ̄ is
	// proven in ℓ2. Only for ConvCell.
	Groups int `json:",omitempty"`
	// Kernels is the conv cell's number of kernels M it averages: M > 1
	// makes the cell stochastic (its oracle samples kernels). Zero means 1,
	// the deterministic cell. Only for ConvCell.
	Kernels int `json:",omitempty"`
	// EncoderLayers is the number of convolution blocks of the conv
	// model's encoder (layers.ConvEncoderConfig.Layers): the stride-2
	// convolution, then EncoderLayers − 1 3×3 C→C convolutions of stride 1
	// at the downsampled size, each but the last followed by the GroupNorm
	// and a ReLU (relu without groups), the last by the GroupNorm (relu).
	// Zero means DefaultConvEncoderLayers; 1 is the single stride-2
	// convolution, the default before DefaultConvEncoderLayers (a
	// checkpoint written then stores 0 for it, which Load reads as 1). The encoder
	// lies outside the DEQ layer: the cell, its solves and their
	// certificates are the same either way. Only for ConvCell.
	EncoderLayers int `json:",omitempty"`
	// Normalization is how the dense or conv cell keeps its recurrent
	// weight in check (layers.DenseConfig.Normalization,
	// layers.ConvConfig.Normalization): the zero value
	// layers.Projection projects it onto the bound Gamma after every step;
	// layers.WeightNorm (after "Weight Normalization: A Simple
	// Reparameterization to Accelerate Training of Deep Neural Networks"
	// by Tim Salimans and Diederik P. Kingma) trains a direction and a
	// learnable norm per unit and bounds nothing: the cell's Gamma is +Inf,
	// no contraction is proven, and the solvers that need a bound γ̄ (GHAL
	// and VR-GHAL) are refused naming this field; layers.SpectralNorm
	// (after "Spectral Normalization for Generative Adversarial Networks" by
	// Takeru Miyato, Toshiki Kataoka, Masanori Koyama and Yuichi Yoshida)
	// divides by the exact largest singular value and keeps the proven
	// bound Gamma in ℓ2. The dense cell offers both alternatives, the conv
	// cell layers.WeightNorm (per output channel, as TorchDEQ's
	// convolutional DEQs use it); the others only the projection.
	Normalization layers.Normalization `json:",omitzero"`
	// Precision is the precision of the dense or conv cell's matrix
	// products (layers.DenseConfig.Precision, layers.ConvConfig.Precision):
	// Float64, or Float32, single-precision products (a different map,
	// within float32 rounding, whose Lipschitz bound is not proven; see
	// layers.Precision). Float32 only for DenseCell and ConvCell. The zero
	// value, DefaultPrecision, selects the cell's default, which Defaults
	// stores explicitly: DefaultConvPrecision (Float32) for ConvCell,
	// except that a conv run whose Forward, Eval or (in implicit mode)
	// Backward.Solver method needs a proven Lipschitz bound
	// (Method.NeedsProvenBound: GHAL, VR-GHAL, growing-batch) takes
	// Float64 when float64 products would prove it (Groups < 0, the
	// projection, Norm ℓ2 or Schatten-2; with GroupNorm or weight
	// normalisation nothing is proven in either precision, and the
	// default stays Float32); Float64 for the other cells. An explicit Float32 is kept
	// with any method (the stochastic ones then refuse the conv cell, as
	// they refuse any conv cell whose bound is not proven; see New).
	// Checkpoints written before the Precision type omit Float64 (then
	// the zero value, for every cell), which Load reads as Float64.
	//
	// For ConvCell with EncoderLayers > 1 it is also the precision of the
	// encoder's blocks after the first (layers.ConvEncoderConfig.Precision);
	// the code of the release before DefaultConvEncoderLayers computed
	// those blocks in float64 whatever Precision said, so a float32
	// checkpoint of a deeper encoder written then resumes with them in
	// float32: a different map, within float32 rounding, not the exact
	// continuation.
	Precision Precision `json:",omitzero"`
	// ReadoutHidden, if positive, puts a hidden layer of ReadoutHidden
	// ReLU units between the fixed point's features (z*, or for the conv
	// model z* pooled over 2×2 blocks) and the logits: logits =
	// relu(h·W₁ + b₁)·W₂ + b₂ instead of h·W + b. Zero means none, the
	// linear readout. It lies outside the DEQ layer: the cell, its
	// solves and their certificates are the same either way.
	ReadoutHidden int `json:",omitempty"`
}

// SolverConfig names a fixed-point method and its budget.
type SolverConfig struct {
	// Method is a method of the solver registry (see Methods). The
	// deterministic methods see the cell's exact operator; the stochastic
	// one (VR-GHAL) sees the minibatch oracle of a stochastic cell (and the
	// exact operator, as a deterministic oracle, of the dense cell).
	Method Method
	// Tol is the residual tolerance in the model's norm, for every example
	// of a batch, absolute unless Relative: a solve succeeds when a proven
	// bound on its residual is at most Tol (see solver.Status). A batch
	// "meets the tolerance" when its certificate's bound is at most Tol.
	Tol float64
	// MaxIter limits iterations (epochs for VR-GHAL).
	MaxIter int
	// Delta is the failure probability of the residual certificate and of
	// VR-GHAL's run.
	Delta float64
	// CertDelta, when positive, certifies the solves of a stochastic cell
	// that declares its term bounds (the meanfield cell) from a sample of
	// the cell's terms, with probability at least 1 − CertDelta, whenever
	// that is cheaper than the exact pass (solver.CertifySettings.Sampled;
	// the methods that certify their own stops use it too). Zero, the
	// default, keeps exact certificates at probability one.
	CertDelta float64 `json:",omitempty"`
	// SampleScale multiplies VR-GHAL's sample sizes (zero means 1, the
	// paper's constants).
	SampleScale float64
	// Memory is Anderson's or Broyden's memory (zero means the solver
	// package's default).
	Memory int
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

// defaultMethod returns the default method of the forward and adjoint
// solves: Broyden's.
func defaultMethod() Method { return method(solver.Broyden{}) }

// DefaultForward returns the forward solver used where Config.Forward's
// fields are zero: Broyden, DefaultForwardTol, DefaultForwardIter
// iterations, DefaultDelta.
func DefaultForward() SolverConfig {
	return SolverConfig{Method: defaultMethod(), Tol: DefaultForwardTol, MaxIter: DefaultForwardIter, Delta: DefaultDelta}
}

// DefaultBackwardSolver returns the adjoint solver used where
// Config.Backward.Solver's fields are zero: Broyden, DefaultBackwardTol
// (relative), DefaultBackwardIter iterations, DefaultDelta.
func DefaultBackwardSolver() SolverConfig {
	return SolverConfig{Method: defaultMethod(), Tol: DefaultBackwardTol, MaxIter: DefaultBackwardIter, Delta: DefaultDelta}
}

// BackwardConfig selects how gradients pass through the fixed point.
type BackwardConfig struct {
	// Mode is the backward mode. The zero value, DefaultBackward, selects
	// DefaultConvBackward (JacobianFree: one VJP, no adjoint solve) for the
	// conv cell and Implicit (solve the adjoint fixed point with Solver)
	// for the others.
	Mode BackwardMode
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

// Defaults validates c and returns a copy with every default filled in.
// Its errors are *FieldError.
func (c Config) Defaults() (Config, error) {
	d := c
	if err := nonNegative(intField{"Epochs", c.Epochs}, intField{"BatchSize", c.BatchSize}, intField{"EvalBatchSize", c.EvalBatchSize},
		intField{"MaxBadBatches", c.MaxBadBatches}, intField{"Backward.PhantomSteps", c.Backward.PhantomSteps}); err != nil {
		return d, err
	}
	switch {
	case !c.Normalize.valid():
		return d, fieldErr("Normalize", c.Normalize, "is not a normalisation")
	case c.LR < 0 || notFinite(c.LR):
		return d, fieldErr("LR", c.LR, "must be positive and finite")
	case !c.Schedule.valid():
		return d, fieldErr("Schedule", c.Schedule, "is not a schedule")
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
	case !c.Backward.Mode.valid():
		return d, fieldErr("Backward.Mode", c.Backward.Mode, "is not a backward mode")
	}
	if !c.Model.Cell.valid() {
		return d, fieldErr("Model.Cell", c.Model.Cell, "is not a cell kind")
	}
	base := DefaultsFor(c.Model.Cell)
	d.Epochs = cmp.Or(c.Epochs, base.Epochs)
	d.BatchSize = cmp.Or(c.BatchSize, base.BatchSize)
	d.EvalBatchSize = cmp.Or(c.EvalBatchSize, DefaultEvalBatchSize)
	d.LR = cmp.Or(c.LR, base.LR)
	d.ClipNorm = cmp.Or(c.ClipNorm, DefaultClipNorm)
	d.Beta1 = cmp.Or(c.Beta1, DefaultBeta1)
	d.Beta2 = cmp.Or(c.Beta2, DefaultBeta2)
	d.AdamEps = cmp.Or(c.AdamEps, DefaultAdamEps)
	d.MaxBadBatches = cmp.Or(c.MaxBadBatches, DefaultMaxBadBatches)
	var err error
	if d.Model, err = c.Model.defaults(); err != nil {
		return d, err
	}
	if d.Forward, err = c.Forward.merge("Forward", base.Forward); err != nil {
		return d, err
	}
	d.Backward.Mode = cmp.Or(c.Backward.Mode, base.Backward.Mode)
	d.Backward.PhantomSteps = cmp.Or(c.Backward.PhantomSteps, deq.DefaultPhantomSteps)
	if d.Backward.Solver, err = c.Backward.Solver.merge("Backward.Solver", base.Backward.Solver); err != nil {
		return d, err
	}
	if d.Aids, err = c.Aids.defaults(); err != nil {
		return d, err
	}
	d.Augment = c.Augment.defaults(base.Augment)
	evalBase := d.Forward
	evalBase.Tol /= 10
	evalBase.MaxIter *= 2
	if d.Eval, err = c.Eval.merge("Eval", evalBase); err != nil {
		return d, err
	}
	if d.Model.Precision == DefaultPrecision {
		d.Model.Precision = d.defaultPrecision()
	}
	return d, nil
}

// defaultPrecision returns the precision that DefaultPrecision stands for
// in the run d (its solvers' defaults filled in): DefaultConvPrecision
// for the conv cell unless a solve of the run uses a method that needs a
// proven Lipschitz bound, and Float64 otherwise (see
// ModelConfig.Precision).
func (d Config) defaultPrecision() Precision {
	if d.Model.Cell != ConvCell {
		return Float64
	}
	if d.Model.provableConv() && (d.Forward.Method.NeedsProvenBound() || d.Eval.Method.NeedsProvenBound() ||
		(d.Backward.Mode == Implicit && d.Backward.Solver.Method.NeedsProvenBound())) {
		return Float64
	}
	return DefaultConvPrecision
}

// provableConv reports whether the conv cell of m (its defaults filled
// in) proves its Lipschitz bound when it computes in float64: without
// GroupNorm, under the projection, in ℓ2 or Schatten-2 (layers.Conv.Proven).
// With GroupNorm or weight normalisation, or in another norm, float64
// products prove nothing more than float32 ones.
func (m ModelConfig) provableConv() bool {
	return m.Groups < 0 && m.Normalization == layers.Projection &&
		(m.Norm.kind == normL2 || (m.Norm.kind == normSchatten && m.Norm.p == 2))
}

func (m ModelConfig) defaults() (ModelConfig, error) {
	d := m
	if !m.Cell.valid() {
		return d, fieldErr("Model.Cell", m.Cell, "is not a cell kind")
	}
	if err := nonNegative(intField{"Model.Hidden", m.Hidden}, intField{"Model.Encoder", m.Encoder}, intField{"Model.Units", m.Units},
		intField{"Model.Terms", m.Terms}, intField{"Model.ExactEvery", m.ExactEvery}, intField{"Model.Channels", m.Channels},
		intField{"Model.Kernels", m.Kernels}, intField{"Model.ReadoutHidden", m.ReadoutHidden},
		intField{"Model.EncoderLayers", m.EncoderLayers}); err != nil {
		return d, err
	}
	switch {
	case !validText(m.Activation):
		return d, fieldErr("Model.Activation", m.Activation, "is not an activation")
	case m.Gamma < 0 || m.Gamma >= 1 || math.IsNaN(m.Gamma):
		return d, fieldErr("Model.Gamma", m.Gamma, "must lie in (0, 1)")
	case !validText(m.Normalization):
		return d, fieldErr("Model.Normalization", m.Normalization, "is not a normalisation")
	case m.Normalization != layers.Projection && m.Cell != DenseCell && (m.Cell != ConvCell || m.Normalization != layers.WeightNorm):
		return d, fieldErr("Model.Normalization", m.Normalization, fmt.Sprintf("does not apply to the %v cell (the dense cell takes weight and spectral, the conv cell weight; the others keep their Lipschitz bound by projection)", m.Cell))
	case !m.Precision.valid():
		return d, fieldErr("Model.Precision", m.Precision, "is not a precision")
	case m.Precision == Float32 && m.Cell != DenseCell && m.Cell != ConvCell:
		return d, fieldErr("Model.Precision", m.Precision, fmt.Sprintf("does not apply to the %v cell (only the dense and conv cells compute in float32)", m.Cell))
	case m.EncoderLayers != 0 && m.Cell != ConvCell:
		return d, fieldErr("Model.EncoderLayers", m.EncoderLayers, fmt.Sprintf("does not apply to the %v cell (only the conv model has a convolutional encoder)", m.Cell))
	}
	if m.Cell == ConvCell {
		return m.convDefaults()
	}
	d.Channels, d.Groups, d.Kernels = 0, 0, 0
	if _, err := m.Norm.Norm(1, 1); err != nil {
		return d, fieldErr("Model.Norm", m.Norm, "is not a norm")
	}
	d.Hidden = cmp.Or(m.Hidden, DefaultHidden)
	d.Gamma = cmp.Or(m.Gamma, DefaultGamma)
	d.ExactEvery = cmp.Or(m.ExactEvery, 1)
	d.Encoder = cmp.Or(m.Encoder, d.Hidden)
	d.Units, d.Terms = 0, 0
	switch d.Cell {
	case MeanFieldCell:
		d.Units = cmp.Or(m.Units, DefaultUnitsPerDim*d.Hidden)
	case ExpertsCell:
		d.Terms = cmp.Or(m.Terms, DefaultTerms)
	}
	return d, nil
}

// convDefaults fills the defaults of a conv model.
func (m ModelConfig) convDefaults() (ModelConfig, error) {
	d := m
	switch {
	case m.Hidden != 0:
		return d, fieldErr("Model.Hidden", m.Hidden, "does not apply to the conv cell (its state has Channels·⌈H/2⌉·⌈W/2⌉ entries)")
	case m.Encoder != 0:
		return d, fieldErr("Model.Encoder", m.Encoder, "does not apply to the conv cell (its encoder has Channels channels)")
	}
	if _, err := m.Norm.Norm(1, 1); err != nil {
		return d, fieldErr("Model.Norm", m.Norm, "is not a norm")
	}
	d.Units, d.Terms = 0, 0
	d.Channels = cmp.Or(m.Channels, DefaultConvChannels)
	d.Kernels = cmp.Or(m.Kernels, 1)
	d.EncoderLayers = cmp.Or(m.EncoderLayers, DefaultConvEncoderLayers)
	d.Gamma = cmp.Or(m.Gamma, DefaultGamma)
	d.ExactEvery = cmp.Or(m.ExactEvery, DefaultConvCertifyEvery)
	switch {
	case m.Groups == 0:
		d.Groups = gcd(d.Channels, DefaultConvGroups)
	case m.Groups < 0:
		d.Groups = -1
	}
	if d.Groups > 0 && d.Channels%d.Groups != 0 {
		return d, fieldErr("Model.Groups", d.Groups, fmt.Sprintf("does not divide Channels = %d", d.Channels))
	}
	return d, nil
}

// gcd returns the greatest common divisor of the positive a and b.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// DefaultsFor returns the defaults of a run with a cell of kind k: the
// fields that Config.Defaults fills in where they are zero and whose
// defaults depend on the cell (Epochs, BatchSize, LR, Forward,
// Backward.Mode, Backward.Solver and Augment). They are DefaultEpochs,
// DefaultBatchSize, DefaultLR, DefaultForward(), Implicit,
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
		Backward: BackwardConfig{Mode: Implicit, Solver: DefaultBackwardSolver()},
	}
	if k == ConvCell {
		anderson := method(solver.Anderson{})
		c.Epochs, c.BatchSize, c.LR = DefaultConvEpochs, DefaultConvBatchSize, DefaultConvLR
		c.Forward = SolverConfig{Method: anderson, Tol: DefaultConvForwardTol, MaxIter: DefaultConvForwardIter, Delta: DefaultDelta}
		c.Backward.Mode = DefaultConvBackward
		c.Backward.Solver = SolverConfig{Method: anderson, Tol: DefaultBackwardTol, MaxIter: DefaultConvBackwardIter, Delta: DefaultDelta}
		c.Augment.Shift = DefaultConvShift
	}
	return c
}

// method returns the registry method of m's type, which must exist.
func method(m solver.Method) Method {
	r, err := MethodOf(m)
	if err != nil {
		panic(err)
	}
	return r
}

// validText reports whether v is a value of its enumeration (one of
// layers' activations or normalisations): whether it has a text form.
func validText(v encoding.TextMarshaler) bool {
	_, err := v.MarshalText()
	return err == nil
}

// merge validates s and fills its zero fields from base.
func (s SolverConfig) merge(field string, base SolverConfig) (SolverConfig, error) {
	switch {
	case s.Method.index < 0 || s.Method.index > len(solver.Methods()) ||
		(!s.Method.IsZero() && s.Method.Info().Baseline):
		return s, fieldErr(field+".Method", s.Method, "is not a method of Methods()")
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
	d.Delta = cmp.Or(s.Delta, base.Delta)
	d.SampleScale = cmp.Or(s.SampleScale, base.SampleScale)
	d.CertDelta = cmp.Or(s.CertDelta, base.CertDelta)
	d.Memory = cmp.Or(s.Memory, base.Memory)
	d.Relative = s.Relative || base.Relative
	return d, nil
}

// method builds the solver.Method of s for a cell with Lipschitz bound
// gamma.
func (s SolverConfig) method(gamma float64) solver.Method {
	return s.Method.Info().New(solver.MethodOptions{Gamma: gamma, Delta: s.Delta, SampleScale: s.SampleScale, Memory: s.Memory})
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

// FieldError reports an invalid Config field.
type FieldError struct {
	// Field is the field's path below Config, such as "Model.Hidden", as
	// Diff names it.
	Field string
	// Value is the field's value.
	Value any
	// Reason says what is wrong with it.
	Reason string

	cause error // the error of the check that refused the value, if any
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("train: Config.%s = %v %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns the error of the check that refused the value when
// another package made it (for Augment.Shift, datasets.NewShifter's; for
// Augment.Rotate and Augment.Scale, datasets.NewWarper's), and
// nil otherwise.
func (e *FieldError) Unwrap() error { return e.cause }

// intField is an integer field with its path below Config, for
// nonNegative.
type intField struct {
	name string
	v    int
}

// nonNegative returns the FieldError of the first of fs that is negative,
// or nil.
func nonNegative(fs ...intField) error {
	for _, f := range fs {
		if f.v < 0 {
			return fieldErr(f.name, f.v, "must not be negative")
		}
	}
	return nil
}

func fieldErr(field string, v any, why string) error {
	return &FieldError{Field: field, Value: v, Reason: why}
}

// FieldDiff is a field in which two Configs differ (see Config.Diff).
type FieldDiff struct {
	// Field is the field's path below Config, such as "Model.Hidden" or
	// "Backward.Solver.Tol".
	Field string
	// A and B are the field's values in the receiver and the argument of
	// Diff.
	A, B any
}

// Diff returns the fields in which c and o differ, in the order of their
// declaration. Nested configurations (ModelConfig, SolverConfig,
// BackwardConfig) are compared field by field; every other field, typed
// values included, as a whole.
func (c Config) Diff(o Config) []FieldDiff {
	return diff(nil, "", reflect.ValueOf(c), reflect.ValueOf(o))
}

func diff(out []FieldDiff, prefix string, a, b reflect.Value) []FieldDiff {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		fa, fb := a.Field(i), b.Field(i)
		if f.Type.Kind() == reflect.Struct && hasExported(f.Type) {
			out = diff(out, prefix+f.Name+".", fa, fb)
			continue
		}
		if !fa.Equal(fb) {
			out = append(out, FieldDiff{Field: prefix + f.Name, A: fa.Interface(), B: fb.Interface()})
		}
	}
	return out
}

// hasExported reports whether the struct type t has an exported field:
// the nested configurations do, the typed values (Method, NormSpec) do
// not.
func hasExported(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

func notFinite(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
