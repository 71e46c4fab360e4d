package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// requireOneLineError checks the shape of a failed run: nothing on stdout,
// one line on stderr starting with "deq: ", and no panic trace.
func requireOneLineError(t *testing.T, out, errOut string, msg ...any) {
	t.Helper()
	require.Empty(t, out, msg...)
	require.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	require.True(t, strings.HasSuffix(errOut, "\n"), errOut)
	require.True(t, strings.HasPrefix(errOut, "deq: "), errOut)
	require.NotContains(t, errOut, "goroutine ", "no panic trace")
	require.NotContains(t, errOut, "panic(", "no panic trace")
}

// panicRoot returns a command tree whose subcommand "boom" calls f.
func panicRoot(stdout, stderr *bytes.Buffer, f func()) func() *cobra.Command {
	return func() *cobra.Command {
		root := newRootCmd(stdout, stderr)
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error {
			f()
			return nil
		}})
		return root
	}
}

// TestPanicBecomesInternalError: a panic anywhere in a command, or while the
// command tree is built, ends the run with exit status 1 and one line naming
// the panic and the file and line where it happened.
func TestPanicBecomesInternalError(t *testing.T) {
	var nilMap map[string]int
	index := 3
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"string", func() { panic("boom\n\twith a second line") }, "deq: internal error: boom with a second line (at deq/robust_test.go:"},
		{"error", func() { panic(errors.New("an error value")) }, "deq: internal error: an error value (at deq/robust_test.go:"},
		{"index", func() { _ = []int{1, 2}[index] }, "deq: internal error: runtime error: index out of range [3] with length 2 (at deq/robust_test.go:"},
		{"nil map", func() { nilMap["x"] = 1 }, "deq: internal error: assignment to entry in nil map (at deq/robust_test.go:"},
	} {
		var out, errOut bytes.Buffer
		code := execute(context.Background(), panicRoot(&out, &errOut, c.f), []string{"boom"}, &errOut)
		require.Equal(t, exitFailure, code, c.name)
		requireOneLineError(t, out.String(), errOut.String(), c.name)
		require.True(t, strings.HasPrefix(errOut.String(), c.want), "%s: %q", c.name, errOut.String())
	}

	var errOut bytes.Buffer
	code := execute(context.Background(), func() *cobra.Command { panic("while building") }, []string{"solve"}, &errOut)
	require.Equal(t, exitFailure, code)
	requireOneLineError(t, "", errOut.String())
	require.Contains(t, errOut.String(), "deq: internal error: while building (at deq/robust_test.go:")

	// The real command tree runs through the same path.
	code, out, errs := runCmd("solve", "--list")
	require.Equal(t, exitOK, code, errs)
	require.NotEmpty(t, out)
}

// TestBadFlagMatrix runs `deq solve` with every flag set to a list of bad
// values: each run exits with status 2 and one line on stderr that names the
// flag.
func TestBadFlagMatrix(t *testing.T) {
	bad := map[string][]string{
		"--problem":     {"", "nope", "AFFINE", "affine "},
		"--solver":      {"", "nope", "Picard", "vr-ghal"},
		"--norm":        {"l7", "lp:1", "lp:nan", "lp:", "lp:1e400", "linf:3", "schatten:2", "l2 l2"},
		"--dim":         {"", "-1", "1.5", "1e3", "0x", "99999999999999999999", "100000"},
		"--gamma":       {"", "nan", "NaN", "-1", "1.5", "inf", "-inf", "1e400", "x"},
		"--noise":       {"", "nan", "-1", "inf", "1e400", "x"},
		"--eps":         {"", "nan", "inf", "-inf", "0", "-0", "-1", "1e400", "abc"},
		"--delta":       {"", "nan", "0", "1", "-0.5", "2", "inf", "x"},
		"--seed":        {"", "-1", "1.5", "18446744073709551616", "x"},
		"--max-samples": {"", "-1", "1e9", "9223372036854775808", "x"},
		"--max-iter":    {"", "-1", "1.5", "99999999999999999999", "x"},
		"--timeout":     {"", "-1s", "5", "1x", "9999999999h", "x"},
		"--json":        {"maybe", "2", "yes"},
		"--list":        {"maybe", "-1"},
	}
	for flag, values := range bad {
		for _, v := range values {
			args := []string{"solve", "--problem=affine", "--solver=picard", "--dim=4", flag + "=" + v}
			code, out, errOut := runCmd(args...)
			require.Equal(t, exitUsage, code, "%v: %s", args, errOut)
			requireOneLineError(t, out, errOut, args)
			require.Contains(t, errOut, flag, args)
		}
	}
	for _, args := range [][]string{
		{"solve", "--problem=affine", "--solver=picard", "--bogus"},
		{"solve", "--problem=affine", "--solver=picard", "-x"},
		{"solve", "--problem=affine", "--solver=picard", "stray"},
		{"nosuchcommand"},
		{"solve", "--problem=affine-switch", "--solver=page-halpern"},
		{"solve", "--problem=mdp", "--solver=picard", "--gamma=1"},
		{"solve", "--problem=matrix", "--solver=picard", "--norm=linf"},
	} {
		code, out, errOut := runCmd(args...)
		require.Equal(t, exitUsage, code, "%v: %s", args, errOut)
		requireOneLineError(t, out, errOut, args)
	}
}

// TestInterruptedSolveFails: a solve whose context is canceled (SIGINT in
// main) prints the report of its best point (status Canceled) and fails
// with exit status 130 and one line, for deterministic and stochastic
// solvers alike.
func TestInterruptedSolveFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, s := range []string{"picard", "anderson", "minibatch-km", "page-halpern"} {
		var out, errOut bytes.Buffer
		code := run(ctx, []string{"solve", "--problem=affine", "--solver=" + s, "--dim=4", "--json"}, &out, &errOut)
		require.Equal(t, exitInterrupted, code, s)
		requireOneLineError(t, "", errOut.String(), s)
		require.Contains(t, errOut.String(), "interrupted", s)
		require.Contains(t, errOut.String(), "context canceled", s)
		rep := decodeOne(t, out.String())
		require.Equal(t, "Canceled", rep["status"], s)
	}
}

// TestSolveJSONReproducible runs every registered solver twice with the same
// flags on a stochastic problem: the two JSON reports agree in every field
// but the wall-clock ones. Another --seed changes the reports of the
// stochastic solvers, so the agreement is not that of a command that ignores
// the seed.
func TestSolveJSONReproducible(t *testing.T) {
	report := func(solverName, seed string) map[string]any {
		code, out, errOut := runCmd("solve", "--problem=affine-t", "--solver="+solverName, "--dim=6", "--norm=lp:3",
			"--gamma=0.6", "--noise=0.4", "--eps=0.02", "--max-iter=300", "--seed="+seed, "--json")
		require.Equal(t, exitOK, code, errOut)
		m := decodeOne(t, out)
		for _, k := range []string{"wall_seconds", "solve_seconds"} {
			require.Contains(t, m, k)
			delete(m, k)
		}
		return m
	}
	for _, s := range solver.Methods() {
		a, b := report(s.Name, "5"), report(s.Name, "5")
		require.Equal(t, a, b, s.Name)
		require.Equal(t, "affine-t", a["problem"])
		c := report(s.Name, "6")
		require.NotEqual(t, a["residual"], c["residual"], "%s: another seed, another problem", s.Name)
		if s.Stochastic {
			require.Equal(t, "stochastic", a["oracle"], s.Name)
		}
	}
}
