package solver

import (
	"fmt"
	"math"
)

// This file holds the run of VR-GHAL with TunedConstants: its state, the
// pilot estimate and the alignment of the schedule to Tol, the δ allocation,
// and the epoch every regime shares. The rules that differ between regimes
// are chosen once per run (tunedRules, vrghal_tuned_rules.go); sampled mode,
// on a finite sum that declares no variance, has its own estimates and
// epochs (vrghal_tuned_sampled.go). See docs/vrghal.md, "The tuned schedule".

// Tuning constants of the plan and of the δ allocation (see docs/vrghal.md,
// "Tuning constants").
const (
	// vrTolShare is η: with a tolerance in force, the schedule is aligned
	// so that the epoch-start estimate of the planned epoch K* has radius
	// η·Tol, leaving 1 − η of Tol to the residual it measures.
	vrTolShare = 0.4
	// vrMaxPlan is the largest planned number of epochs; a tolerance
	// further away leaves the schedule unaligned (K* = 0).
	vrMaxPlan = 40
	// vrPilotWeight is the weight w₀ of the pilot estimate in the δ
	// allocation (see tunedRun.weight).
	vrPilotWeight = 1.0 / 4
	// vrInnerDelta is the share of δ given to the inner steps' martingale
	// events; the rest, 1 − vrInnerDelta, goes to the epoch-start
	// estimates and is the Delta of the run's own certificate.
	vrInnerDelta = 0.1
)

// tunedRun is the state of a VR-GHAL run with TunedConstants.
type tunedRun struct {
	*vrRun
	fs    FiniteSum  // nil unless the oracle declares a finite sum
	rules tunedRules // the rules of the run's regime, chosen once
	// sampled is the state of sampled mode, nil unless the oracle is a
	// finite sum that declares no variance.
	sampled *sampledMode
	eps0    float64 // ε₀, from the pilot estimate
	lbar0   float64 // λ̄₀
	plan    int     // K*, the epoch whose estimate the δ allocation favours
	// The accuracy schedule, which the scheduling rule moves: epoch k is
	// epoch k − cycle of the run from the current anchor, at accuracy
	// level level0 + k − cycle (see level).
	cycle   int     // the epoch whose point is the current anchor (0: x0)
	level0  int     // accuracy level of the anchor's run at its epoch 0
	anchorB float64 // residual bound (or estimate) at the anchor
	lastB   float64 // residual bound (or estimate) of the last recorded point
	lastLvl int     // accuracy level of the last epoch-start estimate
	// The epoch-start estimates (see estimate).
	vhat    float64   // plug-in unit variance when the oracle declares none
	lastEst float64   // samples of the last epoch-start estimate
	lastAim float64   // the radius it aimed at
	gm      []float64 // geometric median candidate
	diff    []float64
	row     []float64
}

// newTunedRun returns a tuned run of e with settings c: sampled mode when the
// oracle is a finite sum of more than one term that declares no variance at
// x0, and the rules of its regime (chooseTunedRules).
func newTunedRun(e *Env, c vrConfig) *tunedRun {
	r := &tunedRun{vrRun: newVRRun(e, c), lbar0: c.lambda0}
	r.fs, _ = e.Oracle().(FiniteSum)
	n := e.Len()
	r.gm, r.diff = make([]float64, n), make([]float64, n)
	if r.fs != nil && !r.det && r.fs.Terms() > 1 && math.IsInf(declaredVariance(e.Oracle(), e.X0(), r.norm), 1) {
		r.sampled = newSampledMode(n, c)
	}
	r.rules = chooseTunedRules(c, r.sampled != nil)
	return r
}

