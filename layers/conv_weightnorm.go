package layers

import (
	"fmt"

	"github.com/deqgo/deq/internal/numeric"
)

// initWeightNorm switches a new Conv cell, whose W has just been projected,
// to WeightNorm: V = W and g its row norms, so that W(V, g) starts as the
// projected W, and Params lists V and g in place of W.
func (c *Conv) initWeightNorm() {
	r := c.geom.ColRows()
	c.rp = newWeightNorm("Conv", c.m*c.c, r, c.m, c.c, unitRows(c.m*c.c, r))
	c.rp.init(c.w.Data())
	c.params = append([]*Param{c.rp.v, c.rp.g}, c.direct[1:]...)
	// W computed from V and g is the projected W up to rounding; from here
	// on W is always the computed one.
	_ = c.rp.compute(c.w.Data())
}

// Normalization returns the cell's normalisation: Projection or
// WeightNorm.
func (c *Conv) Normalization() Normalization {
	if c.rp == nil {
		return Projection
	}
	return c.rp.kind
}

// projectWeightNorm is Project under WeightNorm: W computed from V and g.
func (c *Conv) projectWeightNorm() error {
	if !numeric.AllFinite(c.rp.v.Data()) || !numeric.AllFinite(c.rp.g.Data()) {
		return fmt.Errorf("layers: Conv.Project: V or g holds NaN or Inf")
	}
	return c.rp.compute(c.w.Data())
}

// syncW recomputes W from V and g under WeightNorm when they changed since
// the last computation (a comparison, without allocation, otherwise).
func (c *Conv) syncW() error {
	if c.rp == nil {
		return nil
	}
	return c.rp.sync(c.w.Data())
}

// chainW turns the gradient accumulated in W's gradient into the gradients
// of V and g under WeightNorm, and clears it; a no-op under Projection,
// where W is the parameter.
func (c *Conv) chainW() {
	if c.rp != nil {
		c.rp.chain(c.w.GradData())
	}
}
