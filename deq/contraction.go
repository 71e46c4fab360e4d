package deq

import (
	"fmt"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// contraction is the Lipschitz constant γ̄ that a method's schedule rests
// on (GHAL's, VR-GHAL's and GrowingBatch's Gamma), with a way to set it.
type contraction struct {
	gamma float64
	// set returns a copy of the method with Gamma g (never the caller's
	// value modified, even when the method is a pointer).
	set func(g float64) solver.Method
	// upToOne: the method needs γ̄ ≤ 1 (a zero Gamma means 1); GHAL and
	// VR-GHAL. GrowingBatch's Gamma only seeds its sampled stopping bound
	// (its certificate is an exact evaluation), so a zero one stays the
	// method's default when the cell's bound exceeds one.
	upToOne bool
}

// contractionOf returns the contraction constant of m and false when m
// takes none (Picard, KM, Halpern, Anderson, Broyden and the baselines take
// none; PAGEHalpern's C2 scales a minibatch, not a contraction).
func contractionOf(m solver.Method) (contraction, bool) {
	switch v := m.(type) {
	case solver.GHAL:
		return contraction{v.Gamma, func(g float64) solver.Method { v.Gamma = g; return v }, true}, true
	case *solver.GHAL:
		if v != nil {
			c := *v
			return contraction{c.Gamma, func(g float64) solver.Method { c.Gamma = g; return &c }, true}, true
		}
	case solver.VRGHAL:
		return contraction{v.Gamma, func(g float64) solver.Method { v.Gamma = g; return v }, true}, true
	case *solver.VRGHAL:
		if v != nil {
			c := *v
			return contraction{c.Gamma, func(g float64) solver.Method { c.Gamma = g; return &c }, true}, true
		}
	case solver.GrowingBatch:
		return contraction{v.Gamma, func(g float64) solver.Method { v.Gamma = g; return v }, false}, true
	case *solver.GrowingBatch:
		if v != nil {
			c := *v
			return contraction{c.Gamma, func(g float64) solver.Method { c.Gamma = g; return &c }, false}, true
		}
	}
	return contraction{}, false
}

// withCellGamma checks the contraction constant of m, the method of
// Settings.field, against the cell's Lipschitz bound and fills a zero one
// in (see Settings.Forward). proven says whether the cell proves its bound
// in the norm of the solve; fill whether a zero constant may be set to the
// cell's bound (false under dropout, whose masked map has a larger bound,
// and for an adjoint solve outside ℓ2).
func withCellGamma(field string, m solver.Method, cell layers.Cell, proven, fill bool) (solver.Method, error) {
	c, ok := contractionOf(m)
	if !ok || !proven {
		return m, nil
	}
	bound := cell.Gamma()
	switch {
	case c.gamma != 0 && c.gamma < bound:
		return nil, fmt.Errorf("deq: Settings.%s = %v: Gamma = %v is below the cell's proven Lipschitz bound γ̄ = %v, a contraction the cell does not prove (leave Gamma zero to use γ̄)", field, m, c.gamma, bound)
	case c.gamma != 0:
		return m, nil
	case bound > 1 && c.upToOne:
		return nil, fmt.Errorf("deq: Settings.%s = %v needs a Lipschitz bound γ̄ ≤ 1, and the cell's is %v", field, m, bound)
	case fill && bound > 0 && bound <= 1:
		return c.set(bound), nil
	}
	return m, nil
}

// isL2 reports whether n is the ℓ2 norm (or Schatten-2, the same norm on
// matrices), in which a Jacobian and its transpose have the same norm.
func isL2(n solver.Norm) bool {
	if b, ok := n.(*solver.Batched); ok {
		n = b.Example
	}
	switch v := n.(type) {
	case solver.LP:
		return v.String() == "l2"
	case *solver.Schatten:
		return v.P() == 2
	}
	return false
}

// checkContractions applies withCellGamma to c.Forward and, in Implicit
// mode, to c.Adjoint.
func (c *Settings) checkContractions(cell layers.Cell) error {
	var err error
	noDropout := c.Dropout == 0
	if c.Forward, err = withCellGamma("Forward", c.Forward, cell, c.forwardProven(cell, c.Norm), noDropout); err != nil {
		return err
	}
	if c.Backward != Implicit {
		return nil
	}
	// The adjoint map g ↦ J_f(z*)ᵀg + v has J_fᵀ's Lipschitz constant,
	// which equals J_f's in ℓ2 only; elsewhere a zero constant stays the
	// method's default.
	fill := noDropout && isL2(c.AdjointNorm) && isL2(c.Norm)
	c.Adjoint, err = withCellGamma("Adjoint", c.Adjoint, cell, cell.Proven(c.Norm) && cell.Proven(c.AdjointNorm), fill)
	return err
}
