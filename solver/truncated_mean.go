package solver

import "math"

// This file holds RuleVarianceTruncated: a truncated mean in a Hilbert norm
// under a variance bound alone, whose radius grows like √ln(1/δ) where a
// Chebyshev bucket's grows like √(1/δ).
//
// # The estimator
//
// Let μ = T(x) and Y_1, …, Y_k be k independent oracle calls of s unit
// samples each at x, so that E Y_j = μ and, by the reference paper's
// minibatch-variance lemma ("Solving Stochastic Fixed-Point Equations with
// High Probability" by Jelena Diakonikolas), E‖Y_j − μ‖² ≤ V_b = κσ²/s,
// σ² the declared unit variance bound. The estimator has two parts, drawn
// one after the other.
//
//  1. A centre c from a first, separate sample: the variance median of
//     means of RuleVarianceMoM (one bucket, or the Chebyshev buckets of
//     momChebyshevBuckets, as momPlan picks for the share δ₀), so that
//     ‖c − μ‖ ≤ r_c with probability at least 1 − δ₀, r_c = r* + ε_c
//     computed from that sample (see varianceMoM for the proof).
//  2. Given the centre sample, V = V_b + r_c², L = ln(2/δ₁) and the
//     truncation level τ = √((3k + CL)V/(4CL)), all fixed before the second
//     sample is drawn, the truncated calls
//     Z_j = c + (Y_j − c)·min{1, τ/‖Y_j − c‖} and their mean μ̂.
//
// # The bound
//
// Condition on the centre sample and suppose ‖c − μ‖ ≤ r_c (the centre's
// event). The Z_j are then independent and identically distributed.
//
// Bias. Z_j − Y_j points along Y_j − c with length (‖Y_j − c‖ − τ)₊, and
// (u − τ)₊ ≤ u²/(4τ) for every u ≥ 0 (it is (u − 2τ)² ≥ 0 rearranged).
// Since E Y_j = μ, ‖E Z − μ‖ = ‖E(Z − Y)‖ ≤ E(‖Y − c‖ − τ)₊ ≤
// E‖Y − c‖²/(4τ). In a Hilbert norm E‖Y − c‖² = E‖Y − μ‖² + ‖μ − c‖²
// (the cross term has mean zero), which is at most V_b + r_c² = V.
//
// Deviation. ξ_j = Z_j − E Z are independent and centred, with
// ‖ξ_j‖ ≤ ‖Z_j − c‖ + ‖c − E Z‖ ≤ τ + m, m = min{τ, r_c + V/(4τ)} (E Z
// lies in the ball of radius τ about c, and within the bias V/(4τ) of μ,
// itself within r_c of c), and E‖ξ_j‖² ≤ E‖Z − c‖² ≤ E‖Y − c‖² ≤ V (the
// variance is at most the second moment about any point, and truncation
// towards c shortens Y − c). The reference paper's Banach-space
// concentration proposition (its Pinelis-type bound, from I. Pinelis,
// "Optimum bounds for the distributions of martingales in Banach spaces",
// Annals of Probability 22(4), 1994; in a Hilbert norm its constants are
// κ = C = 1) gives, with probability at least 1 − δ₁ given the centre
// sample, ‖Σ_j ξ_j‖ ≤ √(2κ L k V) + C L (τ + m)/3.
//
// Together, by the triangle inequality ‖μ̂ − μ‖ ≤ ‖(1/k)Σ ξ_j‖ + ‖E Z − μ‖,
//
//	‖μ̂ − μ‖ ≤ ρ = √(2κVL/k) + CL(τ + m)/(3k) + V/(4τ),
//
// and τ = √((3k + CL)V/(4CL)) minimises the terms in τ when m is its
// second branch, so that at that τ, with m in its second branch, ρ ≤ √(2κVL/k) + √(CLV(1 + CL/(3k))/(3k)) +
// CLr_c/(3k) ≈ (√(2κ) + √(C/3))·√(VL/k) ≈ 1.99√(VL/k) for many calls and
// a centre much finer than τ, when the oracle's calls use all s requested
// samples (with fewer, V is recomputed from the fewest used and ρ from the
// formula at the fixed τ, which holds for any V at least the second
// moment). With the range bounded by 2τ alone (m = τ, a cruder form
// of this rule) the constant was √(2κ) + √(2C/3) ≈ 2.23: the sharper range
// saves about a fifth of the samples for the same radius. The bound fails
// only if the centre's event
// fails (probability ≤ δ₀) or, on it, the concentration fails
// (conditional probability ≤ δ₁, so at most δ₁ unconditionally): in all
// with probability at most δ₀ + δ₁ = δ. Every choice the estimator makes
// — k, s and the centre's plan before any draw, τ from the centre sample
// alone — is independent of the second sample, which is all the
// conditional argument needs.
//
// # Cost
//
// With the centre exact (r_c = 0) the rule needs about
// (√2 + √(1/3))² ln(2/δ₁) ≈ 4 ln(2/δ₁) variances κσ²/ρ² of unit samples;
// with its centre, as planTruncated sizes it, 18.1, 28.2 and 42.5 at
// δ = 0.05, 0.01 and 1e-3 (22.6, 35.3 and 53.1 with the range 2τ), against
// 1/δ = 20, 100 and 1000 for a single
// Chebyshev bucket and 351 at 1e-3 for the Chebyshev median of means at
// the share 1/2 of momPlan. The centre adds its own cost and inflates V by
// r_c²; planTruncated balances the two (see there).

