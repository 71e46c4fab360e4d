package deq

import (
	"encoding"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// textEnum is what the enumerations offer at the JSON and flag boundary.
type textEnum interface {
	encoding.TextMarshaler
	String() string
}

func TestEnumsRoundTripByName(t *testing.T) {
	for _, tc := range []struct {
		v    textEnum
		name string
		back func(string) (textEnum, error)
	}{
		{DefaultBackward, "", parseAs(ParseBackward)},
		{Implicit, "implicit", parseAs(ParseBackward)},
		{JacobianFree, "jacobian-free", parseAs(ParseBackward)},
		{Phantom, "phantom", parseAs(ParseBackward)},
		{Auto, "auto", parseAs(ParseOracleMode)},
		{Exact, "exact", parseAs(ParseOracleMode)},
		{Sampled, "sampled", parseAs(ParseOracleMode)},
		{MonitorUnproven, "unproven", parseAs(ParseMonitor)},
		{MonitorAlways, "always", parseAs(ParseMonitor)},
		{MonitorNever, "never", parseAs(ParseMonitor)},
	} {
		require.Equal(t, tc.name, tc.v.String())
		text, err := tc.v.MarshalText()
		require.NoError(t, err)
		require.Equal(t, tc.name, string(text))
		got, err := tc.back(tc.name)
		require.NoError(t, err)
		require.Equal(t, tc.v, got)
	}
}

func parseAs[T textEnum](parse func(string) (T, error)) func(string) (textEnum, error) {
	return func(s string) (textEnum, error) { return parse(s) }
}

func TestEnumsRejectUnknownNames(t *testing.T) {
	_, err := ParseBackward("implict")
	require.EqualError(t, err, `deq: unknown backward mode "implict" (want implicit, jacobian-free, phantom)`)
	b, err := ParseBackward("")
	require.NoError(t, err)
	require.Equal(t, DefaultBackward, b, "an empty name is the unset mode, not Implicit")
	require.Equal(t, []Backward{Implicit, JacobianFree, Phantom}, Backwards())
	_, err = ParseOracleMode("Sampled")
	require.EqualError(t, err, `deq: unknown oracle mode "Sampled" (want auto, exact, sampled)`)
	_, err = ParseMonitor("sometimes")
	require.EqualError(t, err, `deq: unknown monitor mode "sometimes" (want unproven, always, never)`)
	_, err = Backward(7).MarshalText()
	require.ErrorContains(t, err, "Backward(7)")
	_, err = Monitor(-1).MarshalText()
	require.ErrorContains(t, err, "Monitor(-1)")
}

func TestEnumsInJSON(t *testing.T) {
	type modes struct {
		Backward Backward
		Oracle   OracleMode
		Monitor  Monitor
	}
	in := modes{Phantom, Sampled, MonitorNever}
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.JSONEq(t, `{"Backward":"phantom","Oracle":"sampled","Monitor":"never"}`, string(b))
	var out modes
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, in, out)
	out.Backward = Phantom
	require.ErrorContains(t, json.Unmarshal([]byte(`{"Backward":"nope"}`), &out), `"nope"`)
	require.Equal(t, Phantom, out.Backward, "a failed unmarshal leaves the value alone")
}
