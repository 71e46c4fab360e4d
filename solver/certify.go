package solver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// certify bounds ‖T(x̂) − x̂‖ for the returned point.
//
// Deterministic oracles: one evaluation gives the exact residual (Rule
// "exact", Delta 0).
//
// Stochastic oracles (Rule "mom-empirical-scale"): k = ⌈18 ln(1/δ)⌉
// independent calls, each the average τ_i of n unit samples drawn from seeds
// independent of the solve, give bucket means with E τ_i = T(x̂). Let τ̂ be the
// Hsu–Sabato median-of-means selection and r* its radius (the smallest radius
// around a bucket mean enclosing more than k/2 of them). If more than k/2 of
// the τ_i lie within ε of T(x̂), the balls B(τ̂, r*) and B(T(x̂), ε) share a
// bucket mean, so ‖τ̂ − T(x̂)‖ ≤ r* + ε; Hsu and Sabato (2016, Proposition 9)
// show that this event has probability at least 1 − δ when each τ_i is within
// ε with probability 2/3. By Jensen's inequality
// E‖τ_i − T(x̂)‖² ≤ V := E‖τ_i − τ_j‖² (i ≠ j) in any norm, so Chebyshev's
// inequality gives that probability for ε = √(3V). The certificate plugs in
// the unbiased pairwise estimate V̂ = mean_{i<j} ‖τ_i − τ_j‖²:
//
//	Bound = ‖τ̂ − x̂‖ + r* + √(3 V̂).
//
// The only assumption beyond independence is that V̂ does not underestimate
// V, which holds asymptotically in k for any finite-variance oracle; no
// smoothness constant enters, so the rule is valid in every norm (ℓp, ℓ∞,
// Schatten-p, batched). Coverage is tested in certify_test.go.
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
		k = int(math.Ceil(18 * math.Log(1/delta)))
	}
	if k < 3 {
		k = 3
	}
	size := s.Certify.Samples
	if size == 0 {
		size = suggested
	}
	if size == 0 {
		size = int(max(1, res.Stats.Samples/int64(4*k)))
	}
	rng := rand.New(rand.NewPCG(s.Seed^0x6a09e667f3bcc909, s.Certify.Seed^0xbb67ae8584caa73b))
	taus := make([][]float64, k)
	c := &Certificate{Delta: delta, Rule: "mom-empirical-scale"}
	for i := range taus {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		taus[i] = make([]float64, n)
		used, err := o.Eval(taus[i], x, Sample{Seed: rng.Uint64(), Size: size})
		c.Calls++
		c.Samples += int64(used)
		if err != nil {
			return nil, err
		}
	}
	// Pairwise distances, shared by the selection and the scale.
	dist := make([]float64, k*k)
	v := 0.0
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			subInto(diff, taus[i], taus[j])
			d := norm.Norm(diff)
			dist[i*k+j], dist[j*k+i] = d, d
			v += d * d
		}
	}
	v /= float64(k * (k - 1) / 2)
	best, rstar := medianOfMeansIndex(dist, k)
	eps := math.Sqrt(3 * v)
	subInto(diff, taus[best], x)
	c.Estimate = norm.Norm(diff)
	c.Bound = c.Estimate + rstar + eps
	if batched != nil {
		c.PerExample = batched.Each(nil, diff)
		for i := range c.PerExample {
			c.PerExample[i] += rstar + eps
		}
	}
	if math.IsNaN(c.Bound) {
		return c, fmt.Errorf("certificate bound is NaN")
	}
	return c, nil
}

// medianOfMeansIndex returns the Hsu–Sabato selection among k points given
// their symmetric k×k distance matrix: the index i minimising
// r_i = min{r : #{j : d_ij ≤ r} > k/2}, the lowest such i on ties, and r_i.
func medianOfMeansIndex(dist []float64, k int) (int, float64) {
	row := make([]float64, k)
	need := k/2 + 1 // more than k/2 points, the point itself included
	best, bestR := 0, math.Inf(1)
	for i := 0; i < k; i++ {
		copy(row, dist[i*k:(i+1)*k])
		sort.Float64s(row)
		if r := row[need-1]; r < bestR {
			best, bestR = i, r
		}
	}
	return best, bestR
}

func subInto(dst, a, b []float64) {
	for i := range dst {
		dst[i] = a[i] - b[i]
	}
}
