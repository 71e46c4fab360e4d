package solver

import (
	"fmt"
	"math"
)

// Tuned constants of VR-GHAL (see VRGHAL, Constants).
const (
	// vrTolShare is η: with a tolerance in force, the schedule is aligned
	// so that the epoch-start estimate of some epoch K has radius η·Tol.
	vrTolShare = 0.4
	// vrInnerShare is ω: under the Lipschitz-in-expectation and samplewise
	// models the inner minibatches are enlarged until the inner steps of
	// an epoch draw about ω times the samples of its closing estimate.
	vrInnerShare = 0.5
	// vrPilotWeight is the weight w₀ of the pilot estimate in the δ
	// allocation (see tunedRun.weight).
	vrPilotWeight = 1.0 / 4
	// vrInnerDelta is the share of δ given to the inner steps' martingale
	// events; the rest goes to the epoch-start estimates.
	vrInnerDelta = 0.1
	// vrMaxPlan is the largest planned number of epochs; a tolerance
	// further away leaves the schedule unaligned.
	vrMaxPlan = 40
	// vrWeiszfeld is the number of Weiszfeld steps of the geometric median.
	vrWeiszfeld = 50
	// vrSampledZ multiplies the measured standard error of a sampled
	// estimate in the sampled bound of an undeclared finite sum.
	vrSampledZ = 1
	// vrSampledTolShare is η in sampled mode with a known contraction:
	// the exact check is made at the next point, whose residual is about
	// the estimate's standard error, so the final estimates aim at a
	// standard error of this share of Tol.
	vrSampledTolShare = 0.7
	// vrVarianceHalf is the smallest half size (or M/64 if smaller) whose
	// measured variance may decide that sampling cannot reach Tol.
	vrVarianceHalf = 64
	// vrPilotSize is the size of the pilot estimate when nothing sizes it:
	// two halves of vrPilotSize/2 unit samples.
	vrPilotSize = 16
	// vrFloorGrowth is the factor by which the warm-up estimates grow
	// where sampling cannot reach Tol (see twoCallFloor).
	vrFloorGrowth = 8
	// vrRestartFactor is the fraction of the residual bound at the current
	// anchor below which an epoch start becomes the new anchor (see
	// VRGHAL, Restarts).
	vrRestartFactor = 0.5
	// vrRepeatFactor is the factor of Tol within which a missed bound at
	// or past the planned epoch K* of a contractive run repeats the
	// accuracy level once (see VRGHAL, Restarts).
	vrRepeatFactor = 1.5
	// vrFinalSteps is the factor by which a final epoch (at or past the
	// planned level K* of a contractive run, or K* − vrLongLead with
	// γ̄ = 1) may exceed J_k inner steps (see tunedRun.finalEpoch).
	vrFinalSteps = 8
	// vrLongLead is the number of levels before K* at which the final
	// epochs of a run with γ̄ = 1 (restarts on) begin to run long (see
	// tunedRun.finalEpoch).
	vrLongLead = 4
	// vrFinalShare is θ: a final epoch (at or past K* of a contractive
	// run, or from K* − vrLongLead with γ̄ = 1, where the anchoring term
	// counts too; see tunedRun.finalEpoch) ends once its running residual
	// is at most min{βR̃_{k−1}, θ·Tol}, half of
	// the room 1 − η that the closing radius ηTol leaves below Tol (the
	// other half is for the error its start estimate carries).
	vrFinalShare = (1 - vrTolShare) / 2
	// vrEstShare is the share of an epoch's inner samples below which,
	// under BoundedVariance, its closing estimate is enlarged (see
	// tunedRun.balancedAim). The value was not tuned: it bounds the
	// rule's extra cost to a tenth of the inner steps' samples.
	vrEstShare = 0.1
)

