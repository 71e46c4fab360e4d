package solver

import (
	"cmp"
	"fmt"
	"math"
)

// GHAL is the gradual Halpern algorithm with exact operator evaluations:
// Algorithm 1 of the reference paper ("Solving Stochastic Fixed-Point
// Equations with High Probability", the VR-GHAL algorithm) with every
// stochastic estimate T̃ replaced by T itself. This is the gradual Halpern
// framework that the paper builds on (earlier work by the same author), in
// the paper's variant that needs no bound on the diameter of the iterates.
//
// Starting from x̂_0 = x_0 and λ̄_0, epoch k = 1, 2, … sets
//
//	λ̄_k = β λ̄_{k−1},  λ_k = λ̄_k/(1 + λ̄_k),  J_k = ⌈ln β / ln((1 − λ_k) γ̄)⌉,
//
// runs J_k steps of the anchored iteration
//
//	y_0 = x̂_{k−1},  y_{j+1} = λ_k y_0 + (1 − λ_k) T(y_j),
//
// and sets x̂_k = y_{J_k}. With exact evaluations the paper's lemma on the
// basic inequalities of GHAL gives, for a γ-Lipschitz T with γ ≤ γ̄ ≤ 1 and
// any fixed point x_*, the per-epoch bound
//
//	‖T(x̂_k) − x̂_k‖ ≤ β ‖T(x̂_{k−1}) − x̂_{k−1}‖ + 2 λ̄_k ‖x_0 − x_*‖,
//
// so the residual at the end of epoch k is at most
// β^k ‖T(x_0) − x_0‖ + 2 k λ̄_0 β^k ‖x_0 − x_*‖, in any norm. For γ̄ = 1 the
// epochs grow geometrically (J_k ≈ ln(1/β)/λ_k) and the residual decays as
// O(log N / N) in the number N of evaluations, like Halpern's; for a
// contraction with γ̄ = γ < 1, J_k ≤ ⌈ln β / ln γ⌉ and the decay is linear.
// Setting Gamma to a valid Lipschitz bound below one is what makes GHAL fast
// on contractions; a Gamma below the true constant voids the guarantee.
//
// Every inner step evaluates T once at y_{j+1} and records y_{j+1} with its
// exact residual; T(x̂_{k−1}) from the previous epoch is reused, so an epoch
// costs J_k evaluations. Settings.MaxIter therefore counts inner steps
// (evaluations after the first, at x_0), not epochs, and the returned point is
// the lowest-residual y_j evaluated, which is never worse than the last x̂_k.
// GHAL needs a deterministic oracle; VR-GHAL is its stochastic counterpart.
type GHAL struct {
	// Beta is the per-epoch decrease factor β ∈ (0, 1) of λ̄ and of the
	// residual. Zero means DefaultGHALBeta.
	Beta float64
	// Gamma is a bound γ̄ ∈ (0, 1] on the Lipschitz constant of T in the
	// problem's norm. Zero means DefaultGHALGamma (nonexpansive).
	Gamma float64
	// Lambda0 is the initial anchor weight λ̄_0 > 0. Zero means
	// DefaultGHALLambda0, as in the paper.
	Lambda0 float64
}

// Defaults of GHAL, used where its fields are zero.
const (
	DefaultGHALBeta    = 0.5
	DefaultGHALGamma   = 1
	DefaultGHALLambda0 = 1
)

var (
	_ Method    = GHAL{}
	_ Validator = GHAL{}
)

func (m GHAL) params() (beta, gamma, lambda0 float64) {
	return cmp.Or(m.Beta, DefaultGHALBeta), cmp.Or(m.Gamma, DefaultGHALGamma), cmp.Or(m.Lambda0, DefaultGHALLambda0)
}

// String implements Method.
func (GHAL) String() string { return "ghal" }

// Validate implements Validator. It reports a Beta outside (0, 1), a Gamma
// outside (0, 1], a Lambda0 that is not positive and finite, and a
// stochastic oracle.
func (m GHAL) Validate(p Problem) error {
	beta, gamma, lambda0 := m.params()
	if err := checkRange("GHAL.Beta", beta, 0, 1, true); err != nil {
		return err
	}
	if err := checkRange("GHAL.Gamma", gamma, 0, 1, false); err != nil {
		return err
	}
	if !(lambda0 > 0) || math.IsInf(lambda0, 1) {
		return fmt.Errorf("solver: GHAL.Lambda0 = %v must be positive and finite", lambda0)
	}
	return requireDeterministic("GHAL", p)
}

// ghalMaxInner caps J_k where λ_k underflows; MaxIter stops the solve long
// before an epoch of that length ends.
const ghalMaxInner = 1 << 52

// ghalInnerSteps returns J = ⌈ln β / ln((1 − λ)γ̄)⌉, at least 1, and
// ghalMaxInner when (1 − λ)γ̄ rounds to 1.
func ghalInnerSteps(beta, lambda, gamma float64) int {
	den := math.Log1p(-lambda) + math.Log(gamma)
	if !(den < 0) {
		return ghalMaxInner
	}
	j := math.Ceil(math.Log(beta) / den)
	switch {
	case !(j < ghalMaxInner):
		return ghalMaxInner
	case j < 1:
		return 1
	}
	return int(j)
}

// Run implements Method.
func (m GHAL) Run(e *Env) error {
	beta, gamma, lbar := m.params()
	n := e.Len()
	anchor := append([]float64(nil), e.X0()...) // x̂_{k−1} = y_0
	tAnchor := make([]float64, n)               // T(y_0)
	y := make([]float64, n)
	ty := make([]float64, n)
	if err := e.Eval(tAnchor, anchor, Sample{Size: 1}); err != nil {
		return err
	}
	if err := e.Record(anchor, e.Dist(tAnchor, anchor)); err != nil {
		return err
	}
	for {
		lbar *= beta
		lam := lbar / (1 + lbar)
		steps := ghalInnerSteps(beta, lam, gamma)
		prev := tAnchor // T(y_j)
		for j := 0; j < steps; j++ {
			for i, t := range prev {
				y[i] = lam*anchor[i] + (1-lam)*t
			}
			if err := e.Eval(ty, y, Sample{Size: 1}); err != nil {
				return err
			}
			if err := e.Record(y, e.Dist(ty, y)); err != nil {
				return err
			}
			prev = ty
		}
		anchor, y = y, anchor
		tAnchor, ty = ty, tAnchor
	}
}
