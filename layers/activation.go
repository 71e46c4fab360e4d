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

// apply replaces every x[i] by σ(x[i]).
func (a Activation) apply(x []float64) {
	switch a {
	case ReLU:
		for i, v := range x {
			if v < 0 {
				x[i] = 0
			}
		}
	case Tanh:
		for i, v := range x {
			x[i] = math.Tanh(v)
		}
	}
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
