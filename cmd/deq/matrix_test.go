package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// concreteNorms turns a problem's supported norm patterns into norm flags:
// "lp:P" becomes lp:4, "schatten:P" schatten:2 and schatten:inf.
func concreteNorms(patterns []string) []string {
	var out []string
	for _, p := range patterns {
		switch p {
		case "lp:P":
			out = append(out, "lp:4")
		case "schatten:P":
			out = append(out, "schatten:2", "schatten:inf")
		default:
			out = append(out, p)
		}
	}
	return out
}

func TestSolveEveryCombination(t *testing.T) {
	// Every solver × problem × norm: a sensible combination (a norm the
	// problem supports, an oracle model at least as strong as the solver
	// needs) runs and reports a status; every other one is refused with exit
	// status 2 and one line naming the offending flag.
	if testing.Short() {
		t.Skip("runs every combination; in the full suite")
	}
	for _, info := range problems.List() {
		norms := concreteNorms(info.Norms)
		// A norm the problem does not support.
		unsupported := "schatten:4"
		if strings.HasPrefix(norms[0], "schatten") || slices.Contains(norms, "schatten:2") {
			unsupported = "linf"
		}
		for _, entry := range solver.Methods() {
			sensibleModel := !entry.Stochastic || info.Model >= entry.Needs
			for _, norm := range append(norms, unsupported) {
				name := info.Name + "/" + entry.Name + "/" + norm
				t.Run(name, func(t *testing.T) {
					dim := max(info.MinDim, 4)
					code, out, errOut := runCmd("solve", "--problem", info.Name, "--solver", entry.Name,
						"--norm", norm, "--dim", strconv.Itoa(dim), "--eps", "0.2", "--max-iter", "300",
						"--max-samples", "200000", "--sample-scale", "0.01", "--timeout", "20s", "--json")
					switch {
					case norm == unsupported:
						require.Equal(t, 2, code, "unsupported norm must be a usage error: %s", out)
						requireOneLineNaming(t, errOut, "--norm")
					case !sensibleModel:
						require.Equal(t, 2, code, "a solver needing a stronger oracle model must be refused: %s", out)
						requireOneLineNaming(t, errOut, "--solver")
					default:
						require.Equal(t, 0, code, errOut)
						m := decodeOne(t, out)
						require.Equal(t, info.Name, m["problem"])
						require.Equal(t, entry.Name, m["solver"])
						require.NotEqual(t, "Failure", m["status"])
						require.NotNil(t, m["certificate"], "every solve is certified")
					}
				})
			}
		}
	}
}

// requireOneLineNaming checks that errOut is one line that names flag.
func requireOneLineNaming(t *testing.T, errOut, flag string) {
	t.Helper()
	require.Equal(t, 1, strings.Count(strings.TrimRight(errOut, "\n"), "\n")+1, "one line: %q", errOut)
	require.Contains(t, errOut, flag)
}
