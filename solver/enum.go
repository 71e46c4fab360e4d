package solver

import (
	"errors"

	"github.com/deqgo/deq/internal/enum"
)

// The names of the package's enumerations, one table each.
var (
	statuses = enum.Table[Status]{
		Names:   []string{"NotTerminated", "Success", "IterationLimit", "SampleLimit", "TimeLimit", "Canceled", "Diverged", "Stagnated", "Failure", "ToleranceEstimated"},
		Unknown: ErrUnknownStatus,
	}
	models = enum.Table[Model]{
		Names:   []string{"unspecified", "bounded-variance", "lipschitz-expectation", "samplewise-lipschitz", "deterministic"},
		Unknown: ErrUnknownModel,
		Want:    "bounded-variance, lipschitz-expectation, samplewise-lipschitz or deterministic",
	}
	aggregates = enum.Table[Aggregate]{
		Names:   []string{"max", "mean"},
		Unknown: ErrUnknownAggregate,
		Or:      true,
	}
	certRules = enum.Table[CertRule]{
		Names:   []string{"estimate", "exact", "finite-sum-exact", "bounded-noise", "variance-mom", "variance-truncated", "sampled-bernstein", "sampled-serfling"},
		Unknown: ErrUnknownCertRule,
		Or:      true,
	}
)

// ErrUnknownStatus is wrapped by the errors of ParseStatus and
// Status.UnmarshalText for a name that is not a Status's.
var ErrUnknownStatus = errors.New("solver: unknown status")

// ErrUnknownModel is wrapped by the errors of ParseModel and
// Model.UnmarshalText for a name that is not a Model's.
var ErrUnknownModel = errors.New("solver: unknown oracle model")

// ErrUnknownAggregate is wrapped by the errors of ParseAggregate and
// Aggregate.UnmarshalText for a name that is not an Aggregate's.
var ErrUnknownAggregate = errors.New("solver: unknown aggregate")

// ErrUnknownCertRule is wrapped by the errors of ParseCertRule and
// CertRule.UnmarshalText for a name that is not a CertRule's.
var ErrUnknownCertRule = errors.New("solver: unknown certificate rule")

// String implements fmt.Stringer. It returns the name of the constant, as
// ParseStatus accepts it.
func (s Status) String() string { return statuses.Name(s) }

// String returns the model's name as accepted by ParseModel.
func (m Model) String() string { return models.Name(m) }

// String returns "max" or "mean", the names ParseAggregate accepts.
func (a Aggregate) String() string { return aggregates.Name(a) }

// String returns the rule's name as ParseCertRule accepts it.
func (r CertRule) String() string { return certRules.Name(r) }

// ParseStatus parses a Status name as printed by Status.String. Its error
// wraps ErrUnknownStatus.
func ParseStatus(name string) (Status, error) { return statuses.Parse(name) }

// ParseModel parses a Model name as printed by Model.String: one of the four
// oracle models, or "unspecified" for the zero Model. Its error wraps
// ErrUnknownModel.
func ParseModel(s string) (Model, error) { return models.Parse(s) }

// ParseAggregate parses an Aggregate name as printed by Aggregate.String.
// Its error wraps ErrUnknownAggregate.
func ParseAggregate(name string) (Aggregate, error) { return aggregates.Parse(name) }

// ParseCertRule parses a CertRule name as printed by CertRule.String. Its
// error wraps ErrUnknownCertRule.
func ParseCertRule(name string) (CertRule, error) { return certRules.Parse(name) }

// MarshalText implements encoding.TextMarshaler; it returns the name
// Status.String prints, and an error for a value that is not a Status.
func (s Status) MarshalText() ([]byte, error) { return statuses.MarshalText(s) }

// MarshalText implements encoding.TextMarshaler; it returns the name
// Model.String prints, and an error for a value that is not a Model.
func (m Model) MarshalText() ([]byte, error) { return models.MarshalText(m) }

// MarshalText implements encoding.TextMarshaler; it returns the name
// Aggregate.String prints, and an error for a value that is not an
// Aggregate.
func (a Aggregate) MarshalText() ([]byte, error) { return aggregates.MarshalText(a) }

// MarshalText implements encoding.TextMarshaler; it returns the name
// CertRule.String prints, and an error for a value that is not a CertRule.
func (r CertRule) MarshalText() ([]byte, error) { return certRules.MarshalText(r) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseStatus.
func (s *Status) UnmarshalText(b []byte) error { return statuses.UnmarshalText(s, b) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseModel.
func (m *Model) UnmarshalText(b []byte) error { return models.UnmarshalText(m, b) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseAggregate.
func (a *Aggregate) UnmarshalText(b []byte) error { return aggregates.UnmarshalText(a, b) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseCertRule.
func (r *CertRule) UnmarshalText(b []byte) error { return certRules.UnmarshalText(r, b) }
