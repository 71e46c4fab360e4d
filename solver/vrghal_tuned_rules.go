package solver

import "math"

// This file holds the rules of the tuned schedule that depend on the run's
// regime, each a small type chosen once per run by chooseTunedRules: how
// epochs anchor (vrghal_tuned_contractive.go, vrghal_tuned_nonexpansive.go),
// when the accuracy schedule moves, how long epochs run, and how an epoch's
// samples are balanced between its inner steps and its closing estimate.
// See docs/vrghal.md, "Regimes".

// tunedRules are the regime-dependent rules of a tuned run.
type tunedRules struct {
	anchor   anchorRule   // λ̄_k of each epoch
	schedule scheduleRule // moves the accuracy schedule before an epoch
	length   lengthRule   // the cap on an epoch's inner steps and its early end
	balance  balanceRule  // enlarges inner minibatches or closing estimates
}

// chooseTunedRules returns the rules of a tuned run with settings c, in
// sampled mode or not:
//
//	                  γ̄ < 1 (contractive)     γ̄ = 1 (nonexpansive)
//	anchor            noAnchoring             heldAnchoring
//	schedule          repeatNearTol           restartAtHalving
//	length            longFinalEpochs{0}      longFinalEpochs{vrLongLead}
//
// except that sampled mode keeps its schedule fixed and runs epochs of its
// own (fixedSchedule, paperLength), and that epochs keep the paper's length
// (paperLength) under BoundedVariance, whose m_{k,j} grows like J_k², and
// for a Deterministic oracle; and, by the model,
//
//	balance           balanceInner (LipschitzInExpectation, SamplewiseLipschitz),
//	                  balanceEstimates (BoundedVariance), noBalance (Deterministic).
func chooseTunedRules(c vrConfig, sampled bool) tunedRules {
	var t tunedRules
	lead := vrLongLead
	if c.contractive() {
		t.anchor, t.schedule, lead = noAnchoring{}, &repeatNearTol{}, 0
	} else {
		t.anchor, t.schedule = &heldAnchoring{}, &restartAtHalving{}
	}
	t.length = longFinalEpochs{lead: lead}
	if sampled {
		t.schedule = fixedSchedule{}
	}
	if sampled || !c.multiQuery() {
		t.length = paperLength{}
	}
	switch c.model {
	case Deterministic:
		t.balance = noBalance{}
	case BoundedVariance:
		t.balance = balanceEstimates{}
	default:
		t.balance = balanceInner{}
	}
	return t
}

var (
	_ anchorRule   = noAnchoring{}
	_ anchorRule   = (*heldAnchoring)(nil)
	_ scheduleRule = fixedSchedule{}
	_ scheduleRule = (*repeatNearTol)(nil)
	_ scheduleRule = (*restartAtHalving)(nil)
	_ lengthRule   = paperLength{}
	_ lengthRule   = longFinalEpochs{}
	_ balanceRule  = noBalance{}
	_ balanceRule  = balanceInner{}
	_ balanceRule  = balanceEstimates{}
)

// contractive reports whether the run knows T to be a contraction, γ̄ < 1:
// its epochs restart from their start point without anchoring (λ_k = 0).
func (c *vrConfig) contractive() bool { return c.gamma < 1 }

// multiQuery reports whether the model lets one Sample be drawn at two
// points (LipschitzInExpectation, SamplewiseLipschitz).
func (c *vrConfig) multiQuery() bool {
	return c.model == LipschitzInExpectation || c.model == SamplewiseLipschitz
}

// anchorRule gives the anchoring λ̄_k of each epoch; λ_k = λ̄_k/(1 + λ̄_k).
type anchorRule interface {
	// lambdaBar returns λ̄_k for epoch k ≥ 1, once per epoch, in order.
	lambdaBar(r *tunedRun, k int) float64
	// observe is told, after an epoch's closing estimate, whether its
	// anchoring term λ̄_k‖x̂_k − x̂_{k−1}‖ exceeded the accuracy a_k that
	// estimate aimed at.
	observe(exceeded bool)
}

// scheduleRule may move the accuracy schedule before an epoch: make the
// epoch's start point the anchor of a new run of the paper's algorithm at
// some accuracy level (tunedRun.cycle, level0, anchorB).
type scheduleRule interface {
	// before is called before epoch k ≥ 1.
	before(r *tunedRun, k int)
}

// fixedSchedule never moves the accuracy schedule: epoch k is at level k.
// Sampled mode uses it.
type fixedSchedule struct{}

func (fixedSchedule) before(*tunedRun, int) {}

// lengthRule sets how long an epoch's inner steps run.
type lengthRule interface {
	// plan returns, for epoch k whose J_k is steps, the cap on its inner
	// steps and the share s of R̃_{k−1} at which it ends early: at the
	// first step whose running residual ‖T̃_{k−1,j} − y_j‖ is at most
	// s·R̃_{k−1} + λ̄_k‖y_j − y₀‖ (the first inequality of the paper's basic
	// GHAL lemma, which is all the Master Theorem's induction uses).
	plan(r *tunedRun, k, steps int) (int, float64)
}

// paperLength is the paper's epoch: at most J_k inner steps, ending early
// at s = β.
type paperLength struct{}

func (paperLength) plan(r *tunedRun, _, steps int) (int, float64) { return steps, r.c.beta }

