package main

import (
	"io"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/train"
)

// TestMethodFlags: every method of the registry round-trips through the
// flags that take one: `deq solve --solver` (every entry), `deq train
// --solver`, --backward-solver and --eval-solver and `deq eval --solver`
// (the entries train.Methods accepts). The flag holds the
// solver.MethodSpec of the name, and prints the name back.
func TestMethodFlags(t *testing.T) {
	for _, spec := range solver.MethodSpecs() {
		name := spec.String()
		var f solveFlags
		fl := pflag.NewFlagSet("solve", pflag.ContinueOnError)
		f.bindMethod(fl)
		require.NoError(t, fl.Parse([]string{"--solver", name}))
		require.Equal(t, spec, f.method, name)
		require.Equal(t, name, fl.Lookup("solver").Value.String())
	}
	require.NotEmpty(t, train.Methods())
	for _, spec := range train.Methods() {
		name := spec.String()
		var f trainFlags
		fl := pflag.NewFlagSet("train", pflag.ContinueOnError)
		f.bindConfig(fl)
		require.NoError(t, fl.Parse([]string{"--solver", name, "--backward-solver", name, "--eval-solver", name}))
		for flag, got := range map[string]solver.MethodSpec{
			"solver": f.cfg.Forward.Method, "backward-solver": f.cfg.Backward.Solver.Method, "eval-solver": f.cfg.Eval.Method,
		} {
			require.Equal(t, spec, got, "--%s %s", flag, name)
			require.Equal(t, name, fl.Lookup(flag).Value.String(), "--%s", flag)
		}

		eval := newEvalCmd()
		require.NoError(t, eval.Flags().Parse([]string{"--solver", name}))
		require.Equal(t, name, eval.Flags().Lookup("solver").Value.String(), "deq eval --solver")
	}
}

// TestSolveNormFlag: `deq solve --norm` holds the solver.NormSpec of every
// norm name, in its canonical spelling; without the flag it is unset (the
// problem's default), and a name that is no norm is refused as the flag is
// parsed, leaving it unset.
func TestSolveNormFlag(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"l2", "l2"}, {"lp:2", "l2"}, {"lp:3", "lp:3"}, {"lp:inf", "linf"}, {"linf", "linf"},
		{"schatten:2", "schatten:2"}, {"schatten:inf", "schatten:inf"},
	} {
		var f solveFlags
		fl := pflag.NewFlagSet("solve", pflag.ContinueOnError)
		f.bindMethod(fl)
		require.Equal(t, "", fl.Lookup("norm").Value.String(), "unset before the flag")
		require.False(t, f.norm.set)
		require.NoError(t, fl.Parse([]string{"--norm", tc.arg}))
		want, err := solver.ParseNormSpec(tc.arg)
		require.NoError(t, err)
		require.True(t, f.norm.set, tc.arg)
		require.Equal(t, want, f.norm.spec, tc.arg)
		require.Equal(t, tc.want, fl.Lookup("norm").Value.String(), tc.arg)
	}
	var f solveFlags
	fl := pflag.NewFlagSet("solve", pflag.ContinueOnError)
	fl.SetOutput(io.Discard)
	f.bindMethod(fl)
	require.Error(t, fl.Parse([]string{"--norm", "l7"}))
	require.False(t, f.norm.set)
}
