package bench

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/layers"
)

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
