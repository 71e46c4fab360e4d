package layers

import (
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/internal/enum"
)

// Activation is an elementwise, 1-Lipschitz activation function σ. Being
// elementwise and 1-Lipschitz, it is nonexpansive in every ℓp norm
// (|σ(a_i) − σ(b_i)| ≤ |a_i − b_i| for every entry), hence in Schatten-2
// (Frobenius), but not in Schatten-p for p ≠ 2.
type Activation int

const (
	// ReLU is max(0, x), the zero value.
	ReLU Activation = iota
	// Tanh is the hyperbolic tangent.
	Tanh
)

var activations = enum.Table[Activation]{Names: []string{"relu", "tanh"}, Unknown: errUnknown, What: "activation", Or: true, Invalid: "layers: Activation = %s is not ReLU or Tanh"}

// String returns the name accepted by ParseActivation.
func (a Activation) String() string { return activations.Name(a) }

// ParseActivation returns the activation named s: "relu" or "tanh" (as
// String names them). Any other name is an error.
func ParseActivation(s string) (Activation, error) { return activations.Parse(s) }

// MarshalText implements encoding.TextMarshaler with the activation's
// name. It returns an error for a value that is not an activation.
func (a Activation) MarshalText() ([]byte, error) { return activations.MarshalText(a) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseActivation.
func (a *Activation) UnmarshalText(text []byte) error { return activations.UnmarshalText(a, text) }

func (a Activation) valid() error { return activations.Check(a) }

// apply replaces every x[i] by σ(x[i]). A NaN stays NaN.
func (a Activation) apply(x []float64) {
	switch a {
	case ReLU:
		// max compiles without a branch (the signs of pre-activations are
		// close to random) and keeps a NaN.
		for i, v := range x {
			x[i] = max(v, 0)
		}
	case Tanh:
		for i, v := range x {
			x[i] = math.Tanh(v)
		}
	}
}

// backward multiplies every delta[i] by σ′ at the pre-activation whose
// activation is act[i]: for ReLU σ′ is 1 where the activation is positive
// and 0 where it is zero or negative, for tanh it is 1 − act[i]². It
// stops at the end of the shorter slice. delta and act may be the same
// slice only if delta holds 1s.
func (a Activation) backward(delta, act []float64) {
	n := min(len(delta), len(act))
	delta, act = delta[:n], act[:n]
	switch a {
	case ReLU:
		for i, v := range act {
			delta[i] = math.Float64frombits(math.Float64bits(delta[i]) & positive(v))
		}
	case Tanh:
		for i, v := range act {
			delta[i] *= 1 - v*v
		}
	}
}

// derivative replaces every activation act[i] by σ′ at its pre-activation
// (see backward).
func (a Activation) derivative(act []float64) {
	switch a {
	case ReLU:
		one := math.Float64bits(1)
		for i, v := range act {
			act[i] = math.Float64frombits(one & positive(v))
		}
	case Tanh:
		for i, v := range act {
			act[i] = 1 - v*v
		}
	}
}

// positive returns a mask of ones if v's sign bit is clear and v is not
// zero, and zero otherwise, without a branch (the signs of pre-activations
// are close to random): ReLU's derivative as a bit mask. A NaN's sign bit
// decides for it; the solvers catch a NaN where it enters.
func positive(v float64) uint64 {
	b := math.Float64bits(v)
	nz := b << 1
	return -(((nz | -nz) >> 63) &^ (b >> 63))
}

// node returns the graph node σ(n).
func (a Activation) node(n *G.Node) *G.Node {
	switch a {
	case Tanh:
		return G.Must(G.Tanh(n))
	default:
		return G.Must(G.Rectify(n))
	}
}