// truncCalls is the largest number of oracle calls of the truncated
// mean's second sample: more calls make a centre of the same cost
// relatively more accurate (its inflation of V falls like 1/√k), at the
// price of more oracle evaluations.
const truncCalls = 1 << 14

// truncPlan is a plan of RuleVarianceTruncated for a target radius, fixed
// before any sample is drawn (see the file comment).
type truncPlan struct {
	delta0, delta1 float64 // failure shares of the centre and the sum
	centreK        int     // the centre's buckets
	centreP        float64 // its per-bucket failure probability
	centreSize     int     // its bucket size (unit samples)
	k, size        int     // calls of the second sample and their size
	total          float64 // planned unit samples, both parts
}

// truncConst returns √(2κ) + √(C/3), the constant of the truncated
// mean's radius ρ ≈ truncConst·√(VL/k) for many calls and a fine centre.
func truncConst(kappa, c float64) float64 {
	return math.Sqrt(2*kappa) + math.Sqrt(c/3)
}

// truncLevel returns the truncation level τ = √((3k + CL)V/(4CL)) that
// minimises CLτ/(3k) + (1 + CL/(3k))V/(4τ), the terms of the radius in τ.
func truncLevel(c, v, l float64, k int) float64 {
	return math.Sqrt((3*float64(k) + c*l) * v / (4 * c * l))
}

// truncRadius returns ρ = √(2κVL/k) + CL(τ + m)/(3k) + V/(4τ), m =
// min{τ, r_c + V/(4τ)}, the radius of the truncated mean at level τ with
// centre radius r_c (0 when V = 0).
func truncRadius(kappa, c, v, l, tau, rc float64, k int) float64 {
	if v == 0 {
		return 0
	}
	kf := float64(k)
	bias := v / (4 * tau)
	return math.Sqrt(2*kappa*v*l/kf) + c*l*(tau+math.Min(tau, rc+bias))/(3*kf) + bias
}

