package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Sections: []string{"nope"}}, "Sections"},
		{Config{Problems: []string{"mdp", "nope"}}, "Problems"},
		{Config{Seeds: -1}, "Seeds"},
		{Config{Workers: -2}, "Workers"},
		{Config{SampleScale: -1}, "SampleScale"},
		{Config{NoiseLevel: math.NaN()}, "NoiseLevel"},
		{Config{StartDistance: math.Inf(1)}, "StartDistance"},
		{Config{BudgetFactor: -3}, "BudgetFactor"},
		{Config{Delta: 1}, "Delta"},
		{Config{Eps: []float64{}}, "Eps"},
		{Config{Eps: []float64{0.1, 2}}, "Eps[1]"},
		{Config{MaxRunTime: -time.Second}, "MaxRunTime"},
		{Config{TimeTarget: -time.Second}, "TimeTarget"},
		{Config{SigmaDraws: -1}, "SigmaDraws"},
		{Config{OverheadRuns: -1}, "OverheadRuns"},
		{Config{Shape: report.Shape{Batch: 1}}, "Shape"},
	} {
		_, err := tc.cfg.withDefaults()
		require.ErrorContains(t, err, "Config."+tc.field, "%+v", tc.cfg)
	}
}

func TestConfigDefaults(t *testing.T) {
	s, err := Config{}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, Sections(), s.Sections)
	require.Equal(t, defaultSeeds, s.Seeds)
	require.Equal(t, defaultEps(), s.Eps)
	require.InDelta(t, defaultBudgetFactor*2*0.01*math.Log(20)/1e-6, float64(s.budget()), 1)
	q, err := Config{Quick: true, Sections: []string{sectionThroughput, sectionStochastic}, Eps: []float64{0.01, 0.1, 0.01}}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, defaultQuickSeeds, q.Seeds)
	// Sections run in the canonical order; accuracies descend, deduplicated.
	require.Equal(t, []string{sectionStochastic, sectionThroughput}, q.Sections)
	require.Equal(t, []float64{0.1, 0.01}, q.Eps)
}

func TestThroughputWorkloads(t *testing.T) {
	cfg := tinyConfig(sectionThroughput)
	rep, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Nil(t, rep.Stochastic)
	th := rep.Throughput
	n, h, in := 4.0, 8.0, 8.0
	want := []float64{2 * n * h * (h + in), 2 * n * h * h, 4 * n * h * h, 6 * n * h * (h + in)}
	require.Len(t, th.Workloads, len(want))
	for i, w := range th.Workloads {
		require.Equal(t, want[i], w.FLOPs, w.Name)
		require.Greater(t, w.GFLOPS, 0.0)
		require.Greater(t, w.RefGFLOPS, 0.0)
		require.InEpsilon(t, w.GFLOPS/w.RefGFLOPS, w.Efficiency, 1e-12)
		require.InEpsilon(t, w.FLOPs/w.SecondsPerOp/1e9, w.GFLOPS, 1e-12)
	}
	require.Greater(t, th.Memory.HeapSys, uint64(0))
	require.Greater(t, th.Memory.TotalAlloc, uint64(0))
	if runtime.GOOS == "linux" {
		require.Greater(t, th.Memory.MaxRSS, uint64(1<<20)) // any Go process holds more than 1 MiB
	}
	require.Empty(t, rep.Targets)
}

func TestDenseForwardWorkloadComputesTheCell(t *testing.T) {
	// The timed forward must be the cell itself: compare with the graph.
	sh := report.Shape{Batch: 3, Hidden: 5, Input: 4}
	w, err := denseForward(sh, 9)
	require.NoError(t, err)
	require.NoError(t, w.op())
	ev, _, z, _, err := denseSetup(sh, 9)
	require.NoError(t, err)
	a, b := make([]float64, ev.Len()), make([]float64, ev.Len())
	require.NoError(t, ev.EvalExact(a, z))
	require.NoError(t, ev.(layers.GraphEvaluator).EvalGraph(b, z))
	require.InDeltaSlice(t, b, a, 1e-12)
}

func TestTimedOracleCountsEvalTime(t *testing.T) {
	slow := solver.Func{N: 1, F: func(dst, x []float64) { time.Sleep(2 * time.Millisecond); dst[0] = x[0] }}
	o := &timedOracle{o: slow}
	dst := []float64{0}
	for range 3 {
		_, err := o.Eval(dst, []float64{1}, solver.Sample{Size: 1})
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, o.elapsed, 6*time.Millisecond)
	require.Equal(t, solver.Deterministic, o.Model())
}

func TestOverheadSection(t *testing.T) {
	cfg := tinyConfig(sectionOverhead)
	cfg.BudgetFactor = 300 // room for VR-GHAL's first median-of-means
	rep, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, rep.Overhead.Problems, len(overheadProblems))
	for i, r := range rep.Overhead.Problems {
		require.Equal(t, overheadProblems[i], r.Problem)
		require.Equal(t, "vrghal/samplewise-lipschitz", r.Method)
		require.Greater(t, r.Calls, int64(0))
		require.Greater(t, r.OracleSeconds, 0.0)
		require.GreaterOrEqual(t, r.TotalSeconds, r.OracleSeconds)
		require.InDelta(t, 0.015, r.Tol, 1e-15)
	}
	require.Len(t, rep.Targets, 2)
}

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
