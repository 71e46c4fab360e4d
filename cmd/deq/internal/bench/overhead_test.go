package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

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
