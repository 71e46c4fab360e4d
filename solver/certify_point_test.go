package solver

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMoMPlanCheapest checks that the variance rule's plan needs no more
// unit samples for a target radius than either alternative it chooses
// between: one bucket at p = δ with ε = a, or the buckets of
// momChebyshevBuckets with ε = a/2.
func TestMoMPlanCheapest(t *testing.T) {
	for _, delta := range []float64{0.3, 0.05, 0.02, 0.01, 3e-3, 2e-3, 1e-3, 1e-6} {
		k, p, share := momPlan(delta)
		n := float64(k) / (p * share * share)
		km, pm := momChebyshevBuckets(delta)
		require.LessOrEqual(t, n, 1/momBucketFailure(1, delta)*(1+1e-12), "δ = %g", delta)
		require.LessOrEqual(t, n, 4*float64(km)/pm*(1+1e-12), "δ = %g", delta)
		require.Equal(t, k == 1, share == 1, "δ = %g", delta)
		require.InDelta(t, momBucketFailure(k, delta), p, 1e-15, "δ = %g", delta)
	}
	k, _, _ := momPlan(0.01)
	require.Equal(t, 1, k, "a single bucket is cheaper at δ = 0.01")
	k, _, _ = momPlan(1e-3)
	require.Greater(t, k, 1, "the median of means is cheaper at δ = 1e-3")
}

// TestCertifyRadiusVarianceCoverage: CertifyRadius under a variance
// declaration alone, with the plan of momPlan (one bucket at δ = 0.05 and
// 0.01, Chebyshev on the whole sample; several at δ = 1e-3), with the
// radius set so that about 400 unit samples are drawn, at x̂ = 0 of
// T(x) = x/2 + b with ‖b‖ = 2·radius, so that the bound fails exactly when
// the estimate errs by more than about the radius. Over 400 fixed seeds per
// law (heavy tails, rare large outliers) and norm, failures stay within δ
// plus binomial slack; a single bucket's slack is the radius itself. Were
// CertifyRadius to pick RuleVarianceTruncated instead (not at these sizes:
// at about 400 unit samples the rounding of its sizes leaves the median of
// means cheaper; its coverage is TestCertifyTruncatedCoverage's), the same
// plan's number of buckets would be requested through Certify.Calls, which
// pins the median of means.
func TestCertifyRadiusVarianceCoverage(t *testing.T) {
	const runs, size = 400, 400 // the radius is set so that N ≈ size
	for _, delta := range []float64{0.05, 0.01, 1e-3} {
		k, pk, share := momPlan(delta)
		for _, lw := range radiusLaws {
			for _, norm := range certNorms(t)[:2] {
				name := fmt.Sprintf("δ=%g/%v(p=%g)/%v", delta, lw.l, lw.p, norm)
				d := norm.Len()
				sigma2 := float64(d) * lw.l.variance(lw.p)
				radius := math.Sqrt(norm.Kappa() * sigma2 * float64(k) / (pk * share * share * size))
				o, truth := radiusOracle(norm, lw.l, lw.p, 2*radius)
				p := Problem{Oracle: o, Norm: norm}
				x := make([]float64, d)
				w := norm.Kappa() * sigma2
				calls := 0
				if _, ok := truncCheaper(norm.Kappa(), norm.C(), w, delta, radius, momCost(w, radius, k, pk, share)); ok && flatHilbert(norm) {
					calls = k // RuleVarianceTruncated otherwise: TestCertifyTruncatedCoverage
				}
				fails := 0
				for seed := range uint64(runs) {
					c, err := CertifyRadius(context.Background(), p, x, radius, 1, &Settings{Seed: seed, Certify: CertifySettings{Delta: delta, Calls: calls}})
					require.NoError(t, err, name)
					require.Equal(t, RuleVarianceMoM, c.Rule, name)
					require.Equal(t, int64(k), c.Calls, name)
					if k == 1 {
						require.LessOrEqual(t, c.Bound-c.Estimate, radius*(1+1e-12), name)
					}
					if truth > c.Bound {
						fails++
					}
				}
				require.LessOrEqual(t, float64(fails)/runs, certFailSlack(delta, runs), name)
			}
		}
	}
}

