package layers

import (
	"fmt"

	"github.com/deqgo/deq/internal/enum"
)

// Precision selects the floating-point precision of the matrix products of
// a Dense or Conv cell (DenseConfig.Precision, ConvConfig.Precision), or of
// a ConvEncoder's blocks after the first (ConvEncoderConfig.Precision: the
// same shifted products as Conv's, forward, for the kernels' gradients and
// transposed).
//
// With Float32 the cell's products (the evaluation, the oracle's calls,
// the vector–Jacobian products in z and x and the parameter gradients; for
// Conv the nine shifted products of the recurrent convolution, while the
// injection U∗x, the power iteration of Project and the encoder's first
// block stay in float64) run in single precision through gonum's blas32
// (OpenBLAS's sgemm in a build with the netlib tag, gonum's pure-Go Sgemm
// otherwise): their operands are rounded to float32 and the products accumulated in
// float32, then widened back to float64. Everything else stays float64:
// the state z, the input, the bias and activation, the gradients, the
// solver and the optimiser. The cell keeps float32 copies of its weights,
// refreshed whenever their float64 values change, and float32 scratch
// space, allocated once.
//
// With Float32 the cell is a different deterministic map: every product is
// the float64 one up to rounding of about 1e-7 relative to the magnitude
// of its terms (at worst the sum of the terms' absolute values times the
// number of terms times 2⁻²⁴; call the resulting bound on an output ε).
// Solves and certificates are of that map. It satisfies the cell's bound
// γ̄ only up to its rounding, ‖f₃₂(z) − f₃₂(z′)‖ ≤ γ̄‖z − z′‖ + 2ε, which
// the certificates do not count (so the cells' Proven reports false under
// Float32: a bound up to rounding is not the proven bound): negligible beside tolerances above about
// 1e-6 relative to the size of f, and tolerances much below that may not
// be met at all (residuals of that order are rounding noise). Gradients
// are those of that map up to the same rounding (the backward products are
// rounded too, so they are not its exact derivatives). Gorgonia's graphs
// (EvalGraph and the reference VJPs) stay in float64, and so do the
// products of Dense's JacobianPenalty (taken at the float32 map's
// pre-activation).
//
// Package train extends a Float32 cell's precision beyond the cell
// (train.ModelConfig.Precision): its dense model runs the encoder's and
// the readout's products in float32 in the same way (float32 copies of
// the weights, float32 accumulation, results widened to float64), and its
// conv model the encoder's blocks after the first (ConvEncoderConfig).
//
// The zero value, DefaultPrecision, is unset: it selects the default of the
// configuration that holds it, Float64 for this package's configurations.
// The text form is "float64" or "float32", and "" for DefaultPrecision.
type Precision int

const (
	// DefaultPrecision, the zero value, selects the default precision of
	// the configuration that holds it: Float64 for DenseConfig, ConvConfig
	// and ConvEncoderConfig.
	DefaultPrecision Precision = iota
	// Float64 computes everything in double precision.
	Float64
	// Float32 computes the cell's matrix products in single precision.
	Float32
)

var precisions = enum.Table[Precision]{Names: []string{"", "float64", "float32"}, Unknown: errUnknown, What: "precision", Want: "float64 or float32", Invalid: "layers: Precision = %s is not Float64 or Float32"}

// Precisions returns the explicit precisions, Float64 and Float32 (not
// DefaultPrecision).
func Precisions() []Precision { return precisions.Values()[1:] }

// validIn returns an error naming the field Precision of the configuration
// type cfg if p is not a precision, and otherwise p with DefaultPrecision
// resolved to Float64.
func (p Precision) validIn(cfg string) (Precision, error) {
	if !precisions.Valid(p) {
		return p, fmt.Errorf("layers: %s.Precision = %s is not a precision", cfg, precisions.Name(p))
	}
	if p == DefaultPrecision {
		return Float64, nil
	}
	return p, nil
}

// String returns the precision's name: "float64", "float32", or "" for
// DefaultPrecision.
func (p Precision) String() string { return precisions.Name(p) }

// ParsePrecision returns the precision named s: Float64 for "float64",
// Float32 for "float32" and DefaultPrecision for "".
func ParsePrecision(s string) (Precision, error) { return precisions.Parse(s) }

// MarshalText implements encoding.TextMarshaler with the precision's name
// ("" for DefaultPrecision). It returns an error for a value that is not a
// precision.
func (p Precision) MarshalText() ([]byte, error) { return precisions.MarshalText(p) }

// UnmarshalText implements encoding.TextUnmarshaler with ParsePrecision.
func (p *Precision) UnmarshalText(text []byte) error { return precisions.UnmarshalText(p, text) }
