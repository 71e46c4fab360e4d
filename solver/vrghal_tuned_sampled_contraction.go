package solver

import "math"

// This file holds the rules of sampled mode that use a known contraction
// γ̄ < 1: the exact check made one step further, at T̃(x̂), and, where no
// sampled estimate can reach Tol, a warm-up by growing sampled estimates
// followed by two exact calls. See docs/vrghal.md, "Sampled mode".

// Tuning constants of sampled mode with γ̄ < 1 (see docs/vrghal.md,
// "Tuning constants").
const (
	// vrSampledTolShare is η in sampled mode with a known contraction:
	// the exact check is made at the next point, whose residual is about
	// the estimate's standard error, so the final estimates aim at a
	// standard error of this share of Tol.
	vrSampledTolShare = 0.7
	// vrFloorGrowth is the factor by which the warm-up estimates grow
	// where sampling cannot reach Tol (see twoCallFloor).
	vrFloorGrowth = 8
)

// sampledContraction is what sampled mode measures of the contraction.
type sampledContraction struct {
	rhoHat float64 // contraction seen on the last inner step, γ̄ before
	rhoUp  float64 // upper estimate of the contraction from the most precise step, NaN before
	rhoErr float64 // its standard error
	warm   bool    // the last epoch was a warm-up estimate (see warmUpFloor)
}

// checkNext reports whether, in the contractive regime, the exact check of
// a sampled bound that misses Tol should be made at the next epoch's first
// point y = T̃(x̂), whose residual is about ρ̂R̃ + se (ρ̂ the contraction the
// inner steps saw), because that meets Tol.
func (r *tunedRun) checkNext() bool {
	s := r.sampled
	c := s.contraction
	return c != nil && c.rhoHat*r.residual+vrSampledZ*s.se <= r.e.Tol()
}

// measureContraction updates c after a sampled inner step of length
// dy = ‖y_j − y_{j−1}‖ > 0 whose two copies of differences, with mean
// r.diff, are d = ‖Δ₁ − Δ₂‖ apart: ρ̂, and the upper estimate ρ̂ plus one
// standard error from the step where that is smallest relative to the step
// (the first, long steps, typically).
func (r *tunedRun) measureContraction(c *sampledContraction, dy, d float64) {
	// ‖T(y_j) − T(y_{j−1})‖ ≈ ‖mean difference‖: the contraction seen
	// on this step (overestimated when noise dominates).
	c.rhoHat = math.Min(r.c.gamma, r.norm.Norm(r.diff)/dy)
	// The mean difference's standard error is ‖Δ₁ − Δ₂‖/2.
	if se := d / 2 / dy; se <= c.rhoErr {
		// ‖mean‖² − ‖Δ₁ − Δ₂‖²/4 estimates ‖T(y_j) − T(y_{j−1})‖².
		dm := r.norm.Norm(r.diff)
		c.rhoErr = se
		c.rhoUp = math.Min(r.c.gamma, math.Sqrt(math.Max(dm*dm-d*d/4, 0))/dy+se)
	}
}

// warmUpFloor returns the standard error a warm-up estimate of the epoch
// from x̂ (residual r0) aims at, or 0 for an ordinary epoch. Where sampling
// cannot reach Tol, a start whose residual is far above its noise
// (vrFloorGrowth times) is not refined by differences (the recursion would
// carry its noise along): the epoch's first point y₁ = T̃(x̂) gets a fresh
// estimate sized by twoCallFloor, and so on while the residual stays above
// the noise, until sampledSettle finds two exact calls enough (warmDone).
// A start already near its noise goes on as an ordinary epoch.
func (r *tunedRun) warmUpFloor(r0 float64) float64 {
	s := r.sampled
	c := s.contraction
	if c == nil {
		return 0
	}
	floor := r.twoCallFloor()
	if floor > 0 && !(s.se > floor && (r0 > vrFloorGrowth*s.se || (c.warm && r0 > s.se))) {
		floor = 0
	}
	c.warm = floor > 0
	return floor
}

