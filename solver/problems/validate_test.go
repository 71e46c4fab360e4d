package problems

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestConfigErrorNamesValue: the Reason of a ConfigError starts with the
// offending value, as its documentation promises, so that a command line can
// print "--flag: Reason".
func TestConfigErrorNamesValue(t *testing.T) {
	for _, tc := range []struct {
		cfg                Config
		norm, field, value string
	}{
		{Config{Name: "Affine"}, "", "Name", `unknown problem "Affine"`},
		{Config{Name: "affine", Dim: -7}, "", "Dim", "-7 outside [1, 1000]"},
		{Config{Name: "matrix", Dim: math.MaxInt}, "", "Dim", "9223372036854775807 outside [1, 32]"},
		{Config{Name: "affine", Gamma: math.Inf(1)}, "", "Gamma", "+Inf outside (0, 1]"},
		{Config{Name: "affine", Gamma: math.NaN()}, "", "Gamma", "NaN outside (0, 1]"},
		{Config{Name: "affine", Noise: math.NaN()}, "", "Noise", "NaN must be positive"},
		{Config{Name: "affine", Noise: math.Inf(-1)}, "", "Noise", "-Inf must be positive"},
		{Config{Name: "affine"}, "lp:1", "Norm", `norm "lp:1": ℓp norm exponent p = 1`},
		{Config{Name: "affine"}, "lp:x", "Norm", `norm "lp:x": exponent "x" is not a number`},
		{Config{Name: "matrix"}, "lp:4", "Norm", `"lp:4" not supported by matrix`},
		{Config{Name: "mdp", Actions: -2}, "", "Actions", "-2 outside [1, 64]"},
		{Config{Name: "averaged", Terms: 1 << 20}, "", "Terms", "1048576 outside [1, 65536]"},
	} {
		_, err := newNamed(tc.cfg, tc.norm)
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%+v: %v", tc.cfg, err)
		require.Equal(t, tc.field, ce.Field, "%+v", tc.cfg)
		require.True(t, strings.HasPrefix(ce.Reason, tc.value), "%+v: reason %q", tc.cfg, ce.Reason)
	}
}

// TestResidualErrors: Residual reports a point of the wrong length as an
// error, for every problem of the suite, instead of panicking.
func TestResidualErrors(t *testing.T) {
	for _, name := range Names() {
		p := mustNew(t, Config{Name: name, Dim: 3})
		for _, n := range []int{0, len(p.X0) - 1, len(p.X0) + 1} {
			var err error
			require.NotPanics(t, func() { _, err = p.Residual(make([]float64, n)) }, name)
			require.ErrorContains(t, err, "point has length", name)
		}
		r, err := p.Residual(p.X0)
		require.NoError(t, err)
		require.False(t, math.IsNaN(r) || math.IsInf(r, 0), name)
		// The deterministic view of the oracle reports a destination of the
		// wrong length.
		_, err = p.Exact().Eval(make([]float64, 2*len(p.X0)), p.X0, solver.Sample{Size: 1})
		require.ErrorContains(t, err, "destination has length", name)
	}
}

// TestConfigTypedNorm: New rejects a norm of the wrong dimension or shape, or
// of a family the problem does not support, naming Config.Norm; a nil Norm is
// the problem's default norm.
func TestConfigTypedNorm(t *testing.T) {
	l2of4, err := solver.NewLP(2, 4)
	require.NoError(t, err)
	s23, err := solver.NewSchatten(4, 2, 3)
	require.NoError(t, err)
	s32, err := solver.NewSchatten(4, 3, 2)
	require.NoError(t, err)
	linf6, err := solver.NewLInf(6)
	require.NoError(t, err)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "affine", Dim: 5, Norm: l2of4}, "l2 of dimension 4, want 5"},
		{Config{Name: "matrix", Dim: 2, Norm: l2of4}, ""}, // 2×2 points: fine
		{Config{Name: "mdp", Dim: 2, Actions: 3, Norm: linf6}, ""},
		{Config{Name: "mdp", Dim: 3, Actions: 2, Norm: l2of4}, `"l2" not supported by mdp`},
		{Config{Name: "matrix", Dim: 2, Norm: s23}, "schatten:4 on 2×3 matrices, want 2×2"},
		{Config{Name: "affine", Dim: 6, Norm: s32}, `"schatten:4" not supported by affine`},
	} {
		p, err := New(tc.cfg)
		if tc.want == "" {
			require.NoError(t, err, "%+v", tc.cfg)
			require.Equal(t, tc.cfg.Norm.String(), p.Norm.String())
			continue
		}
		var ce *ConfigError
		require.True(t, errors.As(err, &ce), "%+v: %v", tc.cfg, err)
		require.Equal(t, "Norm", ce.Field)
		require.Contains(t, ce.Reason, tc.want)
	}
	for _, info := range List() {
		p := mustNew(t, Config{Name: info.Name})
		require.Equal(t, info.DefaultNorm, p.Norm.String(), info.Name)
		require.Equal(t, p.Norm, p.Config.Norm, info.Name)
	}
}
