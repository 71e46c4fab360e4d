package solver

import "math"

// This file holds sampled mode, the tuned schedule of a finite sum that
// declares neither a VarianceBound nor a NoiseBound (a DEQ cell's average
// over its M terms, say): no sampled estimate has a guarantee, so no event
// of the Master Theorem is at stake and the sizes follow measurements
// instead of the lemmas. Success is always an exact residual. The rules that
// use a known contraction γ̄ < 1 are in vrghal_tuned_sampled_contraction.go.
// See docs/vrghal.md, "Sampled mode".

// Tuning constants of sampled mode (see docs/vrghal.md, "Tuning
// constants").
const (
	// vrSampledZ multiplies the measured standard error of a sampled
	// estimate in the sampled bound R̃ + Z·se.
	vrSampledZ = 1
	// vrVarianceHalf is the smallest half size (or M/64 if smaller) whose
	// measured variance may decide that sampling cannot reach Tol.
	vrVarianceHalf = 64
	// vrPilotSize is the size of the pilot estimate when nothing sizes it:
	// two halves of vrPilotSize/2 unit samples.
	vrPilotSize = 16
)

// sampledMode is the state of sampled mode: what it has measured.
type sampledMode struct {
	vunit float64    // measured unit variance E‖τ(x; ξ) − T(x)‖², NaN before the pilot
	vhalf int        // the half size vunit was measured with
	se    float64    // measured standard error of the last estimate; 0 if exact
	qdiff float64    // measured E‖Δ‖²/‖Δy‖² of one unit difference, γ̄² before
	qsum  [2]float64 // its pooled numerator and denominator
	half  []float64  // an estimate's second half, or Δ₁ − Δ₂ of a step
	tries int        // sampled certificates drawn (see Env.sampledStop)
	// contraction is the state of the rules that use a known contraction
	// (γ̄ < 1); nil with γ̄ = 1.
	contraction *sampledContraction
}

// newSampledMode returns the state of sampled mode for points of length n
// under settings c.
func newSampledMode(n int, c vrConfig) *sampledMode {
	s := &sampledMode{vunit: math.NaN(), qdiff: c.gamma * c.gamma, half: make([]float64, n)}
	if c.contractive() {
		s.contraction = &sampledContraction{rhoHat: c.gamma, rhoUp: math.NaN(), rhoErr: math.Inf(1)}
	}
	return s
}

// sampledSettle records x̂ after its estimate est, R̃ = r.residual, in
// sampled mode. A sampled bound R̃ + Z·se at most Tol is checked by one exact
// evaluation at x̂, which becomes the estimate (radius 0): its exact
// residual is recorded as a rigorous bound, so that the run stops with
// Success if it meets Tol and otherwise goes on from an exact epoch start.
// A sampled estimate is recorded with the residual R̃ + Z·se and no bound.
func (r *tunedRun) sampledSettle(est vrEstimate) error {
	s := r.sampled
	if est.rigorous {
		if err := r.recordEst(est); err != nil {
			return err
		}
		return r.exactNext()
	}
	e := r.e
	b := r.residual + vrSampledZ*s.se
	// With γ̄ < 1 the check may be made at the next point (checkNext).
	next := b > e.Tol() && r.checkNext()
	// Where sampling cannot reach Tol, the warm-up ends when two exact
	// calls are predicted to certify (warmDone): the check is made at the
	// next point, and exactNext follows.
	if !next && b > e.Tol() && r.warmDone() {
		next = true
	}
	if !next && (b > e.Tol() || math.IsNaN(e.Tol())) {
		return e.RecordBound(r.xhat, b, math.Inf(1))
	}
	if !next {
		// Under Settings.Certify.Sampled the check is a sampled
		// certificate when that is cheaper than the exact pass: one that
		// meets Tol stops the run with Success, a larger one is recorded
		// and the run goes on without an exact pass.
		if drawn, err := e.sampledStop(r.xhat, &s.tries); drawn || err != nil {
			return err
		}
	}
	if !e.CanDraw(int64(r.fs.Terms())) {
		return e.Stop(SampleLimit, nil)
	}
	if next {
		if err := e.RecordBound(r.xhat, b, math.Inf(1)); err != nil {
			return err
		}
		copy(r.xhat, r.t0)
		// Under Settings.Certify.Sampled a sampled certificate at the
		// next point that meets Tol stops the run without the exact
		// evaluation; one that does not is followed by it.
		if ok, err := e.sampledSuccess(r.xhat, &s.tries); ok || err != nil {
			return err
		}
	}
	if err := r.exactInto(r.t0, r.xhat); err != nil {
		return err
	}
	s.se = 0
	r.residual = e.Dist(r.t0, r.xhat)
	if err := r.recordEst(vrEstimate{radius: 0, rigorous: true}); err != nil {
		return err
	}
	return r.exactNext()
}

