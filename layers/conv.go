package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/blas/blas64"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers/internal/conv"
	"github.com/deqgo/deq/solver"
)

// ConvKernel is the side of the Conv cell's square kernels: 3×3, with
// padding 1 and stride 1, so a hidden state keeps its H×W size.
const ConvKernel = 3

// DefaultConvPowerIters is the number of power-iteration steps per kernel
// that Conv.Project runs when ConvConfig.PowerIters is zero.
const DefaultConvPowerIters = 4

// convWarmIters is the number of power-iteration steps NewConv runs from
// the seeded start vectors before its first projection.
const convWarmIters = 60

// ConvConfig configures a Conv cell. Zero values select the documented
// defaults.
type ConvConfig struct {
	// Channels is C, the number of channels of the hidden state and the
	// input. Required.
	Channels int
	// Height and Width are the image size H×W. Required.
	Height, Width int
	// Kernels is M, the number of kernels the cell averages (see Conv).
	// Zero means 1: the deterministic cell.
	Kernels int
	// InputConv selects the injection u = U∗x (a 3×3 convolution of the
	// input, parameter U) instead of the default u = x, which leaves the
	// input's features to an encoder such as ConvEncoder.
	InputConv bool
	// Activation is σ; the zero value is ReLU.
	Activation Activation
	// Groups, if positive, applies a GroupNorm with Groups groups (which
	// must divide Channels) and a learned per-channel scale and shift to
	// every term after σ. The cell is then no longer provably Lipschitz
	// (see Conv). Zero means no normalisation.
	Groups int
	// Gamma is the bound γ̄ > 0 that Project enforces on the ℓ2 operator
	// norm of every kernel's convolution. Zero means DefaultGamma.
	Gamma float64
	// PowerIters is the number of power-iteration steps per kernel and per
	// Project. Zero means DefaultConvPowerIters.
	PowerIters int
	// CertifyEvery makes every CertifyEvery-th Project also compute the
	// Fourier bound on every kernel's operator norm (see Conv.Bound) and
	// rescale the kernels it finds above γ̄, which makes the bound certain.
	// It costs about (H+1)(W+1)/2 singular value decompositions of 2C×2C
	// matrices per kernel. Zero means never.
	CertifyEvery int
	// Normalization selects how W is kept in check: the zero value,
	// Projection, trains W and rescales it in Project (see Conv);
	// WeightNorm trains V and g instead, from which Project computes
	// W_m = g_m ⊙ V_m/‖V_m‖ per output channel, and bounds nothing (see
	// Conv). SpectralNorm is not offered (an error).
	Normalization Normalization
	// Seed seeds the initialisation (W and U with independent
	// N(0, 1/(9C)) entries, W then projected; b zero; GroupNorm scale one,
	// shift zero) and the power iteration's start vectors.
	Seed uint64
	// Precision is the precision of the recurrent convolutions W_m∗z and
	// their transposes and weight gradients (see Precision); the zero value,
	// DefaultPrecision, is Float64.
	Precision Precision
}

// Conv is the convolutional cell
//
//	f(z, x) = (1/M) Σ_m φ_m(z, x),   φ_m(z, x) = N(σ(W_m∗z + u + b_m)),
//
// on hidden states of C channels of H×W pixels: W_m∗z is the 3×3
// convolution (padding 1, stride 1, cross-correlation as in deep learning
// libraries) of z with the C×C×3×3 kernel W_m, u the injection (x itself,
// or U∗x with ConvConfig.InputConv), b_m a per-channel bias, σ ReLU or tanh
// and N the optional GroupNorm (identity by default). With M = 1 (the
// default) it is the deterministic cell σ(W∗z + u + b); with M > 1 its
// oracle samples kernels m uniformly with replacement (one kernel = one
// unit sample), an unbiased estimate of f since f is their plain average.
//
// An example's hidden state and input are C×(H·W) row-major matrices (CHW
// order), so Shape() is {Rows: C, Hidden: H·W, Input: H·W} and Schatten-p
// norms of solver.Batched apply to that C×HW matrix.
//
// # Lipschitz control
//
// Project rescales each W_m so that the ℓ2 operator norm of z ↦ W_m∗z is at
// most γ̄ (power iteration on the operator and, every CertifyEvery
// projections, the Fourier upper bound, see Bound). Without GroupNorm and
// normalisation the cell is then γ̄-Lipschitz in ℓ2 (Schatten-2) of the
// C×HW state, and in no other norm; with GroupNorm (Groups > 0) or
// WeightNorm no bound is proven, Proven is false and, for M > 1, the
// oracle's model is BoundedVariance. With ConvConfig.Normalization =
// WeightNorm the trained parameters are V and g, and row o of W_m is
// g_mo·V_mo/‖V_mo‖. The page docs/deq-layers.md in the repository gives
// the reasoning.
//
// # Parameters
//
// W is (M·C)×(9C): rows m·C … m·C+C−1 are W_m in OIHW order (output channel,
// input channel, kernel row, kernel column). U (with InputConv) is C×(9C),
// b is M×C, and with Groups the GroupNorm scale and shift are 1×C each.
// Under WeightNorm V has W's shape and layout and g is M×C (g_mo at row m,
// column o), and W is not a trained parameter.
//
// With ConvConfig.Precision = Float32 the convolutions, their transposes
// and the kernels' gradients run in single precision (see Precision);
// Project, Bound and the injection U∗x stay float64.
type Conv struct {
	shape     Shape
	geom      conv.Geom
	c, hw, m  int
	act       Activation
	inputConv bool
	groups    int
	gamma     float64
	iters     int
	certEvery int
	prec      Precision
	calls     int
	w, u, b   *Param
	rp        *reparam // WeightNorm only
	nscale    *Param   // GroupNorm scale (nil without Groups)
	nshift    *Param
	power     []float64 // M unit vectors of length C·H·W
	pcol, py  []float64
	fourier   *conv.FourierBound
	params    []*Param // the trained parameters, in Params order
	direct    []*Param // W, [U], b, [scale, shift]: what the VJPs add into
	evals     mru.Cache[int, *convEval]
	refs      mru.Cache[int, *convEval] // ReferenceEvaluator's, under Float32
}