// radiusLaws are the noise laws of the radius coverage tests: heavy tails
// (Student-t with 2.5 degrees of freedom, no fourth moment), skew
// (lognormal) and rare large outliers (two-point laws with probabilities
// 1e-2 and 1e-3).
var radiusLaws = [...]struct {
	l certLaw
	p float64
}{{lawStudentT, 0}, {lawLognormal, 0}, {lawTwoPoint, 1e-2}, {lawTwoPoint, 1e-3}}

// radiusOracle returns the oracle of a radius coverage test on norm,
// T(x) = x/2 + b with b along a fixed direction and ‖b‖ = truth, noise of
// law l (parameter p), declaring its variance bound only, and ‖b‖.
func radiusOracle(norm Norm, l certLaw, p, truth float64) (*certOracle, float64) {
	b := []float64{1, -0.5, 0.25, 0.8}
	nb := norm.Norm(b)
	for i := range b {
		b[i] *= truth / nb
	}
	o := newCertOracle(norm.Len(), b, l, p)
	o.declareVar = true
	return o, norm.Norm(b)
}

// TestCertifyRadiusCalls: CertifyRadius honours Certify.Calls. In ℓ2 at
// δ = 0.05, where it picks RuleVarianceTruncated on its own, one call gives
// the single Chebyshev bucket at ε = radius (p = momBucketFailure(1, δ))
// and five calls the median of means of five buckets at ε = radius/2; a
// bounded-noise certificate splits its size over the calls, drawing at
// least the size one call would.
func TestCertifyRadiusCalls(t *testing.T) {
	const delta, radius = 0.05, 0.05
	l2, err := NewLP(2, 4)
	require.NoError(t, err)
	x := make([]float64, 4)
	o := newCertOracle(4, []float64{0.1, 0, 0, 0}, lawStudentT, 0)
	o.declareVar = true
	p := Problem{Oracle: o, Norm: l2}
	w := l2.Kappa() * o.NoiseVariance(x, l2)
	for _, calls := range []int{0, 1, 5} {
		c, err := CertifyRadius(context.Background(), p, x, radius, 1, &Settings{Certify: CertifySettings{Delta: delta, Calls: calls}})
		require.NoError(t, err, "calls %d", calls)
		require.Equal(t, delta, c.Delta, "calls %d", calls)
		if calls == 0 {
			require.Equal(t, RuleVarianceTruncated, c.Rule)
			continue
		}
		require.Equal(t, RuleVarianceMoM, c.Rule, "calls %d", calls)
		require.Equal(t, int64(calls), c.Calls)
		eb := radius
		if calls > 1 {
			eb /= 2
		}
		size := math.Ceil(w / (momBucketFailure(calls, delta) * eb * eb))
		require.Equal(t, int64(calls)*int64(size), c.Samples, "calls %d", calls)
		if calls == 1 {
			require.LessOrEqual(t, c.Bound-c.Estimate, radius*(1+1e-12))
		}
	}
	b := newCertOracle(4, []float64{0.1, 0, 0, 0}, lawTwoPoint, 0.1)
	b.declareBound = true
	var one int64
	for _, calls := range []int{0, 1, 3} {
		c, err := CertifyRadius(context.Background(), Problem{Oracle: b, Norm: l2}, x, radius, 1, &Settings{Certify: CertifySettings{Delta: delta, Calls: calls}})
		require.NoError(t, err, "calls %d", calls)
		require.Equal(t, RuleBoundedNoise, c.Rule, "calls %d", calls)
		require.Equal(t, int64(max(calls, 1)), c.Calls, "calls %d", calls)
		require.LessOrEqual(t, c.Bound-c.Estimate, radius*(1+1e-12), "calls %d", calls)
		if calls <= 1 {
			one = c.Samples
			continue
		}
		require.GreaterOrEqual(t, c.Samples, one, "calls %d", calls)
		require.Less(t, c.Samples, one+int64(calls), "calls %d", calls)
	}
}
