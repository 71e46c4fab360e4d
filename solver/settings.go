package solver

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/deqgo/deq/internal/check"
)

// Default values used where a Settings field is zero.
const (
	DefaultTol              = 1e-6
	DefaultMaxIter          = 10000
	DefaultDivergenceFactor = 1e8
	DefaultCertDelta        = 0.05
)

// Settings control a Solve. The zero value of every field selects the
// documented default, so a nil *Settings and &Settings{} mean the same.
// Negative or NaN values are errors.
type Settings struct {
	// Tol is the residual tolerance ‖T(x) − x‖ ≤ Tol in the problem's norm
	// (for a Batched norm with AggMax: for every example). Zero means
	// DefaultTol.
	Tol float64
	// Relative makes Tol relative to the residual of the first recorded
	// iterate (the start point, for every method of this package).
	Relative bool
	// MaxIter limits iterations (epochs for VR-GHAL). Zero means DefaultMaxIter.
	MaxIter int
	// MaxSamples limits unit samples drawn by the method (not counting the
	// certificate). Zero means no limit. A method never draws a minibatch that
	// would exceed it.
	MaxSamples int64
	// MaxTime limits the wall time of the solve, the certificate included
	// (see Solve; for CertifyRadius, of the certificate). Zero means no
	// limit.
	MaxTime time.Duration
	// DivergenceFactor stops a method with Status Diverged when a residual
	// exceeds DivergenceFactor times the best one recorded. Zero means
	// DefaultDivergenceFactor; +Inf lifts the limit (see the package
	// documentation, Zero values).
	DivergenceFactor float64
	// Seed seeds the method's own random draws (minibatch seeds).
	Seed uint64
	// Recorder, if not nil, receives every trace point as it is recorded
	// (with its point, if it is a PointRecorder). An error from it stops
	// the solve with Status Failure.
	Recorder Recorder
	// NoTrace keeps Stats.Trace empty (the Recorder still receives points).
	NoTrace bool
	// Certify controls the residual certificate computed after the method,
	// or taken from the method when it offers its own (see
	// Env.OfferCertificate).
	Certify CertifySettings
	// Workspace, if not nil, holds the scratch memory of the solve, kept
	// for the next solve that uses it (see Workspace: one solve at a
	// time). Nil means a fresh workspace for every solve.
	Workspace *Workspace
	// Workers is the number of goroutines, the caller's included, that
	// share the passes over whole vectors which the Env makes for every
	// method (copies, finiteness checks, differences) and those of
	// Anderson (residuals with their inner products, the mixing step); the
	// other methods' own arithmetic, the oracle and the norm run on the
	// caller alone. One means serial. Zero means runtime.GOMAXPROCS(0) for
	// problems of dimension at least MinParallelLen and one below. Results
	// do not depend on it: the passes cut vectors into blocks of a fixed
	// length and add the partial sums of inner products in block order,
	// whatever the number of workers. The helpers work only during a pass:
	// each has finished its blocks when the pass returns and exits right
	// after.
	Workers int
}

// CertifySettings control the residual certificate.
type CertifySettings struct {
	// Skip leaves Result.Certificate nil.
	Skip bool
	// Delta is the certificate's failure probability. Zero means
	// DefaultCertDelta. Must lie in (0, 1).
	Delta float64
	// Samples is the number of unit samples per oracle call of a stochastic
	// certificate. Zero selects a size from the solve (see the certificate
	// documentation). Under a VarianceBound in ℓ2 or Schatten-2 with Calls
	// zero, the median of means' calls times this size is the budget that
	// RuleVarianceTruncated, when its planned radius for it is smaller,
	// spends in calls of its own sizes.
	Samples int
	// Calls is the number of independent oracle calls of a stochastic
	// certificate. Zero selects a number from Delta.
	Calls int
	// Seed seeds the certificate's samples; it is mixed with Settings.Seed so
	// that the certificate's samples are independent of the solve's.
	Seed uint64
	// Sampled certifies a FiniteSum oracle that declares a TermBound from
	// a sample of its terms (RuleSampledBernstein, RuleSampledSerfling) at
	// failure probability Delta, instead of the exact pass, whenever the
	// rule expects to need fewer than Terms() term evaluations (see
	// SampledRule and docs/sampled-certificates.md). The exact pass is
	// still used when it is cheaper, and for oracles that declare no term
	// bound; in a norm where no sampled rule is proven the certificate
	// fails with an error. The methods that certify their own stops
	// (GrowingBatch, VR-GHAL) use the sampled rule too. False, the
	// default, keeps exact certificates.
	Sampled bool
}