var (
	_ Cell             = (*Conv)(nil)
	_ ProjectionStater = (*Conv)(nil)
)

// NewConv returns a Conv cell initialised from cfg.Seed and projected.
func NewConv(cfg ConvConfig) (*Conv, error) {
	switch {
	case cfg.Channels < 1:
		return nil, fmt.Errorf("layers: ConvConfig.Channels = %d must be positive", cfg.Channels)
	case cfg.Height < 1:
		return nil, fmt.Errorf("layers: ConvConfig.Height = %d must be positive", cfg.Height)
	case cfg.Width < 1:
		return nil, fmt.Errorf("layers: ConvConfig.Width = %d must be positive", cfg.Width)
	case cfg.Kernels < 0:
		return nil, fmt.Errorf("layers: ConvConfig.Kernels = %d must not be negative", cfg.Kernels)
	case cfg.Groups < 0 || (cfg.Groups > 0 && cfg.Channels%cfg.Groups != 0):
		return nil, fmt.Errorf("layers: ConvConfig.Groups = %d must be zero or divide Channels = %d", cfg.Groups, cfg.Channels)
	case !(cfg.Gamma >= 0) || math.IsInf(cfg.Gamma, 0):
		return nil, fmt.Errorf("layers: ConvConfig.Gamma = %v must be positive and finite", cfg.Gamma)
	case cfg.PowerIters < 0:
		return nil, fmt.Errorf("layers: ConvConfig.PowerIters = %d must not be negative", cfg.PowerIters)
	case cfg.CertifyEvery < 0:
		return nil, fmt.Errorf("layers: ConvConfig.CertifyEvery = %d must not be negative", cfg.CertifyEvery)
	}
	if err := cfg.Activation.valid(); err != nil {
		return nil, err
	}
	if err := cfg.Normalization.validIn("ConvConfig"); err != nil {
		return nil, err
	}
	prec, err := cfg.Precision.validIn("ConvConfig")
	if err != nil {
		return nil, err
	}
	if cfg.Normalization == SpectralNorm {
		return nil, fmt.Errorf("layers: ConvConfig.Normalization = %v is not offered by Conv (want project or weight)", cfg.Normalization)
	}
	ch, hw := cfg.Channels, cfg.Height*cfg.Width
	m := max(cfg.Kernels, 1)
	geom := conv.Geom{In: ch, H: cfg.Height, W: cfg.Width, K: ConvKernel, Stride: 1, Pad: 1}
	c := &Conv{
		shape: Shape{Rows: ch, Hidden: hw, Input: hw},
		geom:  geom,
		c:     ch, hw: hw, m: m,
		act:       cfg.Activation,
		inputConv: cfg.InputConv,
		groups:    cfg.Groups,
		gamma:     cmp0(cfg.Gamma, DefaultGamma),
		iters:     cmp0(cfg.PowerIters, DefaultConvPowerIters),
		certEvery: cfg.CertifyEvery,
		prec:      prec,
		w:         newParam("W", m*ch, geom.ColRows()),
		b:         newParam("b", m, ch),
		power:     make([]float64, m*ch*hw),
		pcol:      make([]float64, geom.ColRows()*hw),
		py:        make([]float64, ch*hw),
		evals:     mru.Cache[int, *convEval]{Max: MaxCachedBatches},
		refs:      mru.Cache[int, *convEval]{Max: MaxCachedBatches},
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x9e6c63d0676a9a99))
	sd := 1 / math.Sqrt(float64(geom.ColRows()))
	fillNormal(c.w.Data(), rng, sd)
	if cfg.InputConv {
		c.u = newParam("U", ch, geom.ColRows())
		fillNormal(c.u.Data(), rng, sd)
	}
	if cfg.Groups > 0 {
		c.nscale = newParam("gn.scale", 1, ch)
		c.nshift = newParam("gn.shift", 1, ch)
		for i := range c.nscale.Data() {
			c.nscale.Data()[i] = 1
		}
	}
	c.direct = c.paramList()
	c.params = c.direct
	fillNormal(c.power, rng, 1)
	for k := range m {
		v := c.power[k*ch*hw : (k+1)*ch*hw]
		scale(v, 1/blas64.Nrm2(blas64.Vector{N: len(v), Inc: 1, Data: v}))
		c.powerStep(k, convWarmIters)
	}
	if err := c.Project(); err != nil {
		return nil, err
	}
	if cfg.Normalization == WeightNorm {
		c.initWeightNorm()
	}
	return c, nil
}

