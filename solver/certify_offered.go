package solver

import "math"

// ownCert is a certificate a method has offered for a point (see
// Env.OfferCertificate).
type ownCert struct {
	x    []float64
	cert Certificate
	ok   bool
}

// OfferCertificate hands Solve a rigorous bound on the residual at x that
// the method has already paid for: c.Bound bounds ‖T(x) − x‖ with
// probability at least 1 − c.Delta by the rule c.Rule, from c.Calls oracle
// calls and c.Samples unit samples that the method drew itself (and that
// Stats already counts). Solve reports it as the Result's Certificate, with
// Own set, instead of drawing a fresh one, when all of these hold:
//
//   - x is the returned point, coordinate by coordinate;
//   - c.Rule is rigorous and c.Bound meets the tolerance in force (Tol);
//   - 0 < c.Delta ≤ Settings.Certify.Delta, so the certificate claims no
//     less than the one Solve would draw;
//   - Settings.Certify.Samples and Calls are zero (a caller who sizes the
//     certificate gets the certificate sized so) and the norm is not
//     Batched, unless c.PerExample holds one bound per example.
//
// Otherwise Solve draws its certificate as usual. The offer is kept until
// the next one; its Own field is ignored, and its PerExample unless the
// norm is Batched.
//
// Validity rests on the method: c.Delta must bound the probability that
// c.Bound fails at the point the run returns, which is chosen from the
// data. A method that stops at the first of several bounds B_k that meets
// Tol must therefore state the failure probability of the union of all
// their events (Σ_k δ_k, the share of its δ it gave them), not the δ_k of
// the one it stopped on. VR-GHAL with TunedConstants offers its epoch-start
// estimate this way (see docs/vrghal.md).
func (e *Env) OfferCertificate(x []float64, c Certificate) {
	if len(x) != len(e.x0) {
		return
	}
	e.own.x = append(e.own.x[:0], x...)
	if b, ok := e.norm.(*Batched); !ok || len(c.PerExample) != b.Examples {
		c.PerExample = nil
	} else {
		c.PerExample = append([]float64(nil), c.PerExample...)
	}
	c.Own = true
	e.own.cert, e.own.ok = c, true
}

// ownCertificate returns a copy of the certificate the method offered
// for x when Solve may report it (see OfferCertificate), and nil
// otherwise.
func (e *Env) ownCertificate(x []float64) *Certificate {
	o, s := &e.own, &e.settings
	c := o.cert
	switch {
	case !o.ok || len(x) != len(o.x):
		return nil
	case !c.Rule.Rigorous() || !(c.Bound <= e.tolAbs):
		return nil
	case !(c.Delta > 0) || c.Delta > s.Certify.Delta:
		return nil
	case s.Certify.Samples != 0 || s.Certify.Calls != 0:
		return nil
	}
	if _, batched := e.norm.(*Batched); batched && c.PerExample == nil {
		return nil
	}
	for i, v := range x {
		if math.Float64bits(v) != math.Float64bits(o.x[i]) {
			return nil
		}
	}
	return &c
}