// Recorder receives trace points as they are recorded.
type Recorder interface {
	Record(TracePoint) error
}

// PointRecorder is a Recorder that also sees the point of each trace point.
// When Settings.Recorder implements it, Solve calls RecordPoint instead of
// Record, with x the iterate the method records: after Env.KeepLast (the
// stochastic methods), the point Solve would return had the method stopped
// there. Benchmarks use it to measure the true residual of every iterate
// with an exact operator. x is only valid during the call: RecordPoint must
// neither modify nor keep it.
type PointRecorder interface {
	Recorder
	RecordPoint(p TracePoint, x []float64) error
}

// RecorderFunc adapts a function to a Recorder.
type RecorderFunc func(TracePoint) error

// Record implements Recorder.
func (f RecorderFunc) Record(p TracePoint) error { return f(p) }

// withDefaults validates s and returns a copy with defaults filled in.
func (s *Settings) withDefaults() (Settings, error) {
	var c Settings
	if s != nil {
		c = *s
	}
	if err := cmp.Or(
		check.PositiveFinite("solver: Settings.Tol", c.Tol),
		check.NotNegative("solver: Settings.MaxIter", c.MaxIter),
		check.NotNegative("solver: Settings.MaxSamples", c.MaxSamples),
		check.NotNegative("solver: Settings.MaxTime", c.MaxTime),
		check.NotNegative("solver: Settings.Workers", c.Workers),
	); err != nil {
		return c, err
	}
	switch {
	case c.DivergenceFactor < 0 || math.IsNaN(c.DivergenceFactor) || (c.DivergenceFactor > 0 && c.DivergenceFactor <= 1):
		return c, fmt.Errorf("solver: Settings.DivergenceFactor = %v must exceed 1", c.DivergenceFactor)
	case c.Certify.Delta < 0 || c.Certify.Delta >= 1 || math.IsNaN(c.Certify.Delta):
		return c, fmt.Errorf("solver: Settings.Certify.Delta = %v outside (0, 1)", c.Certify.Delta)
	}
	if err := cmp.Or(
		check.NotNegative("solver: Settings.Certify.Samples", c.Certify.Samples),
		check.NotNegative("solver: Settings.Certify.Calls", c.Certify.Calls),
	); err != nil {
		return c, err
	}
	c.Tol = cmp.Or(c.Tol, DefaultTol)
	c.MaxIter = cmp.Or(c.MaxIter, DefaultMaxIter)
	c.DivergenceFactor = cmp.Or(c.DivergenceFactor, DefaultDivergenceFactor)
	c.Certify.Delta = cmp.Or(c.Certify.Delta, DefaultCertDelta)
	return c, nil
}

// checkRange returns an error naming field if v is NaN or outside the
// interval (lo, hi], or (lo, hi) when openHi is set.
func checkRange(field string, v, lo, hi float64, openHi bool) error {
	if math.IsNaN(v) || v <= lo || v > hi || (openHi && v == hi) {
		r := "]"
		if openHi {
			r = ")"
		}
		return fmt.Errorf("solver: %s = %v outside (%v, %v%s", field, v, lo, hi, r)
	}
	return nil
}
