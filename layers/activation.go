package layers

import (
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
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

// String returns the name accepted by ParseActivation.
func (a Activation) String() string {
	switch a {
	case ReLU:
		return "relu"
	case Tanh:
		return "tanh"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

// ParseActivation returns the activation named s: "relu" or "tanh" (as
// String names them). Any other name is an error.
func ParseActivation(s string) (Activation, error) {
	switch s {
	case "relu":
		return ReLU, nil
	case "tanh":
		return Tanh, nil
	}
	return 0, fmt.Errorf("layers: unknown activation %q (want relu or tanh)", s)
}

// MarshalText implements encoding.TextMarshaler with the activation's
// name. It returns an error for a value that is not an activation.
func (a Activation) MarshalText() ([]byte, error) {
	if err := a.valid(); err != nil {
		return nil, err
	}
	return []byte(a.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseActivation.
func (a *Activation) UnmarshalText(text []byte) error {
	v, err := ParseActivation(string(text))
	if err == nil {
		*a = v
	}
	return err
}

func (a Activation) valid() error {
	if a != ReLU && a != Tanh {
		return fmt.Errorf("layers: Activation = %v is not ReLU or Tanh", a)
	}
	return nil
}

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
