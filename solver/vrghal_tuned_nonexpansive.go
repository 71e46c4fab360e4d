package solver

import "math"

// This file holds the rules of a tuned run with γ̄ = 1 (a nonexpansive T):
// the paper's anchoring, held once the schedule restarts, and the restarts.
// See docs/vrghal.md, "Restarts" and "Anchoring".

// Tuning constants of the nonexpansive regime (see docs/vrghal.md,
// "Tuning constants").
const (
	// vrRestartFactor is the fraction of the residual bound at the current
	// anchor below which an epoch start becomes the new anchor.
	vrRestartFactor = 0.5
	// vrLongLead is the number of accuracy levels before K* at which the
	// final epochs of a run with γ̄ = 1 begin to run long (see
	// longFinalEpochs). It was measured against 0 to 3 and against every
	// level.
	vrLongLead = 4
)

// heldAnchoring is the anchoring with γ̄ = 1. Epoch 1 anchors with the
// paper's λ̄₁ = λ̄₀β, and epoch k ≥ 2 with λ̄_k = min{λ̄₀β^ℓ, λ̄_{k−1}·f},
// ℓ the accuracy level of epoch k: f = β when the anchoring term of the last
// epoch exceeded the accuracy its estimate aimed at, f = 1 otherwise.
// Without restarts ℓ = k and this is the paper's λ̄₀β^k; after one, λ̄
// never grows back, holds while the anchoring term is within the estimates'
// accuracy and shrinks when that term limits the epoch's progress, and
// λ̄_k/ε_k ≤ λ̄₀/ε₀ at every epoch.
type heldAnchoring struct {
	lbar     float64 // λ̄ of the last epoch
	exceeded bool    // its anchoring term exceeded its accuracy a_k
}

func (h *heldAnchoring) lambdaBar(r *tunedRun, k int) float64 {
	paper := r.lbar0 * math.Pow(r.c.beta, float64(r.level(k)))
	if k == 1 {
		h.lbar = paper
		return h.lbar
	}
	next := h.lbar
	if h.exceeded {
		next *= r.c.beta
	}
	h.lbar = math.Min(paper, next)
	return h.lbar
}

func (h *heldAnchoring) observe(exceeded bool) { h.exceeded = exceeded }

// restartAtHalving restarts the schedule at x̂_{k−1} before epoch k when its
// residual bound B has fallen to vrRestartFactor times the bound at the
// current anchor: x̂_{k−1} becomes the anchor, and epoch k is the first
// epoch of a run of the paper's algorithm from it whose ε₀ is the smallest
// value of the lattice ε₀β^level at least B/β², but never coarser than
// level 0 nor finer than the level epoch k would have had; the anchoring λ̄
// continues (heldAnchoring). The Master Theorem holds from any start point
// and ε₀, and the δ shares keep one global epoch counter (tunedRun.weight),
// so the guarantee is that of one run.
type restartAtHalving struct {
	restarts int // restarts made
}

func (s *restartAtHalving) before(r *tunedRun, k int) {
	if k-1 == r.cycle || !(r.lastB > 0 && r.lastB <= vrRestartFactor*r.anchorB) {
		return
	}
	b := r.c.beta
	lv := int(math.Floor(math.Log(r.eps0*b*b/r.lastB) / math.Log(1/b)))
	lv = min(max(lv, 0), r.level(k)-1)
	r.cycle, r.level0, r.anchorB = k-1, lv, r.lastB
	s.restarts++
}