// tunedRun is the state of a VR-GHAL run with TunedConstants.
type tunedRun struct {
	*vrRun
	fs      FiniteSum // nil unless the oracle declares a finite sum
	eps0    float64   // ε₀, from the pilot estimate
	lbar0   float64   // λ̄₀
	plan    int       // K*, the epoch whose estimate the δ allocation favours
	contr   bool      // contractive regime: γ̄ < 1, λ_k = 0
	vhat    float64   // plug-in unit variance when the oracle declares none
	lastEst float64   // samples of the last epoch-start estimate
	lastAim float64   // the radius it aimed at
	lastLvl int       // accuracy level of the last epoch-start estimate
	// Restarts (see VRGHAL, Restarts): epoch k is epoch k − cycle of the
	// current anchor's run, at accuracy level level0 + k − cycle.
	restart  bool    // restarts are on
	cycle    int     // the epoch whose point is the current anchor (0: x0)
	level0   int     // accuracy level of the anchor's run at its epoch 0
	anchorB  float64 // residual bound (or estimate) at the anchor
	lastB    float64 // residual bound (or estimate) of the last recorded point
	restarts int     // restarts made
	repeated int     // the level last repeated by maybeRepeat, 0 if none
	long     bool    // final epochs run long (see finalEpoch)
	balance  bool    // closing estimates are balanced (see balancedAim)
	lbar     float64 // λ̄ of the last epoch (see anchoring)
	anchored bool    // its anchoring term exceeded its accuracy a_k
	// Sampled mode (an undeclared finite sum; see VRGHAL, Constants).
	sampled bool
	vunit   float64    // measured unit variance E‖τ(x; ξ) − T(x)‖², NaN before the pilot
	vhalf   int        // the half size vunit was measured with
	se      float64    // measured standard error of the last estimate; 0 if exact
	qdiff   float64    // measured E‖Δ‖²/‖Δy‖² of one unit difference
	qsum    [2]float64 // its pooled numerator and denominator
	rhoHat  float64    // contraction seen on the last inner step, γ̄ before
	rhoUp   float64    // upper estimate of the contraction from the most precise step, NaN before
	rhoErr  float64    // its standard error
	floor   bool       // the estimate is sized by twoCallFloor
	warm    bool       // the last epoch was a warm-up estimate (see sampledEpoch)
	half    []float64
	gm      []float64 // geometric median candidate
	diff    []float64
	row     []float64
}

func newTunedRun(e *Env, c vrConfig) *tunedRun {
	r := &tunedRun{vrRun: newVRRun(e, c), lbar0: c.lambda0}
	r.fs, _ = e.Oracle().(FiniteSum)
	r.contr = c.gamma < 1
	n := e.Len()
	r.gm, r.diff = make([]float64, n), make([]float64, n)
	if r.fs != nil && !r.det && r.fs.Terms() > 1 {
		o, x := e.Oracle(), e.X0()
		r.sampled = math.IsInf(declaredVariance(o, x, r.norm), 1)
	}
	r.vunit, r.qdiff, r.rhoHat = math.NaN(), c.gamma*c.gamma, c.gamma
	r.rhoUp, r.rhoErr = math.NaN(), math.Inf(1)
	r.half = make([]float64, n)
	r.restart = !r.contr && !r.sampled
	r.long = true
	r.balance = !r.multi && !r.det
	return r
}

// deltaEst returns the failure probability of the estimate at x̂_k (k ≥ 0)
// and deltaIn that of the inner steps of epoch k ≥ 1. Both are shares of
// weights w_k summing to at most 1 over all k: w₀ = 1/4 for the pilot
// (made before K* is known, so its weight must not depend on it),
// w_k = 2^{−(K*−k+2)} for 1 ≤ k ≤ K* (less than 1/2 in all, most of it on
// the planned last epochs, whose estimates are the largest) and
// w_k = 3/(2π²(k−K*)²) after it (1/4 in all), so that Σ_k δ_k ≤ δ for
// every run length (the reference paper's summable δ_k, reallocated). k is
// the global epoch counter, restarts and repeats included, so the shares
// of a restarted run are still distinct terms of this one sum.
// Measured against a pilot weight of 1/16 with 7/16 after K*, this split
// certifies mdp at ε = 1e-2 and 3.2e-3 with 4% and 16% fewer samples and
// mdp-large at 3.2e-3 with 5% more (BENCHMARKS.md, issue 13).
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

func (r *tunedRun) deltaEst(k int) float64 { return (1 - vrInnerDelta) * r.c.delta * r.weight(k) }
func (r *tunedRun) deltaIn(k int) float64  { return vrInnerDelta * r.c.delta * r.weight(k) }

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

// maybeRestart restarts the schedule at x̂_{k−1} before epoch k when its
// residual bound B has fallen to vrRestartFactor times the bound at the
// current anchor (see VRGHAL, Restarts): x̂_{k−1} becomes the
// anchor, and epoch k is the first epoch of a run of Algorithm 1 from it
// whose ε₀ is the smallest value of the lattice ε₀β^level at least B/β²,
// but never coarser than level 0 nor finer than the level epoch k would
// have had; the anchoring λ̄ continues.
func (r *tunedRun) maybeRestart(k int) {
	if !r.restart || k-1 == r.cycle || !(r.lastB > 0 && r.lastB <= vrRestartFactor*r.anchorB) {
		return
	}
	b := r.c.beta
	lv := int(math.Floor(math.Log(r.eps0*b*b/r.lastB) / math.Log(1/b)))
	lv = min(max(lv, 0), r.level(k)-1)
	r.cycle, r.level0, r.anchorB = k-1, lv, r.lastB
	r.restarts++
}

