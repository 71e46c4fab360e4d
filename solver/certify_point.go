package solver

import (
	"context"
	"fmt"
	"math"
)

// CertifyRadius certifies the residual ‖T(x) − x‖ of a given point x by the
// rule the oracle's declarations allow (see CertRule), with the rule's
// sample size chosen so that its radius — the amount its Bound may exceed
// the residual estimate — is at most radius: the smallest N for which the
// concentration radius of RuleBoundedNoise (the Banach-space one, or in ℓ∞
// the smaller coordinatewise one of a CoordinateNoiseBound) is at most radius,
// or for RuleVarianceMoM the buckets k whose radius r* + ε needs the fewest
// samples: one bucket (r* = 0) with ε = radius, or the Chebyshev buckets of
// momChebyshevBuckets(δ) with ε = radius/2, whichever needs fewer samples
// (a single bucket at δ ≥ 0.0028), or in a flat Hilbert norm the plan of
// RuleVarianceTruncated at that radius (planTruncated) when its closed-form
// size is smaller still (for radius a, 18.1κσ²/a² unit samples against 20
// at δ = 0.05, 28.2 against 100 at 0.01, 42.5 against 351 at 1e-3). A
// deterministic or FiniteSum
// oracle gets its exact certificate whatever radius says; an oracle that
// declares nothing gets RuleEstimate with the empirical scale, from
// buckets of fallback unit samples (its radius is not known in advance).
// δ is s.Certify.Delta and the samples are drawn as Solve's certificate
// draws them, from s.Seed and s.Certify.Seed. s.Certify.Samples is ignored
// (the radius sizes the draw); s.Certify.Calls, when not zero, fixes the
// number of oracle calls instead of the rule's own choice, as for Solve's
// certificate: RuleVarianceMoM then has exactly that many buckets (p =
// momBucketFailure(calls, δ), ε = radius for one bucket, radius/2 for
// more), RuleVarianceTruncated is not considered, RuleBoundedNoise splits
// its N samples over that many calls and RuleEstimate has that many
// buckets (at least 3). Benchmarks use it to charge every method the same
// certificate.
//
// CertifyRadius observes ctx and settings.MaxTime (which bounds its wall
// time) before each oracle call, and splits calls of more than 2¹⁶ unit
// samples into chunks as Solve's certificate does; when either ends the
// draw it returns no certificate and an error wrapping ctx's error (and
// ErrTimeLimit for MaxTime).
func CertifyRadius(ctx context.Context, p Problem, x []float64, radius float64, fallback int, settings *Settings) (*Certificate, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if len(x) != p.Norm.Len() {
		return nil, fmt.Errorf("solver: CertifyRadius: x has length %d, want %d", len(x), p.Norm.Len())
	}
	if err := checkFinite("solver: CertifyRadius: x", x); err != nil {
		return nil, err
	}
	if !(radius > 0) {
		return nil, fmt.Errorf("solver: CertifyRadius: radius = %v must be positive", radius)
	}
	s, err := settings.withDefaults()
	if err != nil {
		return nil, err
	}
	if s.MaxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.MaxTime, ErrTimeLimit)
		defer cancel()
	}
	o, norm := p.Oracle, p.Norm
	delta := s.Certify.Delta
	calls := s.Certify.Calls // the caller's, or 0 for the rule's own choice
	s.Certify.Samples = max(fallback, 1)
	if nd, ok := declaredNoise(o, x, norm); ok {
		c := max(calls, 1)
		n := nd.size(delta, radius) / float64(c)
		s.Certify.Calls, s.Certify.Samples = c, int(math.Min(math.Ceil(n), maxDraw))
	} else if v := declaredVariance(o, x, norm); !math.IsInf(v, 1) {
		k, pf, share := momPlanCalls(delta, calls)
		eb := share * radius
		s.Certify.Samples = int(math.Min(math.Ceil(norm.Kappa()*v/(pf*eb*eb)), maxDraw))
		s.Certify.Calls = k
		if calls == 0 && flatHilbert(norm) {
			w := norm.Kappa() * v
			if tp, ok := truncCheaper(norm.Kappa(), norm.C(), w, delta, radius, momCost(w, radius, k, pf, share)); ok {
				return certifyPlanned(ctx, p, &Result{X: x}, &s, 0, nil, &tp)
			}
		}
	}
	return certify(ctx, p, &Result{X: x}, &s, 0, nil)
}

// momPlanCalls returns momPlan(δ) when calls is 0, and otherwise the
// variance median of means of exactly calls buckets: per-bucket failure
// probability momBucketFailure(calls, δ) and accuracy share 1 for a single
// bucket (r* = 0), 1/2 for more (r* is at most 2ε on the event, about ε in
// practice; see momPlan).
func momPlanCalls(delta float64, calls int) (k int, p, share float64) {
	switch calls {
	case 0:
		return momPlan(delta)
	case 1:
		return 1, momBucketFailure(1, delta), 1
	}
	return calls, momBucketFailure(calls, delta), 0.5
}