// planTruncated returns the plan of RuleVarianceTruncated with radius at
// most a (when the centre's radius comes out as planned) and failure
// probability δ, w = κσ² the declared unit variance times κ, that needs
// the fewest unit samples among those it tries (total +Inf if none of them
// is feasible). For each centre share
// δ₀ ∈ {δ/2, δ/4, δ/8, δ/16} (δ₁ = δ − δ₀, L = ln(2/δ₁)):
//
//   - the second sample has k = min(truncCalls, ⌈N₁⌉) calls, N₁ =
//     c²L·w/a² its size with an exact centre (c = truncConst);
//   - the centre is momPlan(δ₀), whose cost is C_c·w/r_c² with C_c =
//     k_c/(p_c·share²); with r_c² = α·V_b the total is about
//     N₁(1 + α) + C_c·s/α, least at α = √(C_c/k), so the calls have
//     s = ⌈w/V_b⌉ samples with V_b = a²k/(c²L(1 + α)), and the centre
//     the accuracy r_c² = a²k/(c²L) − w/s that the rounding leaves.
//
// These sizes are first computed at the radius t = a; the exact planned
// radius (the terms in 1/k and r_c included) then decides: while it
// exceeds a, t shrinks by their ratio and the sizes are recomputed, at
// most 8 times, and a share whose plan still misses a is skipped.
//
// The radius of the drawn estimate uses the centre's realised r_c (see
// truncatedMean), so a median-of-means centre with r* above its planned
// share may give a radius a little above a, or below.
func planTruncated(kappa, c, w, delta, a float64) truncPlan {
	best := truncPlan{total: math.Inf(1)}
	q := truncConst(kappa, c)
	for f := 0.5; f >= 1.0/16; f /= 2 {
		p := truncPlan{delta0: f * delta, delta1: (1 - f) * delta}
		l := math.Log(2 / p.delta1)
		var share float64
		p.centreK, p.centreP, share = momPlan(p.delta0)
		if w == 0 {
			p.k, p.size, p.centreSize = 1, 1, 1
			p.total = float64(p.centreK + 1)
		} else {
			// Sized at the closed form's radius t, then t shrinks by the
			// ratio of a to the exact radius at the planned centre (the
			// terms in 1/k and r_c), until that radius is at most a.
			t, ok := a, false
			for range 8 {
				n1 := q * q * l * w / (t * t)
				p.k = int(math.Min(truncCalls, math.Max(1, math.Ceil(n1))))
				cc := float64(p.centreK) / (p.centreP * share * share)
				alpha := math.Sqrt(cc / float64(p.k))
				whole := t * t * float64(p.k) / (q * q * l) // V at radius t
				p.size = int(math.Min(maxDraw, math.Ceil(w*(1+alpha)/whole)))
				rc2 := whole - w/float64(p.size)
				if !(rc2 > 0) {
					break
				}
				eps := share * math.Sqrt(rc2)
				p.centreSize = int(math.Min(maxDraw, math.Ceil(w/(p.centreP*eps*eps))))
				p.total = float64(p.centreK)*float64(p.centreSize) + float64(p.k)*float64(p.size)
				rc := math.Sqrt(w/(float64(p.centreSize)*p.centreP)) / share
				v := w/float64(p.size) + rc*rc
				rho := truncRadius(kappa, c, v, l, truncLevel(c, v, l, p.k), rc, p.k)
				if rho <= a {
					ok = true
					break
				}
				t *= a / rho * (1 - 1e-9)
			}
			if !ok {
				continue
			}
		}
		if p.total < best.total {
			best = p
		}
	}
	return best
}

