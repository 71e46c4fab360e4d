package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchUsageErrors: a bad flag or argument of deq bench is a usage
// error naming it (see requireUsageError).
func TestBenchUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--only", "bogus"}, "--only"},
		{[]string{"--problems", "mdp,nope"}, "--problems"},
		{[]string{"--peer-models", "dense,wide"}, "--peer-models"},
		{[]string{"--peer-threads", "0"}, "--peer-threads"},
		{[]string{"--seeds", "-1"}, "--seeds"},
		{[]string{"--seed", "0"}, "--seed"},
		{[]string{"--sample-scale", "0"}, "--sample-scale"},
		{[]string{"--workers", "-1"}, "--workers"},
		{[]string{"--out", ""}, "--out"},
		{[]string{"extra"}, "unknown command"},
	} {
		requireUsageError(t, append([]string{"bench"}, tc.args...), tc.flag)
	}
}

func TestBenchThroughputOnly(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCmd("bench", "--quick", "--only", "throughput", "--out", dir)
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, errOut, "throughput: dense forward")
	require.Contains(t, out, filepath.Join(dir, "bench.json"))
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	require.NoError(t, err)
	var rep map[string]any
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Equal(t, "deq bench --quick --only throughput", rep["command"])
	require.Contains(t, []string{"gonum", "openblas"}, rep["machine"].(map[string]any)["blas"])
	require.NotContains(t, rep, "stochastic")
	md, err := os.ReadFile(filepath.Join(dir, "BENCHMARKS.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "    deq bench --quick --only throughput\n")
}

// TestBenchQuick runs the whole smoke benchmark, as `make bench` would at
// full size; it takes a few seconds.
func TestBenchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every benchmark section")
	}
	dir := t.TempDir()
	md := filepath.Join(dir, "docs", "B.md")
	code, out, errOut := runCmd("bench", "--quick", "--seeds", "2", "--out", filepath.Join(dir, "res"), "--markdown", md)
	require.Equal(t, exitOK, code, errOut)
	for _, target := range []string{"speedup", "exponent", "overhead-deq-experts", "overhead-averaged"} {
		require.Contains(t, out, "target "+target+": ")
	}
	text, err := os.ReadFile(md)
	require.NoError(t, err)
	s := string(text)
	require.Contains(t, s, "deq bench --quick --seeds 2")
	require.Contains(t, s, "](../res/samples_deq-experts.png)")
	require.True(t, strings.Contains(s, "## Solver overhead") && strings.Contains(s, "## Throughput"))
	_, err = os.Stat(filepath.Join(dir, "res", "residual_averaged.png"))
	require.NoError(t, err)
}
