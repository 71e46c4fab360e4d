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
		group := "extra"
		if datasets.Corruptions()[i].InMNISTC() {
			group = "mnist-c"
		}
		require.Equal(t, group, m["group"])
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

	// mnist-c selects MNIST-C's fifteen, in its order, and nothing else.
	code, out, errOut = runCmd("eval", "--checkpoint", ck, "--test-limit", "20", "--corruptions", "mnist-c", "--json")
	require.Equal(t, 0, code, errOut)
	var names []string
	for _, r := range decodeOne(t, out)["corruptions"].(map[string]any)["results"].([]any) {
		m := r.(map[string]any)
		require.Equal(t, "mnist-c", m["group"])
		names = append(names, m["name"].(string))
	}
	var want []string
	for _, c := range datasets.MNISTCCorruptions() {
		want = append(want, c.String())
	}
	require.Len(t, want, 15)
	require.Equal(t, want, names)

	requireUsageError(t, []string{"eval", "--checkpoint", ck, "--corruptions", "rotate,identity"}, "--corruptions")
}

func TestParseCorruptions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []datasets.Corruption
	}{
		{"", nil},
		{"all", datasets.Corruptions()},
		{"mnist-c", datasets.MNISTCCorruptions()},
		{"rotate, dilate,rotate", []datasets.Corruption{datasets.Rotate, datasets.Dilate}},
	} {
		got, err := parseCorruptions(tc.in)
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
	for _, in := range []string{"mnist_c", "all,rotate", "identity"} {
		_, err := parseCorruptions(in)
		require.ErrorContains(t, err, "--corruptions", "%q", in)
	}
}
