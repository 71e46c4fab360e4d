package solver

// This file holds the rules of a tuned run with γ̄ < 1 (a known
// contraction): no anchoring, and a level repeated once when a bound just
// misses Tol. See docs/vrghal.md, "Contractive regime" and "Restarts".

// vrRepeatFactor is the factor of Tol within which a missed bound at or
// past the planned level K* of a contractive run repeats its accuracy level
// once (see repeatNearTol and docs/vrghal.md, "Tuning constants").
const vrRepeatFactor = 1.5

// noAnchoring is the anchoring with γ̄ < 1: every epoch has λ_k = 0 and
// restarts from x̂_{k−1}. J_k = ⌈ln β/ln γ̄⌉ steps of the γ̄-contraction give
// the first inequality of the paper's basic GHAL lemma with λ̄_k = 0, so the
// anchoring terms of the Master Theorem's recursion vanish.
type noAnchoring struct{}

func (noAnchoring) lambdaBar(*tunedRun, int) float64 { return 0 }
func (noAnchoring) observe(bool)                     {}

// repeatNearTol restarts the accuracy schedule at x̂_{k−1} with the level of
// its estimate when that estimate was at or past the planned level K* and
// its bound missed Tol by a factor of at most vrRepeatFactor: epoch k then
// aims at the same radius instead of half of it, once per level. Its start
// estimate is fresh at that radius and its steps contract the rest of the
// residual, so its bound often meets Tol at about a quarter of the cost of
// the finer level.
//
// With no anchoring no other rule moves the schedule, so an epoch's level
// is the last one's plus one unless this rule made them equal: epoch k is
// at level lastLvl + 1 whenever the rule is reached.
type repeatNearTol struct {
	repeated int // the level last repeated, 0 if none
}

func (s *repeatNearTol) before(r *tunedRun, k int) {
	tol := r.e.Tol()
	if r.plan == 0 || r.lastLvl < r.plan || s.repeated == r.lastLvl {
		return
	}
	if !(r.lastB > tol && r.lastB <= vrRepeatFactor*tol) {
		return
	}
	r.cycle, r.level0, s.repeated = k-1, r.lastLvl-1, r.lastLvl
}
