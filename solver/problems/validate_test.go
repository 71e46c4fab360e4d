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
		cfg          Config
		field, value string
	}{
		{Config{Name: "Affine"}, "Name", `unknown problem "Affine"`},
		{Config{Name: "affine", Dim: -7}, "Dim", "-7 outside [1, 1000]"},
		{Config{Name: "matrix", Dim: math.MaxInt}, "Dim", "9223372036854775807 outside [1, 32]"},
		{Config{Name: "affine", Gamma: math.Inf(1)}, "Gamma", "+Inf outside (0, 1]"},
		{Config{Name: "affine", Gamma: math.NaN()}, "Gamma", "NaN outside (0, 1]"},
		{Config{Name: "affine", Noise: math.NaN()}, "Noise", "NaN must be positive"},
		{Config{Name: "affine", Noise: math.Inf(-1)}, "Noise", "-Inf must be positive"},
		{Config{Name: "affine", Norm: "lp:1"}, "Norm", `norm "lp:1": ℓp norm exponent p = 1`},
		{Config{Name: "affine", Norm: "lp:x"}, "Norm", `norm "lp:x": exponent "x" is not a number`},
		{Config{Name: "matrix", Norm: "lp:4"}, "Norm", `"lp:4" not supported by matrix`},
		{Config{Name: "mdp", Actions: -2}, "Actions", "-2 outside [1, 64]"},
		{Config{Name: "averaged", Terms: 1 << 20}, "Terms", "1048576 outside [1, 65536]"},
	} {
		_, err := New(tc.cfg)
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
