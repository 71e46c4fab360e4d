package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrainEvalCertDelta trains a meanfield cell of 2¹⁴ units with the
// growing batch and --cert-delta 0.05: the JSON summary's test solves are
// certified by the sampled rule at that δ, the text summary names the
// rule, and `deq eval --cert-delta` does the same on the checkpoint.
func TestTrainEvalCertDelta(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "run.ckpt")
	args := []string{"train", "--data", "synthetic", "--train-limit", "128", "--test-limit", "40",
		"--hidden", "8", "--batch", "64", "--epochs", "1", "--quiet", "--checkpoint", ck,
		"--cell", "meanfield", "--units", "16384", "--solver", "growing-batch", "--backward-solver", "growing-batch",
		"--tol", "0.3", "--eval-tol", "0.3", "--cert-delta", "0.05"}
	code, out, errOut := runCmd(append(args, "--json")...)
	require.Equal(t, 0, code, errOut)
	test := decodeOne(t, out)["final"].(map[string]any)["test"].(map[string]any)
	require.Positive(t, test["cert_rules"].(map[string]any)["sampled-bernstein"], "%v", test)
	require.Equal(t, 0.05, test["cert_delta_max"])
	code, out, errOut = runCmd(args...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "sampled-bernstein")
	require.Contains(t, out, "(δ ≤ 0.05)")
	code, out, errOut = runCmd("eval", "--checkpoint", ck, "--data", "synthetic", "--test-limit", "40", "--cert-delta", "0.01")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "sampled-bernstein")
	require.Contains(t, out, "(δ ≤ 0.01)")
}
