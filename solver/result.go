package solver

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Status says why a method stopped.
type Status int

const (
	// NotTerminated is the zero Status: the method has not stopped.
	NotTerminated Status = iota
	// Success: the residual (exact, or estimated for stochastic methods) reached
	// the tolerance.
	Success
	// IterationLimit: Settings.MaxIter iterations (epochs for VR-GHAL) ran out.
	IterationLimit
	// SampleLimit: Settings.MaxSamples unit samples ran out.
	SampleLimit
	// TimeLimit: Settings.MaxTime elapsed.
	TimeLimit
	// Canceled: the context was canceled or its deadline passed.
	Canceled
	// Diverged: the residual grew past Settings.DivergenceFactor times its best
	// value, or an evaluation produced NaN or Inf.
	Diverged
	// Stagnated: the method can make no further progress (for instance a
	// singular update it cannot repair).
	Stagnated
	// Failure: the oracle returned an error.
	Failure
)

var statusNames = [...]string{"NotTerminated", "Success", "IterationLimit", "SampleLimit", "TimeLimit", "Canceled", "Diverged", "Stagnated", "Failure"}

// String implements fmt.Stringer. It returns the name of the constant, as
// ParseStatus accepts it.
func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// ErrUnknownStatus is wrapped by the errors of ParseStatus and
// Status.UnmarshalText for a name that is not a Status's.
var ErrUnknownStatus = errors.New("solver: unknown status")

// ParseStatus parses a Status name as printed by Status.String. Its error
// wraps ErrUnknownStatus.
func ParseStatus(name string) (Status, error) {
	return parseEnum(name, NotTerminated, Failure, ErrUnknownStatus, strings.Join(statusNames[:], ", "))
}

// MarshalText implements encoding.TextMarshaler; it returns the name
// Status.String prints, and an error for a value that is not a Status.
func (s Status) MarshalText() ([]byte, error) { return marshalEnum(s, NotTerminated, Failure) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseStatus.
func (s *Status) UnmarshalText(b []byte) error { return unmarshalEnum(s, b, ParseStatus) }

// TracePoint is one entry of the residual trace.
type TracePoint struct {
	Iter     int
	Calls    int64
	Samples  int64
	Residual float64
	Elapsed  time.Duration
}

// Stats counts the work of a solve. Certificate samples are counted in the
// Certificate, not here.
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

// Certificate bounds the residual ‖T(x̂) − x̂‖ of a returned point.
type Certificate struct {
	// Estimate is a point estimate of ‖T(x̂) − x̂‖.
	Estimate float64
	// Bound is an upper bound on ‖T(x̂) − x̂‖ that holds with probability at
	// least 1 − Delta over the certificate's own samples.
	Bound float64
	// Delta is the failure probability of Bound; zero for an exact certificate.
	Delta float64
	// Samples counts the unit samples the certificate used, and Calls the
	// oracle evaluations.
	Samples int64
	Calls   int64
	// Rule names how Bound was obtained.
	Rule string
	// PerExample holds per-example bounds when the norm is Batched.
	PerExample []float64
}

// Result is what Solve returns.
type Result struct {
	// X is the returned point: the lowest-residual iterate evaluated for the
	// deterministic methods, the last completed epoch's point for VR-GHAL.
	X []float64
	// Residual is the method's own value of ‖T(X) − X‖ (exact for
	// deterministic oracles, an estimate otherwise).
	Residual float64
	Status   Status
	Stats    Stats
	// Certificate is nil when Settings.Certify.Skip is set, and for a
	// stochastic oracle when the context was done before the certificate's
	// samples could be drawn (Status Canceled).
	Certificate *Certificate
}