// anchoring returns λ̄_k, the anchoring of epoch k (see VRGHAL,
// Restarts): 0 in the contractive regime; λ̄₀β at epoch 1; after it,
// min{λ̄₀β^ℓ, λ̄_{k−1}·f} with ℓ the accuracy level of epoch k, f = β when
// the anchoring term λ̄_{k−1}‖x̂_{k−1} − x̂_{k−2}‖ of the last epoch exceeded
// the accuracy a_{k−1} its estimate aimed at, and f = 1 otherwise. Without
// restarts ℓ = k and this is the paper's λ̄₀β^k.
func (r *tunedRun) anchoring(k int) float64 {
	if r.contr {
		return 0
	}
	paper := r.lbar0 * math.Pow(r.c.beta, float64(r.level(k)))
	if k == 1 {
		r.lbar = paper
		return r.lbar
	}
	next := r.lbar
	if r.anchored {
		next *= r.c.beta
	}
	r.lbar = math.Min(paper, next)
	return r.lbar
}

// maybeRepeat, in the contractive regime, restarts the accuracy schedule
// at x̂_{k−1} with the level of its estimate when that estimate was at or
// past the planned level K* and its bound missed Tol by a factor of at
// most vrRepeatFactor (see VRGHAL, Restarts): epoch k then aims at the same
// radius instead of half of it, once per level.
//
// In the contractive regime maybeRestart never moves the schedule, so an
// epoch's level is the last one's plus one unless this rule made them
// equal: epoch k is at level lastLvl + 1 whenever the rule is reached.
func (r *tunedRun) maybeRepeat(k int) {
	tol := r.e.Tol()
	if !r.contr || r.sampled || r.plan == 0 || r.lastLvl < r.plan || r.repeated == r.lastLvl {
		return
	}
	if !(r.lastB > tol && r.lastB <= vrRepeatFactor*tol) {
		return
	}
	r.cycle, r.level0, r.repeated = k-1, r.lastLvl-1, r.lastLvl
}

