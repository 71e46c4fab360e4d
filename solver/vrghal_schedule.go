package solver

import (
	"fmt"
	"math"
)

// This file holds the schedule of VR-GHAL with PaperConstants: the sizes of
// every epoch as the reference paper's Algorithm VR-GHAL (Section 3) and
// its Master Theorem (Section 4.2) set them, with the minibatch sizes of the
// three oracle models (Sections 4.3 to 4.5). See docs/vrghal.md, "The
// paper's schedule".

// maxDraw is the largest unit-sample size or count VR-GHAL requests.
const maxDraw = 1 << 62

// vrMoM sizes one median-of-means estimate with accuracy parameter eps and
// failure probability delta: buckets oracle calls of size unit samples each.
type vrMoM struct {
	eps, delta    float64
	buckets, size int
}

// vrEpoch is the schedule of epoch k ≥ 1 of VR-GHAL.
type vrEpoch struct {
	k                             int
	eps, lambdaBar, lambda, delta float64 // ε_k, λ̄_k, λ_k, δ_k
	rho                           float64 // ρ_k = γ̄(1 − λ_k)
	steps                         int     // J_k
	copies                        int     // n_k
	batch                         int     // m_{k,j}, the same for every j
	evals                         int     // oracle calls per copy: 2, or 1 for a deterministic model
	mom                           vrMoM   // the estimate at x̂_k
}

// drawCount returns max{1, ⌈x⌉} for a count of samples, calls or steps, and
// an error naming what if x exceeds maxDraw (or is NaN). The ceiling forgives
// a relative rounding error of 1e-12, so that a formula whose exact value is
// an integer (⌈576⌉, computed as 576.0000000000002) rounds to it.
func drawCount(x float64, what string, k int) (int, error) {
	if !(x <= maxDraw) {
		return 0, fmt.Errorf("epoch %d needs %s = %.3g, more than VR-GHAL can request (2^62)", k, what, x)
	}
	return max(1, int(math.Ceil(x*(1-1e-12)))), nil
}

// momPlan sizes the median-of-means estimate at x̂_k (k ≥ 0): accuracy
// ε_{k+1}/2 and failure probability δ_{k+1}/2, that is ⌈18 ln(2/δ_{k+1})⌉
// buckets of ⌈SampleScale·27/(ε_{k+1}/2)²⌉ samples, or one exact call for a
// deterministic model.
func (c *vrConfig) momPlan(k int) (vrMoM, error) {
	b := math.Pow(c.beta, float64(k+1))
	m := vrMoM{eps: c.eps0 * b / 2, delta: c.delta0() * b / 2, buckets: 1, size: 1}
	if c.model == Deterministic {
		return m, nil
	}
	if !(m.delta > 0) {
		return m, fmt.Errorf("epoch %d: failure probability δ_k underflows", k)
	}
	var err error
	m.buckets = momBuckets(m.delta)
	m.size, err = drawCount(c.scale*27/(m.eps*m.eps), "a bucket size", k)
	return m, err
}

// delta0 returns δ₀ = (1 − β)δ/β.
func (c *vrConfig) delta0() float64 { return (1 - c.beta) * c.delta / c.beta }

// epochPlan returns the schedule of epoch k ≥ 1 given R̃_{k−1}.
func (c *vrConfig) epochPlan(k int, rPrev float64) (vrEpoch, error) {
	bk := math.Pow(c.beta, float64(k))
	p := vrEpoch{k: k, eps: c.eps0 * bk, lambdaBar: c.lambda0 * bk, delta: c.delta0() * bk}
	p.lambda = p.lambdaBar / (1 + p.lambdaBar)
	p.rho = c.gamma * (1 - p.lambda)
	// ln((1 − λ)γ̄) via log1p for small λ; it is 0 once λ_k underflows.
	rate := math.Log1p(-p.lambda) + math.Log(c.gamma)
	if rate == 0 {
		return p, fmt.Errorf("epoch %d needs infinitely many inner steps (λ_k underflows)", k)
	}
	var err error
	if p.steps, err = drawCount(math.Log(c.beta)/rate, "J_k inner steps", k); err != nil {
		return p, err
	}
	if p.mom, err = c.momPlan(k); err != nil {
		return p, err
	}
	if c.model == Deterministic {
		p.copies, p.batch, p.evals = 1, 1, 1
		return p, nil
	}
	p.evals = 2
	if p.copies, err = drawCount(2*(1-p.lambda)*c.gamma*rPrev*math.Log(4/p.delta)/(3*p.eps), "n_k copies", k); err != nil {
		return p, err
	}
	var m float64
	switch c.model {
	case BoundedVariance:
		j := float64(p.steps)
		m = 4 * j * j / (p.eps * p.eps)
	case LipschitzInExpectation:
		m = 4 * rPrev * rPrev / (p.eps * p.eps * (1 - p.rho) * (1 - p.rho))
	default: // SamplewiseLipschitz
		m = 4 * rPrev * rPrev / (p.eps * p.eps * (1 - p.rho))
	}
	p.batch, err = drawCount(c.scale*m, "a minibatch m_{k,j}", k)
	return p, err
}

// samples returns the unit samples epoch p requests: J_k − 1 inner steps of
// n_k copies of evals minibatches, and the closing median-of-means.
func (p *vrEpoch) samples() float64 {
	return float64(p.steps-1)*float64(p.copies)*float64(p.evals)*float64(p.batch) + p.mom.samples()
}

// samples returns the unit samples the estimate requests.
func (m vrMoM) samples() float64 { return float64(m.buckets) * float64(m.size) }
