package solver_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

func TestNormSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		want solver.NormSpec
		text string
	}{
		{"l2", solver.NormSpec{}, "l2"},
		{" L2 ", solver.NormSpec{}, "l2"},
		{"lp:2", solver.NormSpec{}, "l2"},
		{"lp:3", solver.NormSpec{Kind: solver.NormLP, P: 3}, "lp:3"},
		{"lp:inf", solver.NormSpec{Kind: solver.NormLInf}, "linf"},
		{"linf", solver.NormSpec{Kind: solver.NormLInf}, "linf"},
		{"schatten:2", solver.NormSpec{Kind: solver.NormSchatten, P: 2}, "schatten:2"},
		{"schatten:inf", solver.NormSpec{Kind: solver.NormSchatten, P: math.Inf(1)}, "schatten:inf"},
	} {
		s, err := solver.ParseNormSpec(tc.name)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, s, tc.name)
		require.Equal(t, tc.text, s.String())
		b, err := s.MarshalText()
		require.NoError(t, err)
		require.Equal(t, tc.text, string(b))
		// Bound to a shape, it is the norm ParseNorm makes.
		n, err := s.Norm(3, 4)
		require.NoError(t, err)
		p, err := solver.ParseNorm(tc.name, 3, 4)
		require.NoError(t, err)
		require.Equal(t, p.String(), n.String())
		require.Equal(t, p.Len(), n.Len())
	}
	for _, bad := range []string{"", "l1", "lp", "lp:1", "lp:x", "l2:3", "linf:2", "schatten:1", "schatten"} {
		var s solver.NormSpec
		err := s.UnmarshalText([]byte(bad))
		var ne *solver.NormError
		require.True(t, errors.As(err, &ne), "%q: %v", bad, err)
		_, perr := solver.ParseNorm(bad, 2, 2)
		require.Equal(t, perr.Error(), err.Error(), "ParseNorm's error for %q", bad)
	}
	_, err := solver.NormSpec{}.Norm(0, 1)
	require.Error(t, err)
	_, err = solver.NormSpec{Kind: solver.NormLP, P: 1}.MarshalText()
	require.Error(t, err)

	var v struct{ N solver.NormSpec }
	require.NoError(t, json.Unmarshal([]byte(`{"N":"schatten:4"}`), &v))
	require.Equal(t, solver.NormSpec{Kind: solver.NormSchatten, P: 4}, v.N)
}
