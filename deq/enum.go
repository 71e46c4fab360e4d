package deq

import (
	"fmt"
	"slices"
	"strings"
)

// enum is one of the package's enumerations, named by its String.
type enum interface {
	~int
	fmt.Stringer
}

// parseEnum returns the value among vals whose String is s, or an error
// naming s and the accepted names.
func parseEnum[T enum](what, s string, vals []T) (T, error) {
	names := make([]string, len(vals))
	for i, v := range vals {
		if v.String() == s {
			return v, nil
		}
		names[i] = v.String()
	}
	return 0, fmt.Errorf("deq: unknown %s %q (want %s)", what, s, strings.Join(names, ", "))
}

// marshalEnum returns the name of v, or an error if v is not among vals.
func marshalEnum[T enum](what string, v T, vals []T) ([]byte, error) {
	if !slices.Contains(vals, v) {
		return nil, fmt.Errorf("deq: %v is not a %s", v, what)
	}
	return []byte(v.String()), nil
}

func backwards() []Backward     { return []Backward{Implicit, JacobianFree, Phantom} }
func oracleModes() []OracleMode { return []OracleMode{Auto, Exact, Sampled} }
func monitors() []Monitor       { return []Monitor{MonitorUnproven, MonitorAlways, MonitorNever} }

func (b Backward) valid() bool   { return slices.Contains(backwards(), b) }
func (m OracleMode) valid() bool { return slices.Contains(oracleModes(), m) }
func (m Monitor) valid() bool    { return slices.Contains(monitors(), m) }

// ParseBackward returns the backward mode named s: "implicit",
// "jacobian-free" or "phantom" (as String names them). Any other name is an
// error.
func ParseBackward(s string) (Backward, error) {
	return parseEnum("backward mode", s, backwards())
}

// MarshalText implements encoding.TextMarshaler with the mode's name. It
// returns an error for a value that is not a mode.
func (b Backward) MarshalText() ([]byte, error) {
	return marshalEnum("backward mode", b, backwards())
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseBackward.
func (b *Backward) UnmarshalText(text []byte) error {
	v, err := ParseBackward(string(text))
	if err == nil {
		*b = v
	}
	return err
}

// ParseOracleMode returns the oracle mode named s: "auto", "exact" or
// "sampled" (as String names them). Any other name is an error.
func ParseOracleMode(s string) (OracleMode, error) {
	return parseEnum("oracle mode", s, oracleModes())
}

// MarshalText implements encoding.TextMarshaler with the mode's name. It
// returns an error for a value that is not a mode.
func (m OracleMode) MarshalText() ([]byte, error) {
	return marshalEnum("oracle mode", m, oracleModes())
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseOracleMode.
func (m *OracleMode) UnmarshalText(text []byte) error {
	v, err := ParseOracleMode(string(text))
	if err == nil {
		*m = v
	}
	return err
}

// ParseMonitor returns the monitor mode named s: "unproven", "always" or
// "never" (as String names them). Any other name is an error.
func ParseMonitor(s string) (Monitor, error) {
	return parseEnum("monitor mode", s, monitors())
}

// MarshalText implements encoding.TextMarshaler with the mode's name. It
// returns an error for a value that is not a mode.
func (m Monitor) MarshalText() ([]byte, error) {
	return marshalEnum("monitor mode", m, monitors())
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseMonitor.
func (m *Monitor) UnmarshalText(text []byte) error {
	v, err := ParseMonitor(string(text))
	if err == nil {
		*m = v
	}
	return err
}