// finalEpoch reports whether epoch k is a final epoch of a run under a
// multi-query model with a tolerance in force: at or past the planned
// level K* in the contractive regime, at or past K* − vrLongLead with
// γ̄ = 1 (see Long final epochs in the Constants section of VRGHAL). Under
// BoundedVariance the lemma's m_{k,j} grows like J_k², so the rule is off
// there; in sampled mode the epochs have their own rule. Its inner
// steps run until the running residual ‖T̃_{k−1,j} − y_j‖ is at most
// min{βR̃_{k−1}, θ·Tol}, θ = vrFinalShare, for at most vrFinalSteps·J_k
// steps, the epoch's inner budget (ω times its closing estimate) spread
// over them. In the contractive regime the steps converge to the fixed
// point of T + e, e the start estimate's error, whose residual is about
// ‖e‖; J_k steps or the early end at βR̃_{k−1} stop while the residual is
// still about half the start's, which put the closing bound R̃ + ηTol of
// the planned epoch at 1.0–1.3·Tol on mdp at ε = 1e-3 (BENCHMARKS.md,
// issue 13, item 13). With γ̄ = 1 the anchored steps converge likewise to
// the anchored map's fixed point, and the early end at βR̃_{k−1} made every
// halving of the residual cost a new epoch-start estimate (item 14 there).
// A planned level K* > 0 implies a tolerance in force:
// align sets it only when Tol > 0, which it checks before the first
// record (so never under Settings.Relative, whose tolerance is NaN until
// then), and an absolute Tol does not change during the run.
func (r *tunedRun) finalEpoch(k int) bool {
	first := r.plan
	if !r.contr {
		first -= vrLongLead
	}
	return r.long && r.multi && !r.sampled && r.plan > 0 && r.level(k) >= first && r.residual > 0
}

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
	if r.sampled {
		// The pilot's error inflates its residual: ε₀ is that of the
		// sampled bound, the scale the first epochs must cover.
		r.residual += vrSampledZ * r.se
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

// pilotAccuracy returns the radius the pilot estimate aims at: half of
// √κ times the declared unit noise scale at x0, or 0 (a single exact or
// plug-in estimate) when nothing is declared.
func (r *tunedRun) pilotAccuracy() (float64, error) {
	o, x := r.e.Oracle(), r.xhat
	if r.det {
		return 0, nil
	}
	v := declaredVariance(o, x, r.norm)
	if math.IsInf(v, 1) {
		return math.NaN(), nil
	}
	return math.Sqrt(r.norm.Kappa()*v) / 2, nil
}

// recordEst records x̂ with R̃ and its rigorous bound R̃ + ρ (see the
// Stopping section of VRGHAL).
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

// estimate writes into dst an estimate of T(x) whose radius aims at a with
// failure probability delta, by the rule of the oracle's declaration at x
// (see the Constants section of VRGHAL):
//
//   - deterministic model, or a finite sum once the estimate would need
//     Terms() samples or more: one exact evaluation, radius 0;
//   - an almost-sure bound b (NoiseBound), or coordinatewise bounds in ℓ∞
//     (CoordinateNoiseBound): the mean of N unit samples with N the
//     smallest size at which the concentration radius of RuleBoundedNoise
//     (the Banach-space √(2κ ln(2/δ)σ²/N) + C ln(2/δ) b/(3N), or the
//     smaller coordinatewise Bernstein radius) is at most a;
//   - a variance bound σ² (VarianceBound): k buckets of m unit samples with
//     (k, p) = MoMChebyshevBuckets(δ) and m = ⌈κσ²/(p a²)⌉, so that each
//     bucket is within ε = a of T(x) with probability at least 1 − p
//     (Chebyshev and the paper's minibatch-variance lemma); the estimate is
//     the Hsu–Sabato selection, or the geometric median in a Hilbert norm
//     when its majority radius r is smaller, and the radius is r + ε
//     (RuleVarianceMoM; ≤ 3ε on the event, the paper's median-of-means
//     proposition with its constants sharpened) — except in a flat
//     Hilbert norm when RuleVarianceTruncated's plan at radius
//     vrTruncAim·a and the same δ (split between its centre and its
//     truncated sum) needs fewer unit samples than those buckets and
//     fewer than Terms(): then that truncated mean and its radius (see
//     truncatedEstimate);
//   - nothing: the same median of means sized with a plug-in variance
//     estimated from the buckets of the previous estimate, radius unknown.
func (r *tunedRun) estimate(dst, x []float64, a, delta float64, k int) (vrEstimate, error) {
	e := r.e
	before := e.Stats().Samples
	defer func() { r.lastEst, r.lastAim = float64(e.Stats().Samples-before), a }()
	if r.det {
		return vrEstimate{radius: 0, rigorous: true}, r.exactInto(dst, x)
	}
	if r.sampled {
		return r.sampledEstimate(dst, x, a, k)
	}
	o, norm := e.Oracle(), r.norm
	kappa := norm.Kappa()
	nd, bounded := declaredNoise(o, x, norm)
	v := declaredVariance(o, x, norm)
	terms := math.Inf(1)
	if r.fs != nil {
		terms = float64(r.fs.Terms())
	}
	exact := func() (vrEstimate, error) {
		if r.fs == nil {
			return vrEstimate{}, e.Stop(SampleLimit, fmt.Errorf("epoch %d: estimate needs more samples than VR-GHAL can request", k))
		}
		if !e.CanDraw(int64(terms)) {
			return vrEstimate{}, e.Stop(SampleLimit, nil)
		}
		return vrEstimate{radius: 0, rigorous: true}, r.exactInto(dst, x)
	}
	if bounded {
		if nd.zero() {
			if err := e.Eval(dst, x, Sample{Seed: e.Seed(), Size: 1}); err != nil {
				return vrEstimate{}, err
			}
			return vrEstimate{radius: 0, rigorous: true}, nil
		}
		n := nd.size(delta, a)
		if n >= terms {
			return exact()
		}
		size, err := drawCount(n, "an estimate's sample size", k)
		if err != nil {
			return vrEstimate{}, e.Stop(SampleLimit, err)
		}
		if !r.fits(float64(size)) {
			return vrEstimate{}, e.Stop(SampleLimit, nil)
		}
		s0 := e.Stats().Samples
		if err := e.Eval(dst, x, Sample{Seed: e.Seed(), Size: size}); err != nil {
			return vrEstimate{}, err
		}
		drawn := e.Stats().Samples - s0
		used := float64(max(drawn, 1))
		return vrEstimate{radius: nd.radius(delta, used), rigorous: true, rule: RuleBoundedNoise, calls: 1, samples: drawn}, nil
	}
	if est, ok, err := r.truncatedEstimate(dst, x, a, delta, v, terms, k); ok {
		return est, err
	}
	buckets, p := MoMChebyshevBuckets(delta)
	rigorous := !math.IsInf(v, 1)
	if !rigorous && buckets < 3 {
		buckets = 3
		p = MoMBucketFailure(buckets, delta)
	}
	vv := v
	if !rigorous {
		vv = r.vhat
		if math.IsNaN(vv) || math.IsInf(vv, 0) {
			return vrEstimate{}, e.Stop(Diverged, fmt.Errorf("epoch %d: the bucket means' spread overflows", k))
		}
	}
	var size int
	switch {
	case vv == 0 && rigorous:
		size = 1
	case math.IsNaN(a) || vv == 0 || math.IsNaN(vv):
		size = 16 // pilot without a declaration
	default:
		m := kappa * vv / (p * a * a)
		if float64(buckets)*m >= terms {
			return exact()
		}
		var err error
		if size, err = drawCount(m, "a bucket size", k); err != nil {
			return vrEstimate{}, e.Stop(SampleLimit, err)
		}
	}
	if float64(buckets)*float64(size) >= terms {
		return exact()
	}
	if !r.fits(float64(buckets) * float64(size)) {
		return vrEstimate{}, e.Stop(SampleLimit, nil)
	}
	r.growBuckets(buckets)
	means := r.means[:buckets]
	for _, m := range means {
		if err := e.Eval(m, x, Sample{Seed: e.Seed(), Size: size}); err != nil {
			return vrEstimate{}, err
		}
	}
	_, rad := MedianOfMeans(dst, means, norm, r.momWork)
	if len(r.row) < buckets {
		r.row = make([]float64, buckets)
	}
	if hilbertNorm(norm) {
		GeometricMedian(r.gm, means, vrWeiszfeld)
		if rg := majorityRadius(r.gm, means, norm, r.diff, r.row); rg < rad {
			rad = rg
			copy(dst, r.gm)
		}
	}
	// Plug-in unit variance for the next estimate: E‖τ_i − τ_j‖² ≈ 2κσ²/m
	// in a Hilbert norm; an estimate, used only to size undeclared buckets.
	if buckets > 1 {
		_, _, scale := momScale(means, norm, r.diff)
		r.vhat = scale * scale / 3 * float64(size) / 2 / kappa
	}
	if !rigorous {
		return vrEstimate{radius: math.Inf(1)}, nil
	}
	eps := math.Sqrt(kappa * v / (float64(size) * p))
	return vrEstimate{radius: rad + eps, rigorous: true, rule: RuleVarianceMoM, calls: int64(buckets), samples: e.Stats().Samples - before}, nil
}

// tunedEpoch runs epoch k from x̂_{k−1} = r.xhat with T̃_{k−1,0} = r.t0
// (see the Constants section of VRGHAL) and records x̂_k.
func (r *tunedRun) tunedEpoch(k int) error {
	e, c := r.e, &r.c
	r.maybeRestart(k)
	r.maybeRepeat(k)
	epsK := r.eps0 * math.Pow(c.beta, float64(r.level(k)))
	lbar := r.anchoring(k)
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
	if r.sampled {
		return r.sampledEpoch(k, lam, lbar, steps)
	}
	start := e.Stats().Samples
	endShare := c.beta // the early end at βR̃_{k−1} (+ the anchoring term)
	if r.finalEpoch(k) {
		steps *= vrFinalSteps
		endShare = math.Min(endShare, vrFinalShare*e.Tol()/r.residual)
	}
	// Sizes of the inner steps: the Master Theorem's n_k, and m_{k,j} of the
	// model's lemma times SampleScale, enlarged (never shrunk) under the
	// multi-query models until the inner steps draw about ω times the
	// closing estimate's samples.
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
		m *= c.scale
		if r.multi {
			// The closing estimate costs about 1/β² times the last one
			// per level it is finer (β² per level it is coarser).
			next := r.lastEst * math.Pow(c.beta, -2*float64(r.level(k)-r.lastLvl))
			m = max(m, vrInnerShare*next/(2*float64(copies)*float64(steps)))
		}
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
	aim := r.accuracy(k)
	if r.balance {
		aim = r.balancedAim(aim, float64(e.Stats().Samples-start))
	}
	est, err := r.estimate(r.t0, r.yCur, aim, r.deltaEst(k), k)
	if err != nil {
		return err
	}
	r.lastLvl = r.level(k)
	r.xhat, r.yCur = r.yCur, r.xhat
	r.residual = e.Dist(r.t0, r.xhat)
	// The anchoring term of the basic GHAL lemma's first inequality, against
	// the accuracy of the epoch's estimate (see anchoring).
	r.anchored = lbar*e.Dist(r.xhat, r.y0) > r.accuracy(k)
	return r.settle(est)
}

// balancedAim returns the radius the closing estimate of an epoch under
// BoundedVariance aims at, given a = a_k and the unit samples, inner, its
// inner steps drew: a, or, when an estimate at a would cost less than
// vrEstShare·inner, the smaller radius at which it costs about that much
// (the cost taken as the last estimate's times (its aim/a)², the 1/a²
// of every rule's size). It does not look at the budget, so that the run's
// path does not depend on MaxSamples (an estimate that no longer fits
// stops the run with SampleLimit, as any other). There
// the lemma's m_{k,j} ∝ J_k²/ε_k² makes the inner steps dominate the
// epoch, so the estimate's own cost hardly counts, while its actual error
// decides where the epoch's steps converge (the fixed point of T plus
// that error), hence the next R̃, n_k and early end (see VRGHAL,
// Constants, "Balanced estimates"). A smaller radius is still at most
// a_k, which is all the Master Theorem asks of the estimate; it is
// chosen from samples already drawn, before the estimate's fresh ones,
// and its δ'_k is unchanged.
func (r *tunedRun) balancedAim(a, inner float64) float64 {
	want := vrEstShare * inner
	if !(a > 0) || !(r.lastEst > 0) || !(r.lastAim > 0) || !(want > 0) {
		return a
	}
	planned := r.lastEst * (r.lastAim / a) * (r.lastAim / a)
	if planned >= want {
		return a
	}
	return a * math.Sqrt(planned/want)
}

// settle records x̂ after its estimate est, R̃ = r.residual. In sampled
// mode, a sampled bound R̃ + Z·se at most Tol is checked by one exact
// evaluation at x̂, which becomes the estimate (radius 0): its exact
// residual is recorded as a rigorous bound, so that the run stops with
// Success if it meets Tol and otherwise goes on from an exact epoch start.
// A sampled estimate is recorded with the residual R̃ + Z·se and no bound.
func (r *tunedRun) settle(est vrEstimate) error {
	if !r.sampled {
		return r.recordEst(est)
	}
	if est.rigorous {
		if err := r.recordEst(est); err != nil {
			return err
		}
		return r.exactNext()
	}
	e := r.e
	b := r.residual + vrSampledZ*r.se
	// In the contractive regime the next epoch's first point is
	// y = T̃(x̂), whose residual is about ρ̂R̃ + se (ρ̂ the contraction the
	// inner steps saw): when that meets Tol and b does not, the check is
	// made there.
	next := r.contr && b > e.Tol() && r.rhoHat*r.residual+vrSampledZ*r.se <= e.Tol()
	// Where sampling cannot reach Tol, the warm-up ends when two exact
	// calls are predicted to certify (warmDone): the check is made at the
	// next point, and exactNext follows.
	if !next && b > e.Tol() && r.warmDone() {
		next = true
	}
	if !next && (b > e.Tol() || math.IsNaN(e.Tol())) {
		return e.RecordBound(r.xhat, b, math.Inf(1))
	}
	if !e.CanDraw(int64(r.fs.Terms())) {
		return e.Stop(SampleLimit, nil)
	}
	if next {
		if err := e.RecordBound(r.xhat, b, math.Inf(1)); err != nil {
			return err
		}
		copy(r.xhat, r.t0)
	}
	if err := r.exactInto(r.t0, r.xhat); err != nil {
		return err
	}
	r.se = 0
	r.residual = e.Dist(r.t0, r.xhat)
	if err := r.recordEst(vrEstimate{radius: 0, rigorous: true}); err != nil {
		return err
	}
	return r.exactNext()
}

// sampledEstimate writes into dst the estimate of T(x) of sampled mode:
// the mean of two independent halves of N = v̂/a² unit samples, v̂ the unit
// variance measured by the previous sampled estimate (the pilot uses
// vrPilotSize samples), or one exact evaluation (see VRGHAL, Constants,
// sampled mode, for when). It measures the standard error ‖τ_a − τ_b‖/2
// and the unit variance of the new estimate.
func (r *tunedRun) sampledEstimate(dst, x []float64, a float64, k int) (vrEstimate, error) {
	e := r.e
	terms := float64(r.fs.Terms())
	n := float64(vrPilotSize)
	if !math.IsNaN(r.vunit) && a > 0 {
		n = r.vunit / (a * a)
	}
	// Exact once the sampled estimate would cost half an exact call (a
	// sampled bound meeting Tol is followed by one), or, when sampling
	// cannot reach Tol (a standard error of Tol/2 would cost half an
	// exact call), once it costs more than the first inner step after an
	// exact start here would (2q̂R̃²/(ηTol)²).
	fin := r.finalAccuracy(k)
	diff := math.Min(terms, 2*r.qdiff*r.residual*r.residual/(fin*fin))
	unreachable := !r.floor && float64(r.vhalf) >= math.Min(vrVarianceHalf, terms/64) && 4*r.vunit/(r.e.Tol()*r.e.Tol()) >= terms/2
	if !(n < terms/2) || (unreachable && n >= diff) {
		if !e.CanDraw(int64(terms)) {
			return vrEstimate{}, e.Stop(SampleLimit, nil)
		}
		r.se = 0
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
	if err := e.Eval(r.half, x, Sample{Seed: e.Seed(), Size: half}); err != nil {
		return vrEstimate{}, err
	}
	for i, v := range r.half {
		dst[i], r.half[i] = (dst[i]+v)/2, dst[i]-v
	}
	d := r.norm.Norm(r.half)
	r.se = d / 2
	// E‖τ_a − τ_b‖² = 2v/h for halves of h unit samples (in a Hilbert
	// norm; an estimate elsewhere, used only to size the next estimate).
	r.vunit = d * d * float64(half) / 2
	r.vhalf = half
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
// measures q̂, pooled over the run, from the spread of the two copies, and
// the contraction ρ̂, and returns the variance the step adds, or −1 after
// an exact evaluation.
func (r *tunedRun) sampledStep(budget float64, k int) (float64, error) {
	e := r.e
	dy := e.Dist(r.yCur, r.yPrev)
	terms := float64(r.fs.Terms())
	m := 0
	if r.qsum[1] == 0 && dy > 0 && r.floorRegime() && 2*vrPilotSize < terms && 2*r.qdiff*dy*dy/budget > vrPilotSize {
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
		if 2*r.qdiff*dy*dy/budget > 2*float64(m) {
			m = 0 // drawn anew at the measured size
		}
	}
	if m == 0 {
		n := 2 * r.qdiff * dy * dy / budget
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
	if dy > 0 {
		// ‖T(y_j) − T(y_{j−1})‖ ≈ ‖mean difference‖: the contraction seen
		// on this step (overestimated when noise dominates).
		r.rhoHat = math.Min(r.c.gamma, r.norm.Norm(r.diff)/dy)
	}
	// E‖Δ₁ − Δ₂‖² = 2q‖Δy‖²/m; the mean of the copies adds q‖Δy‖²/(2m).
	d := r.norm.Norm(r.half)
	if dy > 0 {
		// The mean difference's standard error is ‖Δ₁ − Δ₂‖/2: ρ̂ plus
		// one standard error, from the step where that is smallest
		// relative to the step (the first, long steps, typically).
		if se := d / 2 / dy; se <= r.rhoErr {
			// ‖mean‖² − ‖Δ₁ − Δ₂‖²/4 estimates ‖T(y_j) − T(y_{j−1})‖².
			dm := r.norm.Norm(r.diff)
			r.rhoErr = se
			r.rhoUp = math.Min(r.c.gamma, math.Sqrt(math.Max(dm*dm-d*d/4, 0))/dy+se)
		}
	}
	return d * d / 4, nil
}

// drawDifference draws two copies Δ₁, Δ₂ of m unit differences
// τ(y_j; ξ) − τ(y_{j−1}; ξ), each clipped to γ̄‖y_j − y_{j−1}‖ = γ̄·dy,
// leaves their mean in r.diff and Δ₁ − Δ₂ in r.half, and pools the
// measured q̂ (Σ‖Δ₁ − Δ₂‖²m/2 / Σ‖Δy‖²).
func (r *tunedRun) drawDifference(m int, dy float64) error {
	e := r.e
	radius := r.c.gamma * dy
	for _, d := range [][]float64{r.acc, r.half} {
		s := Sample{Seed: e.Seed(), Size: m}
		if err := e.Eval(r.tau1, r.yCur, s); err != nil {
			return err
		}
		if err := e.Eval(r.tau2, r.yPrev, s); err != nil {
			return err
		}
		subInto(d, r.tau1, r.tau2)
		ClipDifference(d, d, radius, r.norm)
	}
	for i, v := range r.acc {
		r.diff[i] = (v + r.half[i]) / 2
		r.half[i] = v - r.half[i]
	}
	if dy > 0 {
		d := r.norm.Norm(r.half)
		r.qsum[0] += d * d * float64(m) / 2
		r.qsum[1] += dy * dy
		r.qdiff = r.qsum[0] / r.qsum[1]
	}
	return nil
}

// sampledEpoch runs epoch k in sampled mode from x̂_{k−1} = r.xhat with
// T̃_{k−1,0} = r.t0 of standard error r.se, with anchoring λ and at most
// steps steps (see the Constants section of VRGHAL), and records x̂_k. The
// inner steps add noise of about max{ηTol, se}: no more than the start
// carries, or the final accuracy after an exact start. The estimate at x̂_k
// continues the recursion while its accumulated error is within a_k, and is
// otherwise a fresh sampled estimate (exact once too large).
func (r *tunedRun) sampledEpoch(k int, lam, lbar float64, steps int) error {
	e := r.e
	fin := r.finalAccuracy(k)
	ak := math.Max(r.accuracy(k), fin)
	aIn := math.Max(fin, r.se)
	errVar := r.se * r.se
	added := 0.0 // variance the steps added since the last exact evaluation
	copy(r.y0, r.xhat)
	copy(r.tt, r.t0)
	copy(r.yPrev, r.y0)
	r0, se0 := r.residual, r.se
	atCur := false // r.tt estimates T(r.yCur)
	// Where sampling cannot reach Tol, a start whose residual is far above
	// its noise (vrFloorGrowth times) is not refined by differences (the
	// recursion would carry its noise along): the epoch's first point
	// y₁ = T̃(x̂) gets a fresh estimate sized by twoCallFloor, and so on
	// while the residual stays above the noise, until settle finds two
	// exact calls enough (warmDone). A start already near its noise goes
	// on as before.
	floor := r.twoCallFloor()
	if floor > 0 && !(r.se > floor && (r0 > vrFloorGrowth*r.se || (r.warm && r0 > r.se))) {
		floor = 0
	}
	r.warm = floor > 0
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
		r.floor = true
		defer func() { r.floor = false }()
	}
	switch {
	case errVar > ak*ak:
		var err error
		if est, err = r.estimate(r.t0, r.yCur, ak, r.deltaEst(k), k); err != nil {
			return err
		}
	default:
		if !atCur {
			if err := step(); err != nil {
				return err
			}
		}
		copy(r.t0, r.tt)
		r.se = math.Sqrt(errVar)
		est.rigorous = errVar == 0
		if est.rigorous {
			est.radius = 0
		}
	}
	r.xhat, r.yCur = r.yCur, r.xhat
	r.residual = e.Dist(r.t0, r.xhat)
	if floor > 0 {
		// x̂ = T̃(x̂_{k−1}): the ratio of the two residuals, each with its
		// estimate's variance removed, is the contraction seen along the
		// step (the observed ratio of the growing-batch baseline).
		num := r.residual*r.residual - r.se*r.se
		den := r0*r0 - se0*se0
		if rho := math.Sqrt(max(num, 0) / den); den > 0 && !(rho >= r.rhoUp) {
			r.rhoUp = math.Min(rho, r.c.gamma)
		}
	}
	return r.settle(est)
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
	a := r.se / math.Sqrt(vrFloorGrowth)
	if !math.IsNaN(r.rhoUp) {
		a = math.Max(a, vrSampledTolShare*r.e.Tol()/math.Max(r.rhoUp, 1e-300))
	}
	return a
}

// floorRegime reports whether the run is in sampled mode, in the
// contractive regime, with a tolerance that a sampled estimate cannot
// reach: a standard error of Tol/2 would cost more than half an exact
// call by the measured unit variance.
func (r *tunedRun) floorRegime() bool {
	tol := r.e.Tol()
	if !r.sampled || !r.contr || !(tol > 0) || math.IsNaN(r.vunit) {
		return false
	}
	return 4*r.vunit/(tol*tol) >= float64(r.fs.Terms())/2
}

// warmDone reports whether, in the regime of twoCallFloor, the sampled
// start x̂ (residual R̃, standard error se) is close enough that two exact
// calls are predicted to certify: the next point T̃(x̂) has a residual of
// about r₁ = ρ̂R̃ + se, and one exact step from it about ρ̂r₁ ≤ Tol (the
// estimates aim at ηTol/ρ̂, so this leaves them the slack of their noise).
func (r *tunedRun) warmDone() bool {
	if !r.floorRegime() || math.IsNaN(r.rhoUp) {
		return false
	}
	r1 := r.rhoUp*r.residual + vrSampledZ*r.se
	return r.rhoUp*r1 <= r.e.Tol()
}

// exactNext follows an exact evaluation at x̂ in sampled mode in the
// contractive regime (r.t0 = T(x̂), r.residual its exact residual): when the
// residual misses Tol but ρ̂ times it meets Tol, ρ̂ the measured contraction
// plus its standard error, x̂ moves to T(x̂) and one exact evaluation there
// gives its exact residual, recorded as a rigorous bound. Success is
// declared only on that exact residual; if it misses Tol the run goes on
// from the new exact epoch start.
func (r *tunedRun) exactNext() error {
	e := r.e
	if !r.sampled || !r.contr || r.se != 0 || math.IsNaN(r.rhoUp) || !(r.residual > e.Tol()) || r.rhoUp*r.residual > e.Tol() {
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

// finalAccuracy returns ηTol, the accuracy the run needs at its end, or
// a_k when no tolerance is in force.
func (r *tunedRun) finalAccuracy(k int) float64 {
	if tol := r.e.Tol(); tol > 0 {
		if r.sampled && r.contr {
			return vrSampledTolShare * tol
		}
		return vrTolShare * tol
	}
	return r.accuracy(k)
}
