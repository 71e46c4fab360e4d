package train

import (
	"cmp"
	"fmt"
	"math"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

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
// relu(W∗z + e + b), and L is DefaultConvEncoderLayers by default.
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
	Norm solver.NormSpec
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
	// layers.Float64, or layers.Float32, single-precision products (a different map,
	// within float32 rounding, whose Lipschitz bound is not proven; see
	// layers.Precision). layers.Float32 only for DenseCell and ConvCell.
	// Where the float64 map of a float32 cell is proven (the conv cell
	// with Groups < 0, the projection, Norm ℓ2 or Schatten-2; the dense
	// cell under the projection), the forward and evaluation solves
	// iterate on the float32 map and are certified on the float64 one
	// (Model.CertifiesFloat64), so that the stochastic solvers run on it
	// with their guarantees. The zero
	// value, layers.DefaultPrecision, selects the cell's default, which Defaults
	// stores explicitly: DefaultConvPrecision (layers.Float32) for ConvCell,
	// except that a conv run whose Backward.Solver method (in implicit
	// mode) needs a proven Lipschitz bound (GHAL, VR-GHAL,
	// growing-batch) takes layers.Float64 when float64 products would
	// prove it: the adjoint solve runs on the cell's own map. With
	// GroupNorm or weight normalisation nothing is proven in either
	// precision, and the default stays layers.Float32; layers.Float64 for
	// the other cells. An explicit layers.Float32 is kept with any method
	// (a stochastic adjoint method then refuses the conv cell, as the
	// stochastic methods refuse any conv cell whose bound is not proven;
	// see New).
	// Checkpoints that omit the precision (written when Float64 was the
	// zero value, for every cell) load as layers.Float64.
	//
	// For ConvCell with EncoderLayers > 1 it is also the precision of the
	// encoder's blocks after the first (layers.ConvEncoderConfig.Precision).
	// A float32 checkpoint of a deeper encoder written by a build that
	// computed those blocks in float64 resumes with them in float32: a
	// different map, within float32 rounding, not the exact continuation.
	//
	// For DenseCell it is also the precision of the encoder's and the
	// readout's matrix products: forward xs·We and z·Wr (or z·W₁ and
	// u·Wr with ReadoutHidden), backward the weight gradients xᵀg and the
	// readout's cotangents g·Wᵀ. Their operands are rounded to float32
	// (the weights through float32 copies refreshed whenever their
	// float64 values change), the sums accumulated in float32 (blas32's
	// Sgemm) and the results widened to float64. The biases, the ReLUs,
	// the loss and its softmax, the parameters' gradients (to which the
	// widened products are added) and the optimiser stay float64, and so
	// do the conv model's readout and its encoder's first block. A float32 dense checkpoint written by a build
	// that computed the encoder and readout in float64 evaluates and
	// resumes with them in float32: likewise a different map, within
	// float32 rounding.
	Precision layers.Precision `json:",omitzero"`
	// ReadoutHidden, if positive, puts a hidden layer of ReadoutHidden
	// ReLU units between the fixed point's features (z*, or for the conv
	// model z* pooled over 2×2 blocks) and the logits: logits =
	// relu(h·W₁ + b₁)·W₂ + b₂ instead of h·W + b. Zero means none, the
	// linear readout. It lies outside the DEQ layer: the cell, its
	// solves and their certificates are the same either way.
	ReadoutHidden int `json:",omitempty"`
}

// provableConv reports whether the conv cell of m (its defaults filled
// in) proves its Lipschitz bound when it computes in float64: without
// GroupNorm, under the projection, in ℓ2 or Schatten-2 (layers.Conv.Proven).
// With GroupNorm or weight normalisation, or in another norm, float64
// products prove nothing more than float32 ones.
func (m ModelConfig) provableConv() bool {
	return m.Groups < 0 && m.Normalization == layers.Projection &&
		(m.Norm.Kind == solver.NormL2 || (m.Norm.Kind == solver.NormSchatten && m.Norm.P == 2))
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
	case !validText(m.Precision):
		return d, fieldErr("Model.Precision", m.Precision, "is not a precision")
	case m.Precision == layers.Float32 && m.Cell != DenseCell && m.Cell != ConvCell:
		return d, fieldErr("Model.Precision", m.Precision, fmt.Sprintf("does not apply to the %v cell (only the dense and conv cells compute in float32)", m.Cell))
	case m.EncoderLayers != 0 && m.Cell != ConvCell:
		return d, fieldErr("Model.EncoderLayers", m.EncoderLayers, fmt.Sprintf("does not apply to the %v cell (only the conv model has a convolutional encoder)", m.Cell))
	}
	if m.Cell == ConvCell {
		return m.convDefaults()
	}
	d.Channels, d.Groups, d.Kernels = 0, 0, 0
	if _, err := m.Norm.Norm(1, 1); err != nil {
		return d, &FieldError{Field: "Model.Norm", Value: m.Norm, Reason: "is not a norm", cause: err}
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
		return d, &FieldError{Field: "Model.Norm", Value: m.Norm, Reason: "is not a norm", cause: err}
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