// warmUpContraction updates the upper estimate of the contraction after a
// warm-up epoch from a start of residual r0 and standard error se0 to
// x̂ = T̃(x̂_{k−1}): the ratio of the two residuals, each with its
// estimate's variance removed, is the contraction seen along the step (the
// observed ratio of the growing-batch baseline).
func (r *tunedRun) warmUpContraction(r0, se0 float64) {
	s := r.sampled
	c := s.contraction
	num := r.residual*r.residual - s.se*s.se
	den := r0*r0 - se0*se0
	if rho := math.Sqrt(max(num, 0) / den); den > 0 && !(rho >= c.rhoUp) {
		c.rhoUp = math.Min(rho, r.c.gamma)
	}
}

// twoCallFloor returns, in sampled mode in the contractive regime where
// sampling cannot reach Tol (a standard error of Tol/2 would cost more
// than half an exact call, by the measured unit variance), the standard
// error the next warm-up estimate aims at: the current one over
// √vrFloorGrowth (the warm-up is a growing-batch Picard iteration), but no
// smaller than ηTol/ρ̂ (η = vrSampledTolShare, ρ̂ the measured
// contraction), from which two exact calls are predicted to certify (see
// warmDone). It returns 0 when the rule does not apply.
func (r *tunedRun) twoCallFloor() float64 {
	if !r.floorRegime() {
		return 0
	}
	s := r.sampled
	c := s.contraction
	a := s.se / math.Sqrt(vrFloorGrowth)
	if !math.IsNaN(c.rhoUp) {
		a = math.Max(a, vrSampledTolShare*r.e.Tol()/math.Max(c.rhoUp, 1e-300))
	}
	return a
}

// floorRegime reports whether the run is in sampled mode, in the
// contractive regime, with a tolerance that a sampled estimate cannot
// reach: a standard error of Tol/2 would cost more than half an exact
// call by the measured unit variance.
func (r *tunedRun) floorRegime() bool {
	tol := r.e.Tol()
	s := r.sampled
	if s == nil || s.contraction == nil || !(tol > 0) || math.IsNaN(s.vunit) {
		return false
	}
	return 4*s.vunit/(tol*tol) >= float64(r.fs.Terms())/2
}

// warmDone reports whether, in the regime of twoCallFloor, the sampled
// start x̂ (residual R̃, standard error se) is close enough that two exact
// calls are predicted to certify: the next point T̃(x̂) has a residual of
// about r₁ = ρ̂R̃ + se, and one exact step from it about ρ̂r₁ ≤ Tol (the
// estimates aim at ηTol/ρ̂, so this leaves them the slack of their noise).
func (r *tunedRun) warmDone() bool {
	if !r.floorRegime() {
		return false
	}
	s := r.sampled
	c := s.contraction
	if math.IsNaN(c.rhoUp) {
		return false
	}
	r1 := c.rhoUp*r.residual + vrSampledZ*s.se
	return c.rhoUp*r1 <= r.e.Tol()
}

// exactNext follows an exact evaluation at x̂ in sampled mode in the
// contractive regime (r.t0 = T(x̂), r.residual its exact residual): when the
// residual misses Tol but ρ̂ times it meets Tol, ρ̂ the measured contraction
// plus its standard error, x̂ moves to T(x̂) and one exact evaluation there
// gives its exact residual, recorded as a rigorous bound. Success is
// declared only on that exact residual; if it misses Tol the run goes on
// from the new exact epoch start. With γ̄ = 1 it does nothing.
func (r *tunedRun) exactNext() error {
	e, s := r.e, r.sampled
	c := s.contraction
	if c == nil || s.se != 0 || math.IsNaN(c.rhoUp) || !(r.residual > e.Tol()) || c.rhoUp*r.residual > e.Tol() {
		return nil
	}
	if !e.CanDraw(int64(r.fs.Terms())) {
		return e.Stop(SampleLimit, nil)
	}
	copy(r.xhat, r.t0)
	if err := r.exactInto(r.t0, r.xhat); err != nil {
		return err
	}
	r.residual = e.Dist(r.t0, r.xhat)
	return r.recordEst(vrEstimate{radius: 0, rigorous: true})
}