// cmp0 returns v, or def if v is zero.
func cmp0[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Shape implements Cell: {Rows: C, Hidden: H·W, Input: H·W}.
func (c *Conv) Shape() Shape { return c.shape }

// Precision returns the precision of the recurrent convolutions.
func (c *Conv) Precision() Precision { return c.prec }

// Channels returns C.
func (c *Conv) Channels() int { return c.c }

// Kernels returns M.
func (c *Conv) Kernels() int { return c.m }

// Params implements Cell: W (V and g under WeightNorm), then U (with
// InputConv), b, then the GroupNorm scale and shift (with Groups).
func (c *Conv) Params() []*Param { return slices.Clone(c.params) }

func (c *Conv) paramList() []*Param {
	ps := []*Param{c.w}
	if c.u != nil {
		ps = append(ps, c.u)
	}
	ps = append(ps, c.b)
	if c.nscale != nil {
		ps = append(ps, c.nscale, c.nshift)
	}
	return ps
}

// W returns the recurrent kernels. Under WeightNorm they are not a trained
// parameter (not in Params) but computed by Project from V and g; their
// gradient is then scratch space.
func (c *Conv) W() *Param { return c.w }

// Gamma implements Cell: the γ̄ that Project enforces, or +Inf (no bound)
// under WeightNorm.
func (c *Conv) Gamma() float64 {
	if c.rp != nil {
		return math.Inf(1)
	}
	return c.gamma
}

// Proven implements Cell: true for the ℓ2 norm and Schatten-2 (the same
// norm on the C×HW state) when the cell has no GroupNorm and no
// WeightNorm, and computes in Float64 (with Float32 products the map meets
// γ̄ only up to its rounding; see Precision).
func (c *Conv) Proven(n solver.Norm) bool {
	return c.prec != Float32 && c.ReferenceProven(n)
}

// ReferenceProven implements Referenced: true for the ℓ2 norm and
// Schatten-2 when the cell has no GroupNorm and no WeightNorm, whatever
// its Precision.
func (c *Conv) ReferenceProven(n solver.Norm) bool {
	if c.groups > 0 || c.rp != nil {
		return false
	}
	if b, ok := n.(*solver.Batched); ok {
		n = b.Example
	}
	switch n := n.(type) {
	case solver.LP:
		return n.P() == 2
	case *solver.Schatten:
		return n.P() == 2
	}
	return false
}

// kernel returns W_m.
func (c *Conv) kernel(m int) []float64 {
	n := c.c * c.geom.ColRows()
	return c.w.Data()[m*n : (m+1)*n]
}

// apply writes W∗v into dst for one C×H×W image (w is C×9C).
func (c *Conv) apply(dst, w, v []float64) {
	c.geom.Im2Col(c.pcol, v)
	conv.Gemm(false, false, c.c, c.hw, c.geom.ColRows(), 1, w, c.geom.ColRows(), c.pcol, c.hw, 0, dst, c.hw)
}

// applyAdjoint writes the transposed convolution of y into dst.
func (c *Conv) applyAdjoint(dst, w, y []float64) {
	r := c.geom.ColRows()
	conv.Gemm(true, false, r, c.hw, c.c, 1, w, r, y, c.hw, 0, c.pcol, c.hw)
	clear(dst)
	c.geom.Col2ImAdd(dst, c.pcol)
}

// powerStep runs iters steps of power iteration on AᵀA, A the convolution
// by W_m, from the persistent unit vector of kernel m, and returns the last
// step's estimate ‖Av‖ ≤ ‖A‖₂.
func (c *Conv) powerStep(m, iters int) float64 {
	w := c.kernel(m)
	v := c.power[m*c.c*c.hw : (m+1)*c.c*c.hw]
	est := 0.0
	for range iters {
		c.apply(c.py, w, v)
		est = blas64.Nrm2(blas64.Vector{N: len(c.py), Inc: 1, Data: c.py})
		if est == 0 {
			return 0
		}
		c.applyAdjoint(v, w, c.py)
		nv := blas64.Nrm2(blas64.Vector{N: len(v), Inc: 1, Data: v})
		if nv == 0 {
			return est
		}
		scale(v, 1/nv)
	}
	return est
}

// Project implements Cell: it runs PowerIters steps of power iteration per
// kernel and rescales W_m by γ̄/σ̂_m when its estimate σ̂_m exceeds γ̄; on
// every CertifyEvery-th call it then rescales by γ̄/β_m the kernels whose
// Fourier bound β_m exceeds γ̄. Under WeightNorm it only computes W from V
// and g (an evaluator's SetInput does too when they changed).
func (c *Conv) Project() error {
	if c.rp != nil {
		return c.projectWeightNorm()
	}
	if !numeric.AllFinite(c.w.Data()) {
		return fmt.Errorf("layers: Conv.Project: W is not finite: %w", solver.ErrNonFinite)
	}
	c.calls++
	certify := c.certEvery > 0 && (c.calls-1)%c.certEvery == 0
	for m := range c.m {
		if est := c.powerStep(m, c.iters); est > c.gamma {
			scale(c.kernel(m), c.gamma/est)
		}
		if certify {
			if b := c.fourierBound().Norm(c.kernel(m)); b > c.gamma {
				scale(c.kernel(m), c.gamma/b)
			}
		}
	}
	return nil
}

func (c *Conv) fourierBound() *conv.FourierBound {
	if c.fourier == nil {
		c.fourier = conv.NewFourierBound(c.c, c.c, ConvKernel, c.geom.H, c.geom.W, 1)
	}
	return c.fourier
}

// Bound returns the largest Fourier bound over the kernels: an upper bound
// (up to rounding) on the ℓ2 operator norm of every z ↦ W_m∗z on C×H×W
// images with zero padding, hence, without GroupNorm, on the Lipschitz
// constant in z of every term and of the cell in ℓ2. The zero-padded
// convolution is part of a circular one on an (H+1)×(W+1) torus, whose
// norm is the largest spectral norm of the C×C matrices of the kernel's
// discrete Fourier transform; the bound is tight up to edge effects.
func (c *Conv) Bound() float64 {
	b := 0.0
	for m := range c.m {
		b = math.Max(b, c.fourierBound().Norm(c.kernel(m)))
	}
	return b
}

// PowerEstimate returns the largest power-iteration estimate over the
// kernels after iters more steps from the persistent vectors (a lower bound
// on the largest operator norm; it advances the state that Project keeps).
func (c *Conv) PowerEstimate(iters int) float64 {
	e := 0.0
	for m := range c.m {
		e = math.Max(e, c.powerStep(m, iters))
	}
	return e
}

// ProjectionState implements ProjectionStater: the number of Project calls
// and the M power-iteration vectors, concatenated.
func (c *Conv) ProjectionState() ProjectionState {
	return ProjectionState{Calls: c.calls, Vector: slices.Clone(c.power)}
}

// SetProjectionState implements ProjectionStater.
func (c *Conv) SetProjectionState(s ProjectionState) error {
	switch {
	case s.Calls < 0:
		return fmt.Errorf("layers: Conv.SetProjectionState: Calls = %d is negative", s.Calls)
	case len(s.Vector) != len(c.power):
		return fmt.Errorf("layers: Conv.SetProjectionState: Vector has length %d, want %d", len(s.Vector), len(c.power))
	case !numeric.AllFinite(s.Vector):
		return fmt.Errorf("layers: Conv.SetProjectionState: Vector holds NaN or Inf")
	}
	c.calls = s.Calls
	copy(c.power, s.Vector)
	return nil
}

// Evaluator implements Cell.
func (c *Conv) Evaluator(n int) (Evaluator, error) {
	if n < 1 {
		return nil, fmt.Errorf("layers: Conv.Evaluator: batch size %d must be positive", n)
	}
	return c.evals.Get(n, func() (*convEval, error) { return newConvEval(c, n, c.prec), nil })
}

// ReferenceEvaluator implements Referenced: under Float32 an evaluator
// whose convolutions run in float64, otherwise Evaluator(n).
func (c *Conv) ReferenceEvaluator(n int) (Evaluator, error) {
	if c.prec != Float32 {
		return c.Evaluator(n)
	}
	if n < 1 {
		return nil, fmt.Errorf("layers: Conv.ReferenceEvaluator: batch size %d must be positive", n)
	}
	return c.refs.Get(n, func() (*convEval, error) { return newConvEval(c, n, Float64), nil })
}