// sampledEstimate writes into dst the estimate of T(x) of sampled mode:
// the mean of two independent halves of N = v̂/a² unit samples, v̂ the unit
// variance measured by the previous sampled estimate (the pilot uses
// vrPilotSize samples), or one exact evaluation (see docs/vrghal.md,
// "Sampled mode", for when). sizedByFloor reports that the estimate is a
// warm-up estimate sized by twoCallFloor. It measures the standard error
// ‖τ_a − τ_b‖/2 and the unit variance of the new estimate.
func (r *tunedRun) sampledEstimate(dst, x []float64, a float64, k int, sizedByFloor bool) (vrEstimate, error) {
	e, s := r.e, r.sampled
	terms := float64(r.fs.Terms())
	n := float64(vrPilotSize)
	if !math.IsNaN(s.vunit) && a > 0 {
		n = s.vunit / (a * a)
	}
	// Exact once the sampled estimate would cost half an exact call (a
	// sampled bound meeting Tol is followed by one), or, when sampling
	// cannot reach Tol (a standard error of Tol/2 would cost half an
	// exact call), once it costs more than the first inner step after an
	// exact start here would (2q̂R̃²/(ηTol)²).
	fin := r.sampledFinalAccuracy(k)
	diff := math.Min(terms, 2*s.qdiff*r.residual*r.residual/(fin*fin))
	unreachable := !sizedByFloor && float64(s.vhalf) >= math.Min(vrVarianceHalf, terms/64) && 4*s.vunit/(r.e.Tol()*r.e.Tol()) >= terms/2
	if !(n < terms/2) || (unreachable && n >= diff) {
		if !e.CanDraw(int64(terms)) {
			return vrEstimate{}, e.Stop(SampleLimit, nil)
		}
		s.se = 0
		return vrEstimate{radius: 0, rigorous: true}, r.exactInto(dst, x)
	}
	half, err := drawCount(n/2, "an estimate's sample size", k)
	if err != nil {
		return vrEstimate{}, e.Stop(SampleLimit, err)
	}
	if !r.fits(2 * float64(half)) {
		return vrEstimate{}, e.Stop(SampleLimit, nil)
	}
	if err := e.Eval(dst, x, Sample{Seed: e.Seed(), Size: half}); err != nil {
		return vrEstimate{}, err
	}
	if err := e.Eval(s.half, x, Sample{Seed: e.Seed(), Size: half}); err != nil {
		return vrEstimate{}, err
	}
	for i, v := range s.half {
		dst[i], s.half[i] = (dst[i]+v)/2, dst[i]-v
	}
	d := r.norm.Norm(s.half)
	s.se = d / 2
	// E‖τ_a − τ_b‖² = 2v/h for halves of h unit samples (in a Hilbert
	// norm; an estimate elsewhere, used only to size the next estimate).
	s.vunit = d * d * float64(half) / 2
	s.vhalf = half
	return vrEstimate{radius: math.Inf(1)}, nil
}

