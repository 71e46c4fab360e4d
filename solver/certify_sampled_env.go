package solver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// certifySampled is Solve's certificate under CertifySettings.Sampled: the
// staged sampled certificate of res.X for the tolerance res.Tol at
// failure probability s.Certify.Delta (see sampledCertificate), with its
// first stage of s.Certify.Samples terms when set. It returns nil, and
// certify makes the exact pass, when the oracle declares no term bound at
// res.X or the exact pass is cheaper, with the work of any stages it drew
// (which the exact certificate then counts); an error when no sampled
// rule is proven in the norm.
func certifySampled(ctx context.Context, p Problem, res *Result, s *Settings) (*Certificate, sampledSpent, error) {
	if err := stopped(ctx, 0); err != nil {
		return nil, sampledSpent{}, err
	}
	rng := rand.New(rand.NewPCG(s.Seed^0x510e527fade682d1, s.Certify.Seed^0x9b05688c2b3e6c1f))
	return sampledCertificate(ctx, p.Oracle, res.X, p.Norm, res.Tol, s.Certify.Delta, s.Certify.Samples, rng)
}

// sampledCert is the sampled certificate a method draws at x to stop
// without an exact pass: the staged sampled certificate for the tolerance
// in force at failure probability δ/2^{a+1}, a = *attempt, which it then
// increments, so that all of a run's attempts fail with probability at
// most Σ_a δ/2^{a+1} < δ = Settings.Certify.Delta; a stop on the first
// attempt that meets the tolerance is therefore covered at δ, the Delta
// the method states when it offers the certificate (sampledStop). Its
// term evaluations count in Stats, those of stages drawn before it chose
// the exact pass too. It returns nil when the settings ask
// for exact certificates, the oracle declares no term bound, the
// tolerance is not yet known, or the exact pass is cheaper. It draws
// under Certify.Skip too: the stop it proves is still a proven Success,
// only no certificate is reported.
func (e *Env) sampledCert(x []float64, attempt *int) (*Certificate, error) {
	s := &e.settings
	if !s.Certify.Sampled || math.IsNaN(e.tolAbs) || e.oracle.Model() == Deterministic {
		return nil, nil
	}
	if _, ok := e.oracle.(TermBound); !ok {
		return nil, nil
	}
	if err := e.checkLimits(0); err != nil {
		return nil, err
	}
	delta := s.Certify.Delta / math.Exp2(float64(*attempt+1))
	*attempt++
	rng := rand.New(rand.NewPCG(e.Seed(), 0x3c6ef372fe94f82b))
	c, spent, err := sampledCertificate(e.ctx, e.oracle, x, e.norm, e.tolAbs, delta, s.Certify.Samples, rng)
	if c != nil {
		spent = sampledSpent{c.Calls, c.Samples}
	}
	e.stats.Calls += spent.calls
	e.stats.Samples += spent.samples
	if err != nil {
		if stop := e.checkLimits(0); stop != nil {
			return nil, stop
		}
		return nil, fmt.Errorf("solver: sampled certificate: %w", err)
	}
	return c, nil
}

// sampledStop draws a sampled certificate at x (sampledCert) and, when its
// Bound meets the tolerance, offers it as the run's certificate with
// Delta = Settings.Certify.Delta and records x with it, which stops the
// run with Success. Otherwise it records x with the certificate's
// estimate and bound, which does not stop the run. It reports false, and
// records nothing, when no sampled certificate was drawn (the method then
// makes its exact pass).
func (e *Env) sampledStop(x []float64, attempt *int) (bool, error) {
	c, err := e.sampledCert(x, attempt)
	if err != nil || c == nil {
		return false, err
	}
	if c.Bound <= e.tolAbs {
		c.Delta = e.settings.Certify.Delta
		e.OfferCertificate(x, *c)
	}
	return true, e.RecordBound(x, c.Estimate, c.Bound)
}

// sampledSuccess draws a sampled certificate at x (sampledCert) and, when
// its Bound meets the tolerance, offers it and records x with it, which
// stops the run with Success: it then reports true. Otherwise it records
// nothing and reports false, and the method goes on as without it (with
// its exact pass, say).
func (e *Env) sampledSuccess(x []float64, attempt *int) (bool, error) {
	c, err := e.sampledCert(x, attempt)
	if err != nil || c == nil || !(c.Bound <= e.tolAbs) {
		return false, err
	}
	c.Delta = e.settings.Certify.Delta
	e.OfferCertificate(x, *c)
	return true, e.RecordBound(x, c.Estimate, c.Bound)
}
