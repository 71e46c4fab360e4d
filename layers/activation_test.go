package layers

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestActivationNames(t *testing.T) {
	for _, a := range []Activation{ReLU, Tanh} {
		got, err := ParseActivation(a.String())
		require.NoError(t, err)
		require.Equal(t, a, got)
		text, err := a.MarshalText()
		require.NoError(t, err)
		require.Equal(t, a.String(), string(text))
	}
	_, err := ParseActivation("sigmoid")
	require.EqualError(t, err, `layers: unknown activation "sigmoid" (want relu or tanh)`)
	_, err = Activation(5).MarshalText()
	require.ErrorContains(t, err, "Activation(5)")

	var cfg struct{ Activation Activation }
	require.NoError(t, json.Unmarshal([]byte(`{"Activation":"tanh"}`), &cfg))
	require.Equal(t, Tanh, cfg.Activation)
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.JSONEq(t, `{"Activation":"tanh"}`, string(b))
	require.ErrorContains(t, json.Unmarshal([]byte(`{"Activation":""}`), &cfg), `""`)
	require.Equal(t, Tanh, cfg.Activation, "a failed unmarshal leaves the value alone")
}
