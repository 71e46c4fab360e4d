package solver

import (
	"errors"
	"fmt"
	"time"
)

// ErrNonFinite is wrapped by every error that reports a NaN or an infinity
// where a finite value is required: in an argument (Solve's x0,
// CertifyRadius's x), in an oracle evaluation during a solve or its
// certificate, or in a residual estimate. The packages built on this one
// (deq, train, datasets) wrap it too for the values that enter them, so
// that a caller tests for every such fault with errors.Is(err,
// ErrNonFinite).
var ErrNonFinite = errors.New("non-finite value (NaN or ±Inf)")

// Status says why a method stopped.
type Status int

const (
	// NotTerminated is the zero Status: the method has not stopped.
	NotTerminated Status = iota
	// Success: the residual reached the tolerance, and this is proven: the
	// exact residual of a deterministic oracle, a rigorous bound of the
	// method (VR-GHAL's, when the oracle declares a NoiseBound or
	// VarianceBound), or a rigorous Certificate whose Bound is at most the
	// tolerance.
	Success
	// IterationLimit: Settings.MaxIter iterations (epochs for VR-GHAL) ran out.
	IterationLimit
	// SampleLimit: Settings.MaxSamples unit samples ran out.
	SampleLimit
	// TimeLimit: Settings.MaxTime elapsed (see Solve).
	TimeLimit
	// Canceled: the context was canceled or its deadline passed.
	Canceled
	// Diverged: the residual grew past Settings.DivergenceFactor times its
	// best value (an overflow to +Inf included), or an evaluation or a
	// residual estimate was NaN or ±Inf. In the second case Solve also
	// returns an error wrapping ErrNonFinite.
	Diverged
	// Stagnated: the method can make no further progress (for instance a
	// singular update it cannot repair).
	Stagnated
	// Failure: the oracle returned an error.
	Failure
	// ToleranceEstimated: a stochastic method stopped because its estimate
	// of the residual reached the tolerance, but no rigorous bound did: the
	// oracle declares nothing that bounds the estimate's error and the
	// Certificate is not a rigorous bound below the tolerance. The
	// residual may exceed the tolerance.
	ToleranceEstimated
)

// TracePoint is one entry of the residual trace.
type TracePoint struct {
	Iter     int
	Calls    int64
	Samples  int64
	Residual float64
	Elapsed  time.Duration
}

// Stats counts the work of a solve. The samples of a certificate Solve
// draws are counted in the Certificate, not here; those of a method's own
// certificate (Certificate.Own) are counted in both.
type Stats struct {
	// Iterations counts recorded iterations (epochs for VR-GHAL).
	Iterations int
	// Calls counts oracle evaluations.
	Calls int64
	// Samples counts unit samples: a minibatch of m counts m.
	Samples int64
	// Trace holds the recorded residuals, one per iteration, unless
	// Settings.NoTrace is set.
	Trace []TracePoint
	// Wall is the time spent in Solve.
	Wall time.Duration
}

// Certificate bounds the residual ‖T(x̂) − x̂‖ of a returned point, as
// far as the oracle's declarations allow (see CertRule):
//
//   - Rule.Exact(): Bound is the exact residual, Delta is 0;
//   - RuleBoundedNoise, RuleVarianceMoM, RuleVarianceTruncated:
//     ‖T(x̂) − x̂‖ ≤ Bound with probability at least 1 − Delta over the
//     certificate's own samples (over the method's run when Own is set);
//   - RuleEstimate: Bound is an estimate with no guarantee and Delta is
//     NaN, so that it cannot be read as a probability.
//
// Rigorous reports which case holds.
type Certificate struct {
	// Estimate is a point estimate of ‖T(x̂) − x̂‖.
	Estimate float64
	// Bound is an upper bound on ‖T(x̂) − x̂‖ (with probability at least
	// 1 − Delta) when Rigorous() holds, an estimate of one otherwise.
	Bound float64
	// Delta is the failure probability of Bound: 0 for an exact rule, NaN
	// for RuleEstimate.
	Delta float64
	// Samples counts the unit samples the certificate used, and Calls the
	// oracle evaluations of its rule (a call of more than 2¹⁶ unit samples,
	// which the certificate draws in chunks, counts once). Both are zero when an exact rule reuses the
	// method's own exact evaluation at x̂ (its last exact evaluation was at
	// x̂ itself), which Result.Stats already counts.
	Samples int64
	Calls   int64
	// Rule says how Bound was obtained and what it guarantees.
	Rule CertRule
	// Own reports that the certificate is the method's own estimate at x̂
	// (see Env.OfferCertificate): Rule is the rule it was made by, Samples
	// and Calls are the estimate's, already counted in Result.Stats, and
	// Delta is the failure probability the method stated for it.
	Own bool
	// PerExample holds per-example bounds, in the same sense as Bound,
	// when the norm is Batched.
	PerExample []float64
}

// Rigorous reports whether Bound is proven (exactly, or with probability
// at least 1 − Delta): whether Rule is not RuleEstimate.
func (c *Certificate) Rigorous() bool { return c.Rule.Rigorous() }

// Guarantee returns the certificate's claim in words, for reports:
// "≤ B (exact)", "≤ B with probability ≥ 1 − δ (rule R)" (with ", the
// method's own estimate" after R when Own is set) or
// "≈ B (estimate, no guarantee)", B and δ printed with %.4g and %g.
func (c *Certificate) Guarantee() string {
	switch {
	case c.Rule.Exact():
		return fmt.Sprintf("≤ %.4g (exact, rule %v)", c.Bound, c.Rule)
	case c.Rule.Rigorous() && c.Own:
		return fmt.Sprintf("≤ %.4g with probability ≥ %g (rule %v, the method's own estimate)", c.Bound, 1-c.Delta, c.Rule)
	case c.Rule.Rigorous():
		return fmt.Sprintf("≤ %.4g with probability ≥ %g (rule %v)", c.Bound, 1-c.Delta, c.Rule)
	}
	return fmt.Sprintf("≈ %.4g (estimate, no guarantee)", c.Bound)
}

// Result is what Solve returns.
type Result struct {
	// X is the returned point: the lowest-residual iterate evaluated for the
	// deterministic methods, the last completed epoch's point for VR-GHAL.
	X []float64
	// Residual is the method's own value of ‖T(X) − X‖ (exact for
	// deterministic oracles, an estimate otherwise).
	Residual float64
	// Tol is the absolute tolerance the solve measured itself against:
	// Settings.Tol, or under Settings.Relative Settings.Tol times the first
	// recorded residual (NaN when nothing was recorded).
	Tol    float64
	Status Status
	Stats  Stats
	// Certificate is nil when Settings.Certify.Skip is set; for an
	// oracle that is not Deterministic when the context or Settings.MaxTime
	// was done before the certificate's samples were all drawn (see
	// Solve): a stopped solve (Status Canceled or TimeLimit) keeps X, the
	// best point so far, and gets no certificate but the exact one of a
	// Deterministic oracle; and when the certificate failed (Solve then
	// returns its error; a certificate whose evaluations are NaN or ±Inf
	// is such a failure, wrapping ErrNonFinite). Its Bound is never NaN.
	Certificate *Certificate
}
