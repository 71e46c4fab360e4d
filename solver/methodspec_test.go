package solver_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

func TestMethodSpec(t *testing.T) {
	specs := solver.MethodSpecs()
	require.Len(t, specs, len(solver.Methods()))
	for i, info := range solver.Methods() {
		s, err := solver.ParseMethodSpec(info.Name)
		require.NoError(t, err)
		require.Equal(t, specs[i], s)
		require.Equal(t, info.Name, s.String())
		require.Equal(t, info.Name, s.Info().Name)
		m := s.New(solver.MethodOptions{Gamma: 0.5, Delta: 0.1})
		require.Equal(t, info.Name, m.String())
		back, err := solver.MethodSpecOf(m)
		require.NoError(t, err)
		require.Equal(t, s, back)
		b, err := json.Marshal(struct{ M solver.MethodSpec }{s})
		require.NoError(t, err)
		var v struct{ M solver.MethodSpec }
		require.NoError(t, json.Unmarshal(b, &v))
		require.Equal(t, s, v.M)
	}
	var unset solver.MethodSpec
	require.True(t, unset.IsZero())
	require.Equal(t, "", unset.String())
	require.NoError(t, unset.UnmarshalText(nil))
	require.True(t, unset.IsZero())
	err := unset.UnmarshalText([]byte("newton"))
	require.True(t, errors.Is(err, solver.ErrUnknownMethod), "%v", err)
	require.True(t, unset.IsZero(), "left alone on error")
}