// truncatedMean draws the plan p at a point through eval, which makes one
// oracle call of the given number of unit samples into its first argument
// and returns the unit samples it used, writes the truncated mean μ̂ into
// dst and returns its radius ρ (see the file comment). w = κσ², norm must
// be a Hilbert norm (hilbertNorm) of length len(dst). bufs, when not nil,
// holds at least p.centreK + 2 vectors of length len(dst) and work at
// least medianOfMeansWork(p.centreK, len(dst)) floats, the scratch the
// estimate then uses instead of allocating its own.
func truncatedMean(dst []float64, norm Norm, w float64, p truncPlan, bufs [][]float64, work []float64, eval func([]float64, int) (int, error)) (float64, error) {
	n := len(dst)
	if bufs == nil {
		data := make([]float64, (p.centreK+2)*n)
		bufs = make([][]float64, p.centreK+2)
		for i := range bufs {
			bufs[i] = data[i*n : (i+1)*n : (i+1)*n]
		}
	}
	centres := bufs[:p.centreK]
	mc := p.centreSize
	for _, b := range centres {
		u, err := eval(b, p.centreSize)
		if err != nil {
			return 0, err
		}
		mc = min(mc, max(u, 1))
	}
	c, y := bufs[p.centreK], bufs[p.centreK+1]
	_, rstar := medianOfMeans(c, centres, norm, work)
	rc := rstar + math.Sqrt(w/(float64(mc)*p.centreP))
	kappa, cn := norm.Kappa(), norm.C()
	l := math.Log(2 / p.delta1)
	tau := truncLevel(cn, w/float64(p.size)+rc*rc, l, p.k)
	clear(dst)
	used := p.size
	for range p.k {
		u, err := eval(y, p.size)
		if err != nil {
			return 0, err
		}
		used = min(used, max(u, 1))
		subInto(y, y, c)
		f := 0.0
		if r := norm.Norm(y); r <= tau {
			f = 1
		} else if tau > 0 {
			f = tau / r
		}
		for i, v := range y {
			dst[i] += f * v
		}
	}
	for i := range dst {
		dst[i] = c[i] + dst[i]/float64(p.k)
	}
	v := w/float64(used) + rc*rc
	if v > 0 && tau == 0 {
		return math.Inf(1), nil
	}
	return truncRadius(kappa, cn, v, l, tau, rc, p.k), nil
}

// flatHilbert reports whether norm is the Hilbert norm of the flat vector
// (ℓ2 or Schatten-2), where RuleVarianceTruncated applies. A Batched norm
// of Hilbert norms is not one: the rule is not extended to it.
func flatHilbert(norm Norm) bool {
	_, batched := norm.(*Batched)
	return !batched && hilbertNorm(norm)
}

// varianceTruncated is RuleVarianceTruncated, the certificate from the
// truncated mean μ̂ of the plan p at x̂ (see the file comment):
//
//	Bound = ‖μ̂ − x̂‖ + ρ,
//
// which holds with probability at least 1 − δ by the bound on ‖μ̂ − T(x̂)‖
// and the triangle inequality.
func varianceTruncated(d *drawer, norm Norm, delta, w float64, p truncPlan) (*Certificate, error) {
	tau := make([]float64, d.n)
	rho, err := truncatedMean(tau, norm, w, p, nil, nil, d.one)
	if err != nil {
		return nil, err
	}
	return d.finish(&Certificate{Delta: delta, Rule: RuleVarianceTruncated}, norm, tau, rho), nil
}

// truncForBudget returns a plan of RuleVarianceTruncated needing fewer
// than budget unit samples for a planned radius of at most a, if there is
// one (ok): the plan at radius a, or, when it fits, the plan rescaled to
// use the budget (the total falls like 1/a² up to rounding), whose radius
// is smaller.
func truncForBudget(kappa, c, w, delta, a float64, budget int64) (p truncPlan, ok bool) {
	nb := float64(budget)
	p = planTruncated(kappa, c, w, delta, a)
	if !(p.total < nb) {
		return p, false
	}
	if p2 := planTruncated(kappa, c, w, delta, a*math.Sqrt(p.total/nb)); p2.total <= nb {
		return p2, true
	}
	return p, true
}

// truncCheaper returns the plan of RuleVarianceTruncated at δ and target
// radius a, and whether it needs fewer unit samples than mom, the
// closed-form size of the variance median of means planned by momPlan for
// the same radius (see momCost).
func truncCheaper(kappa, c, w, delta, a, mom float64) (truncPlan, bool) {
	tp := planTruncated(kappa, c, w, delta, a)
	return tp, tp.total < mom
}

// momCost returns the unit samples of the variance median of means of k
// buckets at per-bucket failure probability p with ε = share·a (momPlan's
// plan for radius a): k⌈w/(p ε²)⌉.
func momCost(w, a float64, k int, p, share float64) float64 {
	eb := share * a
	return float64(k) * math.Ceil(w/(p*eb*eb))
}
