package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
)

func TestWriteFiles(t *testing.T) {
	rep, err := Run(context.Background(), tinyConfig(sectionStochastic, sectionThroughput))
	require.NoError(t, err)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	md := filepath.Join(dir, "doc", "BENCH.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(md), 0o755))
	require.NoError(t, os.WriteFile(md, []byte("stale\n## Discussion\n\nwritten by hand\n"), 0o644))
	files, err := report.Write(rep, out, md)
	require.NoError(t, err)
	require.Len(t, files, 2+2*len(rep.Stochastic.Problems))

	js, err := os.ReadFile(filepath.Join(out, report.JSONName))
	require.NoError(t, err)
	var back report.Report
	require.NoError(t, json.Unmarshal(js, &back))
	require.Equal(t, rep.Config.Budget, back.Config.Budget)
	require.Equal(t, len(rep.Stochastic.Problems), len(back.Stochastic.Problems))

	for _, pr := range rep.Stochastic.Problems {
		for _, name := range []string{"residual_" + pr.Name + ".png", "samples_" + pr.Name + ".png"} {
			b, err := os.ReadFile(filepath.Join(out, name))
			require.NoError(t, err)
			cfg, err := png.DecodeConfig(bytes.NewReader(b))
			require.NoError(t, err, name)
			require.Greater(t, cfg.Width, 300)
		}
	}
	text, err := os.ReadFile(md)
	require.NoError(t, err)
	s := string(text)
	// The report replaces the file: nothing of the old text survives.
	require.NotContains(t, s, "stale")
	require.NotContains(t, s, "written by hand")
	require.True(t, strings.HasPrefix(s, "# Benchmarks\n"))
	// Plot links are relative to the Markdown file.
	require.Contains(t, s, "](../out/residual_mdp.png)")
	require.Contains(t, s, "## Throughput")
	for _, pr := range rep.Stochastic.Problems {
		require.Contains(t, s, "### "+pr.Name)
	}
}
