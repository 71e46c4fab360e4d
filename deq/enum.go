package deq

import (
	"fmt"
	"strings"
)

// The names of the enumerations' values 0, 1, …, as String gives them and
// the Parse functions accept them.
func backwardNames() []string   { return []string{"implicit", "jacobian-free", "phantom"} }
func oracleModeNames() []string { return []string{"auto", "exact", "sampled"} }
func monitorNames() []string    { return []string{"unproven", "always", "never"} }

// enumName returns names[v], or typ(v) for a value outside the enumeration.
func enumName[T ~int](typ string, v T, names []string) string {
	if v < 0 || int(v) >= len(names) {
		return fmt.Sprintf("%s(%d)", typ, int(v))
	}
	return names[v]
}

// validEnum reports whether v is one of the values named by names.
func validEnum[T ~int](v T, names []string) bool { return v >= 0 && int(v) < len(names) }

// parseEnum returns the value named s, or an error naming s and the
// accepted names.
func parseEnum[T ~int](what, s string, names []string) (T, error) {
	for i, n := range names {
		if n == s {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("deq: unknown %s %q (want %s)", what, s, strings.Join(names, ", "))
}

// marshalEnum returns the name of v, or an error if v has none.
func marshalEnum[T ~int](what, typ string, v T, names []string) ([]byte, error) {
	if !validEnum(v, names) {
		return nil, fmt.Errorf("deq: %s is not a %s", enumName(typ, v, names), what)
	}
	return []byte(names[v]), nil
}

// unmarshalEnum sets *dst to the value named text; on error it leaves *dst
// alone.
func unmarshalEnum[T ~int](dst *T, what string, text []byte, names []string) error {
	v, err := parseEnum[T](what, string(text), names)
	if err == nil {
		*dst = v
	}
	return err
}

func (b Backward) valid() bool   { return validEnum(b, backwardNames()) }
func (m OracleMode) valid() bool { return validEnum(m, oracleModeNames()) }
func (m Monitor) valid() bool    { return validEnum(m, monitorNames()) }

// ParseBackward returns the backward mode named s: "implicit",
// "jacobian-free" or "phantom" (as String names them). Any other name,
// the empty one included, is an error.
func ParseBackward(s string) (Backward, error) {
	return parseEnum[Backward]("backward mode", s, backwardNames())
}

// MarshalText implements encoding.TextMarshaler with the mode's name. It
// returns an error for a value that is not a mode.
func (b Backward) MarshalText() ([]byte, error) {
	return marshalEnum("backward mode", "Backward", b, backwardNames())
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseBackward.
func (b *Backward) UnmarshalText(text []byte) error {
	return unmarshalEnum(b, "backward mode", text, backwardNames())
}

// ParseOracleMode returns the oracle mode named s: "auto", "exact" or
// "sampled" (as String names them). Any other name is an error.
func ParseOracleMode(s string) (OracleMode, error) {
	return parseEnum[OracleMode]("oracle mode", s, oracleModeNames())
}

// MarshalText implements encoding.TextMarshaler with the mode's name. It
// returns an error for a value that is not a mode.
func (m OracleMode) MarshalText() ([]byte, error) {
	return marshalEnum("oracle mode", "OracleMode", m, oracleModeNames())
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseOracleMode.
func (m *OracleMode) UnmarshalText(text []byte) error {
	return unmarshalEnum(m, "oracle mode", text, oracleModeNames())
}

// ParseMonitor returns the monitor mode named s: "unproven", "always" or
// "never" (as String names them). Any other name is an error.
func ParseMonitor(s string) (Monitor, error) {
	return parseEnum[Monitor]("monitor mode", s, monitorNames())
}

// MarshalText implements encoding.TextMarshaler with the mode's name. It
// returns an error for a value that is not a mode.
func (m Monitor) MarshalText() ([]byte, error) {
	return marshalEnum("monitor mode", "Monitor", m, monitorNames())
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseMonitor.
func (m *Monitor) UnmarshalText(text []byte) error {
	return unmarshalEnum(m, "monitor mode", text, monitorNames())
}
