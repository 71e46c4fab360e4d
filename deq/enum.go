package deq

import "errors"

// errUnknown is wrapped by the errors of the Parse functions of this
// package for a name they do not accept.
var errUnknown = errors.New("deq: unknown")

func (b Backward) valid() bool   { return backwards.Valid(b) }
func (m OracleMode) valid() bool { return oracleModes.Valid(m) }
func (m Monitor) valid() bool    { return monitors.Valid(m) }

// ParseBackward returns the backward mode named s: "implicit",
// "jacobian-free" or "phantom" (as String names them). Any other name,
// the empty one included, is an error.
func ParseBackward(s string) (Backward, error) { return backwards.Parse(s) }

// MarshalText implements encoding.TextMarshaler with the mode's name. It
// returns an error for a value that is not a mode.
func (b Backward) MarshalText() ([]byte, error) { return backwards.MarshalText(b) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseBackward.
func (b *Backward) UnmarshalText(text []byte) error { return backwards.UnmarshalText(b, text) }

// ParseOracleMode returns the oracle mode named s: "auto", "exact" or
// "sampled" (as String names them). Any other name is an error.
func ParseOracleMode(s string) (OracleMode, error) { return oracleModes.Parse(s) }

// MarshalText implements encoding.TextMarshaler with the mode's name. It
// returns an error for a value that is not a mode.
func (m OracleMode) MarshalText() ([]byte, error) { return oracleModes.MarshalText(m) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseOracleMode.
func (m *OracleMode) UnmarshalText(text []byte) error { return oracleModes.UnmarshalText(m, text) }

// ParseMonitor returns the monitor mode named s: "unproven", "always" or
// "never" (as String names them). Any other name is an error.
func ParseMonitor(s string) (Monitor, error) { return monitors.Parse(s) }

// MarshalText implements encoding.TextMarshaler with the mode's name. It
// returns an error for a value that is not a mode.
func (m Monitor) MarshalText() ([]byte, error) { return monitors.MarshalText(m) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseMonitor.
func (m *Monitor) UnmarshalText(text []byte) error { return monitors.UnmarshalText(m, text) }