// Tuning constants of the long final epochs (see docs/vrghal.md, "Long
// final epochs").
const (
	// vrFinalSteps is the factor by which a final epoch may exceed J_k
	// inner steps.
	vrFinalSteps = 8
	// vrFinalShare is θ: a final epoch ends once its running residual is
	// at most min{βR̃_{k−1}, θ·Tol}, half of the room 1 − η that the
	// closing radius ηTol leaves below Tol (η = vrTolShare; the other half
	// is for the error its start estimate carries).
	vrFinalShare = (1 - vrTolShare) / 2
)

// longFinalEpochs is paperLength except in the final epochs of a run with a
// tolerance in force, those at accuracy level K* − lead or later: they may
// run vrFinalSteps·J_k inner steps, and end early only once the running
// residual is at most min{βR̃_{k−1}, θ·Tol}, θ = vrFinalShare (plus the
// anchoring term). Their steps converge to the fixed point of T (or of its
// anchored map) plus the start estimate's error e, whose residual is about
// ‖e‖; ending at βR̃_{k−1} left about half the start's residual on top, so
// that the closing bound R̃ + ηTol of the planned epoch missed Tol on most
// runs, and with γ̄ = 1 every further halving of the residual cost a new
// epoch-start estimate. The rule applies under the multi-query models
// only, whose m_{k,j} (∝ 1/(1 − ρ_k)^q) bounds the accumulated error of
// the differences over any number of steps; the epoch's inner budget is
// spread over the longer cap by the balance rule.
//
// A planned level K* > 0 implies a tolerance in force: align sets it only
// when Tol > 0, which it checks before the first record (so never under
// Settings.Relative, whose tolerance is NaN until then), and an absolute
// Tol does not change during the run.
type longFinalEpochs struct {
	lead int // levels before K* at which final epochs begin
}

func (f longFinalEpochs) plan(r *tunedRun, k, steps int) (int, float64) {
	if r.plan > 0 && r.level(k) >= r.plan-f.lead && r.residual > 0 {
		return steps * vrFinalSteps, math.Min(r.c.beta, vrFinalShare*r.e.Tol()/r.residual)
	}
	return steps, r.c.beta
}

// balanceRule balances an epoch's samples between its inner steps and its
// closing estimate.
type balanceRule interface {
	// innerBatch returns the minibatch of epoch k's inner steps given m,
	// the model's lemma's m_{k,j} times SampleScale, n_k = copies and the
	// cap on its steps.
	innerBatch(r *tunedRun, m float64, k, copies, steps int) float64
	// aim returns the radius the closing estimate aims at, given a = a_k
	// and the unit samples, inner, the epoch's inner steps drew.
	aim(r *tunedRun, a, inner float64) float64
}

// noBalance keeps the lemma's minibatch and the radius a_k.
type noBalance struct{}

func (noBalance) innerBatch(_ *tunedRun, m float64, _, _, _ int) float64 { return m }
func (noBalance) aim(_ *tunedRun, a, _ float64) float64                  { return a }

// vrInnerShare is ω, the share of the closing estimate's samples that
// balanceInner gives an epoch's inner steps (see docs/vrghal.md, "Balanced
// inner steps").
const vrInnerShare = 0.5

// balanceInner, under the multi-query models, enlarges m_{k,j} so that the
// epoch's inner steps draw about ω = vrInnerShare times the samples of its
// closing estimate, whose cost is taken as the last estimate's times 1/β²
// per level it is finer (β² per level it is coarser). The lemmas'
// variance–minibatch condition is monotone in m, so enlarging keeps it.
type balanceInner struct{}

func (balanceInner) innerBatch(r *tunedRun, m float64, k, copies, steps int) float64 {
	next := r.lastEst * math.Pow(r.c.beta, -2*float64(r.level(k)-r.lastLvl))
	return max(m, vrInnerShare*next/(2*float64(copies)*float64(steps)))
}

func (balanceInner) aim(_ *tunedRun, a, _ float64) float64 { return a }

// vrEstShare is the share of an epoch's inner samples below which
// balanceEstimates enlarges its closing estimate. The value was not tuned:
// it bounds the rule's extra cost to a tenth of the inner steps' samples.
const vrEstShare = 0.1

// balanceEstimates, under BoundedVariance, keeps the lemma's m_{k,j} and
// enlarges the closing estimate instead: there m_{k,j} ∝ J_k²/ε_k² makes the
// inner steps dominate the epoch, so the estimate's own cost hardly counts,
// while its actual error decides where the next epoch's steps converge (the
// fixed point of T plus that error), hence the next R̃, n_k and early end.
type balanceEstimates struct{}

func (balanceEstimates) innerBatch(_ *tunedRun, m float64, _, _, _ int) float64 { return m }

// aim returns a, or, when an estimate at a would cost less than
// vrEstShare·inner, the smaller radius at which it costs about that much
// (the cost taken as the last estimate's times (its aim/a)², the 1/a² of
// every rule's size). It does not look at the budget, so that the run's
// path does not depend on MaxSamples (an estimate that no longer fits stops
// the run with SampleLimit, as any other). A smaller radius is still at
// most a_k, which is all the Master Theorem asks of the estimate; it is
// chosen from samples already drawn, before the estimate's fresh ones, and
// its δ'_k is unchanged.
func (balanceEstimates) aim(r *tunedRun, a, inner float64) float64 {
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
