package problems

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestBindNorm: a shape-free solver.NormSpec binds to the norm ParseNorm
// makes of its name, for every problem and norm of the suite, and a norm a
// problem does not support is a *ConfigError naming Norm.
func TestBindNorm(t *testing.T) {
	for _, tc := range suiteCases() {
		s, err := solver.ParseNormSpec(tc.norm)
		require.NoError(t, err)
		got, err := BindNorm(tc.cfg, s)
		require.NoError(t, err, "%s %s", tc.cfg.Name, tc.norm)
		want, err := ParseNorm(tc.cfg, tc.norm)
		require.NoError(t, err)
		require.Equal(t, want.String(), got.String())
		require.Equal(t, want.Len(), got.Len())
	}
	_, err := BindNorm(Config{Name: "mdp", Dim: 4}, solver.NormSpec{Kind: solver.NormSchatten, P: 3})
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, "Norm", ce.Field)
	_, err = BindNorm(Config{Name: "affine", Dim: 4}, solver.NormSpec{Kind: solver.NormLP, P: 1})
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, "Norm", ce.Field)
}
