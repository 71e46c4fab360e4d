package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
)

func TestEvalCorruptions(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runCmd(tinyTrain(dir)...)
	require.Equal(t, 0, code, errOut)
	ck := filepath.Join(dir, "run.ckpt")

	code, out, errOut := runCmd("eval", "--checkpoint", ck, "--test-limit", "60", "--corruptions", "all", "--json")
	require.Equal(t, 0, code, errOut)
	ev := decodeOne(t, out)
	suite := ev["corruptions"].(map[string]any)
	results := suite["results"].([]any)
	require.Len(t, results, len(datasets.Corruptions()))
	lo, sum := 1.0, 0.0
	for i, r := range results {
		m := r.(map[string]any)
		require.Equal(t, datasets.CorruptionNames()[i], m["name"])
		require.Equal(t, 60.0, m["examples"])
		acc := m["acc"].(float64)
		require.True(t, acc >= 0 && acc <= 1, "%v", acc)
		lo, sum = min(lo, acc), sum+acc
	}
	require.InDelta(t, sum/float64(len(results)), suite["mean_acc"], 1e-12)
	require.Equal(t, lo, suite["min_acc"])

	// The same seed gives the same table; a list selects and orders.
	code, again, errOut := runCmd("eval", "--checkpoint", ck, "--test-limit", "60", "--corruptions", "all", "--json")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, suite, decodeOne(t, again)["corruptions"])
	code, out, errOut = runCmd("eval", "--checkpoint", ck, "--test-limit", "60", "--corruptions", "rotate,shot_noise")
	require.Equal(t, 0, code, errOut)
	for _, s := range []string{"corruption", "rotate", "shot_noise", "mean", "min"} {
		require.Contains(t, out, s)
	}
	require.NotContains(t, out, "zigzag")
	require.Less(t, strings.Index(out, "rotate"), strings.Index(out, "shot_noise"))

	requireUsageError(t, []string{"eval", "--checkpoint", ck, "--corruptions", "rotate,identity"}, "--corruptions")
}