// sampledStep updates T̃_j = T̃_{j−1} + (Cl(Δ₁) + Cl(Δ₂))/2 in sampled mode
// for y_j = r.yCur and y_{j−1} = r.yPrev: two copies of m unit
// differences, m = q̂‖y_j − y_{j−1}‖²/budget, q̂ the measured unit
// difference variance per squared step (γ̄² before the first
// measurement), so that the step adds a variance of about budget/2; a
// single exact evaluation (T̃_j = T(y_j)) once 2m would reach Terms().
// Where sampling cannot reach Tol (see twoCallFloor), a pilot of
// vrPilotSize differences measures q̂ before the first step is sized. It
// measures q̂, pooled over the run, from the spread of the two copies, and,
// with γ̄ < 1, the contraction (measureContraction), and returns the variance the step adds, or −1 after
// an exact evaluation.
func (r *tunedRun) sampledStep(budget float64, k int) (float64, error) {
	e, s := r.e, r.sampled
	dy := e.Dist(r.yCur, r.yPrev)
	terms := float64(r.fs.Terms())
	m := 0
	if s.qsum[1] == 0 && dy > 0 && r.floorRegime() && 2*vrPilotSize < terms && 2*s.qdiff*dy*dy/budget > vrPilotSize {
		// Where sampling cannot reach Tol the first step comes after an
		// exact call, and the prior γ̄² would make it another: a pilot of
		// two copies of vrPilotSize/2 differences measures q̂ first, and
		// is the step when it is large enough.
		m = vrPilotSize / 2
		if !r.fits(4 * float64(m)) {
			return 0, e.Stop(SampleLimit, nil)
		}
		if err := r.drawDifference(m, dy); err != nil {
			return 0, err
		}
		if 2*s.qdiff*dy*dy/budget > 2*float64(m) {
			m = 0 // drawn anew at the measured size
		}
	}
	if m == 0 {
		n := 2 * s.qdiff * dy * dy / budget
		// Where sampling cannot reach Tol an exact call follows anyway: a
		// step costing half of one (2n unit samples) is that call.
		if !(n < terms) || (r.floorRegime() && 4*n >= terms) {
			if !e.CanDraw(int64(r.fs.Terms())) {
				return 0, e.Stop(SampleLimit, nil)
			}
			return -1, r.exactInto(r.tt, r.yCur)
		}
		var err error
		if m, err = drawCount(n/2, "a minibatch m_{k,j}", k); err != nil {
			return 0, e.Stop(SampleLimit, err)
		}
		if !r.fits(4 * float64(m)) {
			return 0, e.Stop(SampleLimit, nil)
		}
		if err := r.drawDifference(m, dy); err != nil {
			return 0, err
		}
	}
	for i, v := range r.diff {
		r.tt[i] += v
	}
	// E‖Δ₁ − Δ₂‖² = 2q‖Δy‖²/m; the mean of the copies adds q‖Δy‖²/(2m).
	d := r.norm.Norm(s.half)
	if c := s.contraction; c != nil && dy > 0 {
		r.measureContraction(c, dy, d)
	}
	return d * d / 4, nil
}

// drawDifference draws two copies Δ₁, Δ₂ of m unit differences
// τ(y_j; ξ) − τ(y_{j−1}; ξ), each clipped to γ̄‖y_j − y_{j−1}‖ = γ̄·dy,
// leaves their mean in r.diff and Δ₁ − Δ₂ in r.sampled.half, and pools the
// measured q̂ (Σ‖Δ₁ − Δ₂‖²m/2 / Σ‖Δy‖²).
func (r *tunedRun) drawDifference(m int, dy float64) error {
	e, s := r.e, r.sampled
	radius := r.c.gamma * dy
	for _, d := range [][]float64{r.acc, s.half} {
		smp := Sample{Seed: e.Seed(), Size: m}
		if err := e.Eval(r.tau1, r.yCur, smp); err != nil {
			return err
		}
		if err := e.Eval(r.tau2, r.yPrev, smp); err != nil {
			return err
		}
		subInto(d, r.tau1, r.tau2)
		clipDifference(d, d, radius, r.norm)
	}
	for i, v := range r.acc {
		r.diff[i] = (v + s.half[i]) / 2
		s.half[i] = v - s.half[i]
	}
	if dy > 0 {
		d := r.norm.Norm(s.half)
		s.qsum[0] += d * d * float64(m) / 2
		s.qsum[1] += dy * dy
		s.qdiff = s.qsum[0] / s.qsum[1]
	}
	return nil
}

