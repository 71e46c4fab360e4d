package solver

import (
	"fmt"
	"math"
)

// clipDifference writes into dst the clipped difference operator of the
// reference paper,
//
//	Cl(Δ) = min{1, radius/‖Δ‖}·Δ,
//
// with Cl(0) = 0, and returns the factor min{1, radius/‖Δ‖} it applied (1
// when Δ = 0). VR-GHAL clips a stochastic difference Δ = τ(x; ξ₁) − τ(y; ξ₂)
// at the Lipschitz scale radius = γ̄‖x − y‖, so that ‖Cl(Δ)‖ ≤ γ̄‖x − y‖ (up
// to rounding) whatever the noise: the estimator moves like a γ̄-Lipschitz
// operator along the iterates.
//
// dst and delta may be the same slice. clipDifference panics if their
// lengths differ from norm.Len() or radius is negative or NaN.
func clipDifference(dst, delta []float64, radius float64, norm Norm) float64 {
	if len(dst) != len(delta) {
		panic(fmt.Sprintf("solver: clipDifference destination length %d, difference length %d", len(dst), len(delta)))
	}
	if !(radius >= 0) {
		panic(fmt.Sprintf("solver: clipDifference radius %v must be non-negative", radius))
	}
	nd := norm.Norm(delta)
	if nd <= radius || math.IsNaN(nd) {
		copy(dst, delta)
		return 1
	}
	f := radius / nd // 0 when ‖Δ‖ overflows to +Inf
	if f == 0 {
		clear(dst)
		return 0
	}
	for i, v := range delta {
		dst[i] = f * v
	}
	return f
}
