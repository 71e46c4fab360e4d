package layers

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEnumNames checks the names of the package's enumerations: each
// value's name parses back to it and is its text, an unknown name and a
// value without a name are errors that say so, and a failed unmarshal
// leaves the value alone.
func TestEnumNames(t *testing.T) {
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

	for _, n := range []Normalization{Projection, WeightNorm, SpectralNorm} {
		got, err := ParseNormalization(n.String())
		require.NoError(t, err)
		require.Equal(t, n, got)
		text, err := n.MarshalText()
		require.NoError(t, err)
		var back Normalization
		require.NoError(t, back.UnmarshalText(text))
		require.Equal(t, n, back)
	}
	_, err = ParseNormalization("batch")
	require.EqualError(t, err, `layers: unknown normalization "batch" (want project, weight or spectral)`)
	_, err = Normalization(9).MarshalText()
	require.EqualError(t, err, "layers: DenseConfig.Normalization = Normalization(9) is not a normalization")
	n := SpectralNorm
	require.Error(t, n.UnmarshalText([]byte("weights")))
	require.Equal(t, SpectralNorm, n)
}
