package solver

import "math"

// This file holds the concentration radius of RuleBoundedNoise, the
// reference paper's Banach-space concentration proposition (Section 2.2) for
// the mean of N unit samples under an almost-sure bound, and its inverse,
// the sample size that reaches a radius. The certificate and VR-GHAL's
// epoch-start estimates share them.

// boundedNoiseSize returns the smallest N with
// √(2κ L σ²/N) + C L b/(3N) ≤ a, L = ln(2/δ): the sample size at which the
// reference paper's Banach-space concentration proposition puts the mean of
// N unit samples within a of T(x) with probability at least 1 − δ.
func boundedNoiseSize(kappa, c, delta, b, v, a float64) float64 {
	l := math.Log(2 / delta)
	return concentrationSize(c*l*b/3, math.Sqrt(2*kappa*l*v), a)
}

// concentrationSize returns the smallest N with qb/√N + qa/N ≤ a, for
// qa, qb ≥ 0 and a > 0.
func concentrationSize(qa, qb, a float64) float64 {
	// qa·u² + qb·u − a = 0 in u = 1/√N.
	var u float64
	switch {
	case qa == 0 && qb == 0:
		return 1
	case qa == 0:
		u = a / qb
	default:
		u = (-qb + math.Sqrt(qb*qb+4*qa*a)) / (2 * qa)
	}
	return 1 / (u * u)
}

// boundedNoiseRadius returns √(2κ L σ²/N) + C L b/(3N), L = ln(2/δ).
func boundedNoiseRadius(kappa, c, delta, b, v, n float64) float64 {
	l := math.Log(2 / delta)
	return math.Sqrt(2*kappa*l*v/n) + c*l*b/(3*n)
}
