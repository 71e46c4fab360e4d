package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrainEncoderLayers: --encoder-layers deepens the conv model's
// encoder, which the JSON summary and the model line report and which adds
// 9·C² + 3·C parameters per block with GroupNorm; the other cells refuse
// it naming the flag, and negative values are refused.
func TestTrainEncoderLayers(t *testing.T) {
	args := func(extra ...string) []string {
		return append([]string{"train", "--data", "synthetic", "--train-limit", "64", "--test-limit", "20",
			"--cell", "conv", "--channels", "2", "--groups", "2", "--batch", "32", "--epochs", "1", "--max-iter", "10", "--quiet"}, extra...)
	}
	params := map[string]float64{}
	for _, layers := range []string{"1", "2"} {
		code, out, errOut := runCmd(args("--json", "--encoder-layers", layers)...)
		require.Equal(t, 0, code, errOut)
		m := decodeOne(t, out)
		params[layers] = m["params"].(float64)
		require.Equal(t, layers, fmt.Sprint(m["encoder_layers"]))
	}
	require.Equal(t, params["1"]+9*2*2+3*2, params["2"])
	// The model line names the blocks, the default's (3) as well.
	for flags, want := range map[string]string{"": "a 3-layer encoder)", "1": "a 1-layer encoder)"} {
		extra := []string{}
		if flags != "" {
			extra = []string{"--encoder-layers", flags}
		}
		code, out, errOut := runCmd(args(extra...)...)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "2 GroupNorm groups, "+want)
	}
	for _, bad := range [][]string{
		{"train", "--data", "synthetic", "--train-limit", "64", "--test-limit", "10", "--quiet", "--encoder-layers", "2"},
		args("--encoder-layers", "-1"),
	} {
		code, _, errOut := runCmd(bad...)
		require.NotEqual(t, 0, code, strings.Join(bad, " "))
		require.Contains(t, errOut, "--encoder-layers", strings.Join(bad, " "))
	}
}