// weight returns the weight w_k of epoch k in the δ allocation: the
// estimate at x̂_k (k ≥ 0) fails with probability at most
// (1 − vrInnerDelta)·δ·w_k (deltaEst) and the inner steps of epoch k ≥ 1
// with vrInnerDelta·δ·w_k (deltaIn), the weights summing to at most 1 over
// all k: w₀ = 1/4 for the pilot (made before K* is known, so its weight
// must not depend on it),
// w_k = 2^{−(K*−k+2)} for 1 ≤ k ≤ K* (less than 1/2 in all, most of it on
// the planned last epochs, whose estimates are the largest) and
// w_k = 3/(2π²(k−K*)²) after it (1/4 in all), so that Σ_k δ_k ≤ δ for
// every run length (the reference paper's summable δ_k, reallocated). k is
// the global epoch counter, restarts and repeats included, so the shares
// of a restarted run are still distinct terms of this one sum.
// Measured against a pilot weight of 1/16 with 7/16 after K*, this split
// certifies mdp at ε = 1e-2 and 3.2e-3 with 4% and 16% fewer samples and
// mdp-large at 3.2e-3 with 5% more (see docs/vrghal.md).
func (r *tunedRun) weight(k int) float64 {
	if k == 0 {
		return vrPilotWeight
	}
	if k <= r.plan {
		return math.Ldexp(1, -(r.plan - k + 2))
	}
	d := float64(k - r.plan)
	return (1 - vrPilotWeight - 0.5) * 6 / (math.Pi * math.Pi * d * d)
}

// deltaEst returns the failure probability of the estimate at x̂_k.
func (r *tunedRun) deltaEst(k int) float64 { return (1 - vrInnerDelta) * r.c.delta * r.weight(k) }

// deltaIn returns the failure probability of epoch k's inner steps.
func (r *tunedRun) deltaIn(k int) float64 { return vrInnerDelta * r.c.delta * r.weight(k) }

// accuracy returns a_k = ε_{k+1}/2, the radius the estimate at x̂_k aims
// at (the paper's median-of-means accuracy, in absolute units), with ε
// indexed by the accuracy level of epoch k (k itself until a restart).
func (r *tunedRun) accuracy(k int) float64 {
	return r.eps0 * math.Pow(r.c.beta, float64(r.level(k)+1)) / 2
}

// level returns the accuracy level of epoch k: epoch k of the run from x0
// is at level k, and after a restart epoch k is epoch k − cycle of the
// anchor's run, at level level0 + k − cycle.
func (r *tunedRun) level(k int) int { return r.level0 + k - r.cycle }

// run runs the pilot estimate at x0, derives ε₀ from it and aligns the
// schedule to Tol (align), then the epochs until a stop.
func (r *tunedRun) run() error {
	e := r.e
	e.KeepLast()
	copy(r.xhat, e.X0())
	// Pilot: the first estimate, at an accuracy of half the unit noise
	// scale (one unit sample's standard deviation when declared), with the
	// largest δ share it could get.
	r.plan = 0
	pilot, err := r.pilotAccuracy()
	if err != nil {
		return err
	}
	est, err := r.estimate(r.t0, r.xhat, pilot, r.deltaEst(0), 0)
	if err != nil {
		return err
	}
	r.residual = e.Dist(r.t0, r.xhat)
	if s := r.sampled; s != nil {
		// The pilot's error inflates its residual: ε₀ is that of the
		// sampled bound, the scale the first epochs must cover.
		r.residual += vrSampledZ * s.se
	}
	// ε₀ from the pilot: the residual scale, and at least what makes the
	// pilot's radius the paper's ε₁/2 (the Master Theorem holds for any ε₀).
	r.eps0 = r.residual
	if est.rigorous && r.c.beta*r.eps0/2 < est.radius {
		r.eps0 = 2 * est.radius / r.c.beta
	}
	if !(r.eps0 > 0) || math.IsInf(r.eps0, 0) {
		r.eps0 = r.c.eps0
	}
	r.align()
	r.residual = e.Dist(r.t0, r.xhat)
	if err := r.settle(est); err != nil {
		return err
	}
	r.anchorB = r.lastB
	for k := 1; ; k++ {
		if err := r.tunedEpoch(k); err != nil {
			return err
		}
	}
}

