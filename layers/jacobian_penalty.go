package layers

// JacobianPenalizer is implemented by the evaluators that give the exact
// gradient of the Hutchinson term of Jacobian regularisation, as in
// "Stabilizing Equilibrium Models by Jacobian Regularization" by Shaojie
// Bai, Vladlen Koltun and J. Zico Kolter (ICML 2021): for a probe v, the
// term is ‖r‖² with r = (∂f/∂z)ᵀv at (z, x), the vector–Jacobian product
// VJPHidden computes exactly, and its gradient differentiates r once more
// (a double backward, written out as fused code).
//
// Of the built-in cells only Dense implements it (package deq refuses the
// others, naming the cell).
type JacobianPenalizer interface {
	// JacobianPenalty writes r = (∂f/∂z)ᵀv at (z, x) into r (the exact
	// VJPHidden) and adds scale·∂‖r‖²/∂θ to the parameter gradients; it
	// writes scale·∂‖r‖²/∂z into dz and scale·∂‖r‖²/∂x into dx, either of
	// which may be nil. v is held constant. The input is the one of the last
	// SetInput.
	JacobianPenalty(r, dz, dx, z, v []float64, scale float64) error
}

var _ JacobianPenalizer = (*denseEval)(nil)

// jacScratch is the scratch of denseEval.JacobianPenalty, allocated on
// first use, rows×Hidden each: the activation t = σ(a), the product
// u = v ⊙ σ′(a), the cotangent ρ of r and the cotangents of u and a.
type jacScratch struct {
	t, u, rho, du []float64
}

// JacobianPenalty implements JacobianPenalizer. With a = zW + xU + b,
// u = v ⊙ σ′(a) and r = uWᵀ, the cotangent ρ = 2·scale·r of r gives
//
//	∂/∂W = ρᵀu (through the explicit W of r) + zᵀδ,
//	δ = (ρW) ⊙ v ⊙ σ″(a)  (the cotangent of a),
//	∂/∂U = xᵀδ, ∂/∂b = the column sums of δ, ∂/∂z = δWᵀ, ∂/∂x = δUᵀ.
//
// For tanh σ′ = 1 − t² and σ″ = −2t(1 − t²) with t = tanh(a); for ReLU σ″
// is zero wherever it exists, so only the explicit term ρᵀu remains and dz,
// dx are zero (the kinks, a measure-zero set, are ignored, as in VJP).
func (e *denseEval) JacobianPenalty(r, dz, dx, z, v []float64, scale float64) error {
	if err := e.checkFull(dz, dx, z, v); err != nil {
		return err
	}
	checkLen("r", len(r), e.Len())
	c := e.c
	h, d := c.shape.Hidden, c.shape.Input
	s := &e.jac
	if s.t == nil {
		s.t = make([]float64, e.Len())
		s.u = make([]float64, e.Len())
		s.rho = make([]float64, e.Len())
		s.du = make([]float64, e.Len())
	}
	// EvalExact checks nothing here that checkFull has not checked.
	_ = e.EvalExact(s.t, z)
	copy(s.u, v)
	c.act.backward(s.u, s.t)
	w := c.w.Data()
	mulABt(1, dense(e.rows, h, s.u), dense(h, h, w), 0, dense(e.rows, h, r))
	for i, x := range r {
		s.rho[i] = 2 * scale * x
	}
	gw := c.w.GradData()
	mulAtB(1, dense(e.rows, h, s.rho), dense(e.rows, h, s.u), 1, dense(h, h, gw))
	if c.act == Tanh {
		// δ = (ρW) ⊙ v ⊙ (−2t(1 − t²)), kept in du.
		mulAB(1, dense(e.rows, h, s.rho), dense(h, h, w), 0, dense(e.rows, h, s.du))
		for i, t := range s.t {
			s.du[i] *= -2 * v[i] * t * (1 - t*t)
		}
		dm := dense(e.rows, h, s.du)
		mulAtB(1, dense(e.rows, h, z), dm, 1, dense(h, h, gw))
		mulAtB(1, dense(e.rows, d, e.x), dm, 1, dense(d, h, c.u.GradData()))
		addColSums(c.b.GradData(), s.du, e.rows, h)
		if dz != nil {
			mulABt(1, dm, dense(h, h, w), 0, dense(e.rows, h, dz))
		}
		if dx != nil {
			mulABt(1, dm, dense(d, h, c.u.Data()), 0, dense(e.rows, d, dx))
		}
	} else {
		clear(dz)
		clear(dx)
	}
	c.chainW()
	return nil
}