// sampledEpoch runs epoch k in sampled mode from x̂_{k−1} = r.xhat with
// T̃_{k−1,0} = r.t0 of standard error se, with anchoring λ and at most
// steps steps (see docs/vrghal.md, "Sampled mode"), and records x̂_k. The
// inner steps add noise of about max{ηTol, se}: no more than the start
// carries, or the final accuracy after an exact start. The estimate at x̂_k
// continues the recursion while its accumulated error is within a_k, and is
// otherwise a fresh sampled estimate (exact once too large).
func (r *tunedRun) sampledEpoch(k int, lam, lbar float64, steps int) error {
	e, s := r.e, r.sampled
	fin := r.sampledFinalAccuracy(k)
	ak := math.Max(r.accuracy(k), fin)
	aIn := math.Max(fin, s.se)
	errVar := s.se * s.se
	added := 0.0 // variance the steps added since the last exact evaluation
	copy(r.y0, r.xhat)
	copy(r.tt, r.t0)
	copy(r.yPrev, r.y0)
	r0, se0 := r.residual, s.se
	atCur := false // r.tt estimates T(r.yCur)
	// With γ̄ < 1 where sampling cannot reach Tol, the epoch may be a
	// warm-up estimate instead (warmUpFloor).
	floor := r.warmUpFloor(r0)
	step := func() error {
		// Half of what is left of the budget aIn², so that the steps
		// of an epoch add at most aIn² in all, most of it on its first
		// steps, whose differences are the largest.
		v, err := r.sampledStep(math.Max(aIn*aIn-added, aIn*aIn/1024), k)
		if v < 0 {
			errVar, added = 0, 0
		} else {
			errVar += v
			added += v
		}
		return err
	}
	for j := 1; ; j++ {
		for i, a := range r.y0 {
			r.yCur[i] = lam*a + (1-lam)*r.tt[i]
		}
		if j == steps || floor > 0 {
			break
		}
		if err := step(); err != nil {
			return err
		}
		r.yPrev, r.yCur = r.yCur, r.yPrev
		if e.Dist(r.tt, r.yPrev) <= r.c.beta*r0+lbar*e.Dist(r.yPrev, r.y0) {
			r.yCur, r.yPrev = r.yPrev, r.yCur
			atCur = true
			break
		}
	}
	est := vrEstimate{radius: math.Inf(1)}
	if floor > 0 {
		ak = math.Max(floor, fin)
		errVar = math.Inf(1)
	}
	switch {
	case errVar > ak*ak:
		var err error
		if est, err = r.sampledEstimate(r.t0, r.yCur, ak, k, floor > 0); err != nil {
			return err
		}
	default:
		if !atCur {
			if err := step(); err != nil {
				return err
			}
		}
		copy(r.t0, r.tt)
		s.se = math.Sqrt(errVar)
		est.rigorous = errVar == 0
		if est.rigorous {
			est.radius = 0
		}
	}
	r.xhat, r.yCur = r.yCur, r.xhat
	r.residual = e.Dist(r.t0, r.xhat)
	if floor > 0 {
		r.warmUpContraction(r0, se0)
	}
	return r.settle(est)
}

// sampledFinalAccuracy returns ηTol, the accuracy sampled mode needs at
// the run's end (η = vrSampledTolShare with γ̄ < 1, where the exact check
// may be made at the next point, vrTolShare otherwise), or a_k when no
// tolerance is in force.
func (r *tunedRun) sampledFinalAccuracy(k int) float64 {
	if tol := r.e.Tol(); tol > 0 {
		if r.sampled.contraction != nil {
			return vrSampledTolShare * tol
		}
		return vrTolShare * tol
	}
	return r.accuracy(k)
}
