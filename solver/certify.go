package solver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// certify bounds ‖T(x̂) − x̂‖ for the returned point x̂.
//
// Deterministic oracles (Rule "exact", Delta 0): one evaluation gives the
// exact residual.
//
// Stochastic oracles (Rule "mom-empirical-scale"): k independent oracle calls
// at x̂ — k = CertifySettings.Calls, or MoMBuckets(δ) = ⌈18 ln(1/δ)⌉, at least
// 3 — each the average τ_i of n unit samples from seeds independent of the
// solve, give bucket means with E τ_i = T(x̂). n is CertifySettings.Samples,
// or the size the method suggested (VR-GHAL: its last bucket size), or the
// solve's samples divided by 4k. Let τ̂ be the MedianOfMeans selection and r*
// its radius. The rule is
//
//	Bound = ‖τ̂ − x̂‖ + r* + √(3V̂),  V̂ = mean_{i<j} ‖τ_i − τ_j‖².
//
// Why: suppose each τ_i lies within ε of T(x̂) with probability at least 2/3.
// By Hoeffding's inequality, with probability at least 1 − exp(−k/18) ≥ 1 − δ
// more than k/2 of them do (Hsu and Sabato 2016, Proposition 9); the ball of
// radius r* around τ̂ also holds more than k/2, so the two balls share a
// bucket mean and ‖τ̂ − T(x̂)‖ ≤ r* + ε, whence the bound by the triangle
// inequality. Chebyshev's inequality gives the 2/3 for ε = √(3s²) with
// s² = E‖τ_i − T(x̂)‖², and Jensen's inequality (for fixed τ_i,
// E_j‖τ_i − τ_j‖² ≥ ‖τ_i − E τ_j‖²) gives s² ≤ V = E‖τ_i − τ_j‖² in every
// norm, so ε = √(3V) qualifies.
//
// Assumption: V̂, an unbiased estimate of V from the same calls, is taken
// for V. The bound keeps its 1 − δ guarantee whenever 3V̂ is at least the
// squared 2/3-quantile of ‖τ_i − T(x̂)‖, which Chebyshev's inequality only
// bounds by 3V; in ℓ2 V = 2s², so V̂ may fall short of V by a factor of 2
// (for near-Gaussian bucket means in ℓ2 or ℓ∞ by a factor near 6) before the
// guarantee is at risk. No smoothness constant enters, so the rule holds in
// every norm (ℓp, ℓ∞, Schatten-p, batched). No finite-sample bound can hold
// for every finite-variance oracle without a known variance bound (Bahadur
// and Savage 1956), so some such assumption is unavoidable; with very heavy
// tails and few samples per call, V̂ underestimates V more often. Coverage is
// measured in certify_test.go on Gaussian, Student-t and lognormal noise.
//
// With fewer calls than ⌈18 ln(1/δ)⌉ (CertifySettings.Calls, or the minimum
// of 3), the Certificate reports the larger failure probability exp(−k/18)
// that k calls support.
//
// For a Batched norm, PerExample[i] bounds example i: its own ‖τ̂ − x̂‖ plus
// r* + √(3V̂), multiplied by the number of examples for AggMean (a
// per-example norm is at most Examples times the mean of them).
func certify(ctx context.Context, p Problem, res *Result, s *Settings, suggested int) (*Certificate, error) {
	o, norm, x := p.Oracle, p.Norm, res.X
	n := len(x)
	batched, _ := norm.(*Batched)
	diff := make([]float64, n)
	if o.Model() == Deterministic {
		tx := make([]float64, n)
		used, err := o.Eval(tx, x, Sample{Size: 1})
		if err != nil {
			return nil, err
		}
		subInto(diff, tx, x)
		r := norm.Norm(diff)
		c := &Certificate{Estimate: r, Bound: r, Samples: int64(used), Calls: 1, Rule: "exact"}
		if batched != nil {
			c.PerExample = batched.Each(nil, diff)
		}
		return c, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	delta := s.Certify.Delta
	k := s.Certify.Calls
	if k == 0 {
		k = MoMBuckets(delta)
	}
	k = max(k, 3)
	size := s.Certify.Samples
	if size == 0 {
		size = suggested
	}
	if size == 0 {
		size = int(max(1, res.Stats.Samples/int64(4*k)))
	}
	rng := rand.New(rand.NewPCG(s.Seed^0x6a09e667f3bcc909, s.Certify.Seed^0xbb67ae8584caa73b))
	data := make([]float64, k*n)
	taus := make([][]float64, k)
	c := &Certificate{Delta: max(delta, math.Exp(-float64(k)/18)), Rule: "mom-empirical-scale"}
	for i := range taus {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		taus[i] = data[i*n : (i+1)*n : (i+1)*n]
		used, err := o.Eval(taus[i], x, Sample{Seed: rng.Uint64(), Size: size})
		c.Calls++
		c.Samples += int64(used)
		if err != nil {
			return nil, err
		}
	}
	best, rstar, eps := momScale(taus, norm, diff)
	slack := rstar + eps
	subInto(diff, taus[best], x)
	c.Estimate = norm.Norm(diff)
	c.Bound = c.Estimate + slack
	if batched != nil {
		if batched.Agg == AggMean {
			slack *= float64(batched.Examples)
		}
		c.PerExample = batched.Each(nil, diff)
		for i := range c.PerExample {
			c.PerExample[i] += slack
		}
	}
	if math.IsNaN(c.Bound) {
		return c, fmt.Errorf("certificate bound is NaN")
	}
	return c, nil
}

// momScale returns the MedianOfMeans selection among the bucket means taus
// (at least two), its radius r* and the scale ε̂ = √(3V̂) with
// V̂ = mean_{i<j} ‖τ_i − τ_j‖², sharing the pairwise distances. diff
// (length norm.Len()) is scratch.
func momScale(taus [][]float64, norm Norm, diff []float64) (best int, rstar, eps float64) {
	k := len(taus)
	dist := make([]float64, k*k)
	momDistances(dist, taus, norm, diff)
	v := 0.0
	for i := range k {
		for _, d := range dist[i*k+i+1 : (i+1)*k] {
			v += d * d
		}
	}
	v /= float64(k * (k - 1) / 2)
	best, rstar = momSelect(dist, k, make([]float64, k))
	return best, rstar, math.Sqrt(3 * v)
}