// align sets K* and rescales ε₀ upwards so that the estimate at x̂_{K*} has
// radius a_{K*} = η·Tol exactly, when a tolerance below the pilot's scale is
// in force; otherwise K* is 0.
func (r *tunedRun) align() {
	tol := r.e.Tol()
	r.plan = 0
	if !(tol > 0) || math.IsNaN(tol) {
		return
	}
	target := vrTolShare * tol
	a0 := r.accuracy(0)
	if a0 <= target {
		return
	}
	k := int(math.Ceil(math.Log(a0/target) / math.Log(1/r.c.beta)))
	if k > vrMaxPlan {
		return // out of reach of a plan: δ_k ∝ 1/k² from the start
	}
	r.plan = k
	r.eps0 = target / (math.Pow(r.c.beta, float64(k+1)) / 2)
}

// recordEst records x̂ with R̃ and its rigorous bound R̃ + ρ (+Inf when the
// estimate has no guarantee).
//
// A drawn rigorous estimate is also offered to Solve as the certificate of
// x̂ (Env.OfferCertificate), with Delta = 0.9δ: the estimates' share of δ,
// Σ_k δ'_k ≤ 0.9δ. That sum, not the δ'_k of x̂'s own estimate, is what the
// bound at a data-chosen stopping epoch K fails with: it fails only if the
// estimate of epoch K does, and P(estimate K fails and the run stops at K)
// summed over K is at most Σ_k P(estimate k fails). The estimate's samples
// are fresh at x̂ (drawn after x̂ was fixed), as a certificate's are.
func (r *tunedRun) recordEst(est vrEstimate) error {
	bound := math.Inf(1)
	if est.rigorous {
		bound = r.residual + est.radius
	}
	r.lastB = bound
	if math.IsInf(bound, 1) {
		r.lastB = r.residual // no bound: the estimate decides restarts
	}
	if est.rule.Rigorous() {
		r.e.OfferCertificate(r.xhat, Certificate{
			Estimate: r.residual, Bound: bound, Delta: (1 - vrInnerDelta) * r.c.delta,
			Samples: est.samples, Calls: est.calls, Rule: est.rule,
		})
	}
	return r.e.RecordBound(r.xhat, r.residual, bound)
}

// exactInto evaluates T(x) exactly into dst: one oracle call for a
// deterministic model, else the finite sum's EvalExact, counted as one
// call of Terms() unit samples.
func (r *tunedRun) exactInto(dst, x []float64) error {
	if r.det {
		return r.e.Eval(dst, x, Sample{Size: 1})
	}
	return r.e.evalFiniteSum(dst, x, r.fs)
}

// settle records x̂ after its estimate est, R̃ = r.residual: with its
// rigorous bound (recordEst), or by sampled mode's rule (sampledSettle).
func (r *tunedRun) settle(est vrEstimate) error {
	if r.sampled != nil {
		return r.sampledSettle(est)
	}
	return r.recordEst(est)
}

