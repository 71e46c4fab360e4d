package deq

import (
	"errors"

	"github.com/deqgo/deq/internal/enum"
)

// errUnknown is wrapped by the errors of the Parse functions of this
// package for a name they do not accept.
var errUnknown = errors.New("deq: unknown")

// The names of the package's enumerations, one table each.
var (
	backwards   = enum.Table[Backward]{Names: []string{"", "implicit", "jacobian-free", "phantom"}, Unknown: errUnknown, What: "backward mode", Want: "implicit, jacobian-free, phantom", Invalid: "deq: %s is not a backward mode"}
	oracleModes = enum.Table[OracleMode]{Names: []string{"auto", "exact", "sampled"}, Unknown: errUnknown, What: "oracle mode", Invalid: "deq: %s is not an oracle mode"}
	monitors    = enum.Table[Monitor]{Names: []string{"unproven", "always", "never"}, Unknown: errUnknown, What: "monitor mode", Invalid: "deq: %s is not a monitor mode"}
)

// String returns the name ParseBackward accepts.
func (b Backward) String() string { return backwards.Name(b) }

// String returns the name ParseOracleMode accepts.
func (m OracleMode) String() string { return oracleModes.Name(m) }

// String returns the name ParseMonitor accepts.
func (m Monitor) String() string { return monitors.Name(m) }

func (b Backward) valid() bool { return backwards.Valid(b) }

// Backwards returns the explicit backward modes, Implicit, JacobianFree and
// Phantom (not DefaultBackward).
func Backwards() []Backward      { return backwards.Values()[1:] }
func (m OracleMode) valid() bool { return oracleModes.Valid(m) }
func (m Monitor) valid() bool    { return monitors.Valid(m) }

// ParseBackward returns the backward mode named s: "implicit",
// "jacobian-free" or "phantom" (as String names them), or DefaultBackward
// for "". Any other name is an error.
func ParseBackward(s string) (Backward, error) { return backwards.Parse(s) }

// MarshalText implements encoding.TextMarshaler with the mode's name (""
// for DefaultBackward). It returns an error for a value that is not a mode.
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