// tunedEpoch runs epoch k from x̂_{k−1} = r.xhat with T̃_{k−1,0} = r.t0 and
// records x̂_k. The scheduling rule may first move the accuracy schedule and
// the anchoring rule gives λ̄_k; then sampled mode runs its own epoch
// (sampledEpoch), or the epoch runs here: as long as the length rule allows,
// with the Master Theorem's n_k copies of the model's m_{k,j} as the balance
// rule enlarges it, and a closing estimate at a_k or where the balance rule
// moves it. See docs/vrghal.md, "The tuned schedule".
func (r *tunedRun) tunedEpoch(k int) error {
	e, c := r.e, &r.c
	r.rules.schedule.before(r, k)
	epsK := r.eps0 * math.Pow(c.beta, float64(r.level(k)))
	lbar := r.rules.anchor.lambdaBar(r, k)
	lam := lbar / (1 + lbar)
	rho := c.gamma * (1 - lam)
	rate := math.Log1p(-lam) + math.Log(c.gamma)
	if rate == 0 {
		return e.Stop(SampleLimit, fmt.Errorf("epoch %d needs infinitely many inner steps (λ_k underflows)", k))
	}
	steps, err := drawCount(math.Log(c.beta)/rate, "J_k inner steps", k)
	if err != nil {
		return e.Stop(SampleLimit, err)
	}
	if r.sampled != nil {
		return r.sampledEpoch(k, lam, lbar, steps)
	}
	start := e.Stats().Samples
	// The cap on the inner steps, and the early end at endShare·R̃_{k−1}
	// (+ the anchoring term).
	steps, endShare := r.rules.length.plan(r, k, steps)
	// Sizes of the inner steps: the Master Theorem's n_k, and m_{k,j} of the
	// model's lemma times SampleScale, which the balance rule may enlarge.
	din := r.deltaIn(k)
	rPrev := r.residual
	copies, batch := 1, 1
	if !r.det {
		if copies, err = drawCount(2*(1-lam)*c.gamma*rPrev*math.Log(4/din)/(3*epsK), "n_k copies", k); err != nil {
			return e.Stop(SampleLimit, err)
		}
		var m float64
		switch c.model {
		case BoundedVariance:
			j := float64(steps)
			m = 4 * j * j / (epsK * epsK)
		case LipschitzInExpectation:
			m = 4 * rPrev * rPrev / (epsK * epsK * (1 - rho) * (1 - rho))
		default:
			m = 4 * rPrev * rPrev / (epsK * epsK * (1 - rho))
		}
		m = r.rules.balance.innerBatch(r, m*c.scale, k, copies, steps)
		if batch, err = drawCount(m, "a minibatch m_{k,j}", k); err != nil {
			return e.Stop(SampleLimit, err)
		}
	}
	exactSteps := r.det || (r.fs != nil && 2*float64(copies)*float64(batch) >= float64(r.fs.Terms()))
	copy(r.y0, r.xhat)
	copy(r.tt, r.t0)
	copy(r.yPrev, r.y0)
	r0 := r.residual
	p := vrEpoch{k: k, steps: steps, copies: copies, batch: batch, lambda: lam}
	for j := 1; ; j++ {
		for i, a := range r.y0 {
			r.yCur[i] = lam*a + (1-lam)*r.tt[i]
		}
		if j == steps {
			break
		}
		if exactSteps {
			if err := r.exactInto(r.tt, r.yCur); err != nil {
				return err
			}
		} else {
			if !r.fits(2 * float64(copies) * float64(batch)) {
				return e.Stop(SampleLimit, nil)
			}
			if err := r.step(&p, c.gamma*e.Dist(r.yCur, r.yPrev)); err != nil {
				return err
			}
		}
		r.yPrev, r.yCur = r.yCur, r.yPrev
		// Early epoch end: the first inequality of the paper's basic GHAL
		// lemma, checked on the running estimate, ends the epoch early.
		if e.Dist(r.tt, r.yPrev) <= endShare*r0+lbar*e.Dist(r.yPrev, r.y0) {
			r.yCur, r.yPrev = r.yPrev, r.yCur
			break
		}
	}
	aim := r.rules.balance.aim(r, r.accuracy(k), float64(e.Stats().Samples-start))
	est, err := r.estimate(r.t0, r.yCur, aim, r.deltaEst(k), k)
	if err != nil {
		return err
	}
	r.lastLvl = r.level(k)
	r.xhat, r.yCur = r.yCur, r.xhat
	r.residual = e.Dist(r.t0, r.xhat)
	// The anchoring term of the basic GHAL lemma's first inequality, against
	// the accuracy of the epoch's estimate (see anchorRule).
	r.rules.anchor.observe(lbar*e.Dist(r.xhat, r.y0) > r.accuracy(k))
	return r.settle(est)
}
