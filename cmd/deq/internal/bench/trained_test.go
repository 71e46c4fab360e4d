package bench

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/train"
)

func TestFirstHits(t *testing.T) {
	h := newFirstHits([]float64{1e-1, 1e-2, 1e-3})
	for i, r := range []float64{4, 2, 0.4, 0.39, 0.04, 0.01} {
		require.NoError(t, h.Record(solver.TracePoint{Iter: i, Calls: int64(3 * (i + 1)), Residual: r}))
	}
	// Relative residuals 1, 0.5, 0.1, 0.0975, 0.01, 0.0025: 1e-1 first at
	// the third point (9 calls), 1e-2 at the fifth (15), 1e-3 never.
	require.Equal(t, []float64{9, 15, math.Inf(1)}, h.calls)
	require.Equal(t, []float64{3, 6, 9, 12, 15, 18}, h.curveX)
	require.InDelta(t, 0.0025, h.curveY[5], 1e-15)
}

// TestForwardSection checks the forward section against an independent
// Picard iteration on the cached model, and that a second run reuses the
// cache and measures the same evaluations.
func TestForwardSection(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Quick: true, Sections: []string{sectionForward}, CacheDir: dir}
	rep, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	fw := rep.Forward
	require.False(t, fw.Cached)
	require.Equal(t, 2, fw.Batches)
	require.Len(t, fw.Methods, len(forwardMethods()))
	for _, m := range fw.Methods {
		require.Len(t, m.Tols, 3)
		for j := 1; j < len(m.Tols); j++ {
			require.GreaterOrEqual(t, float64(m.Tols[j].Calls), float64(m.Tols[j-1].Calls), m.Method)
		}
	}
	require.Len(t, rep.Targets, 1)
	require.Equal(t, "ghal-vs-anderson", rep.Targets[0].Name)

	// Picard by hand on the first test batch: z ← f(z) from z = 0, one
	// evaluation per recorded point.
	ck, err := train.Load(filepath.Join(dir, report.ForwardModelName))
	require.NoError(t, err)
	s, err := cfg.withDefaults()
	require.NoError(t, err)
	d, err := s.forwardSetup().open(context.Background(), s.Seed)
	require.NoError(t, err)
	bt, err := datasets.NewBatcher(d.Test, 100, nil)
	require.NoError(t, err)
	require.True(t, bt.Next())
	b := bt.Batch()
	e, err := ck.Model.Encode(b.X.RawMatrix().Data, b.Len())
	require.NoError(t, err)
	cell := ck.Model.Cell()
	ev, err := cell.Evaluator(b.Len())
	require.NoError(t, err)
	require.NoError(t, ev.SetInput(e))
	ex, err := solver.ParseNorm(ck.Model.Config.Norm.String(), cell.Shape().Rows, cell.Shape().Hidden)
	require.NoError(t, err)
	norm, err := solver.NewBatched(ex, b.Len())
	require.NoError(t, err)
	z, fz, diff := make([]float64, ev.Len()), make([]float64, ev.Len()), make([]float64, ev.Len())
	var r0 float64
	want := map[float64]float64{}
	for calls := 1; calls <= defaultForwardMaxIter && len(want) < 3; calls++ {
		require.NoError(t, ev.EvalExact(fz, z))
		for i := range diff {
			diff[i] = fz[i] - z[i]
		}
		r := norm.Norm(diff)
		if calls == 1 {
			r0 = r
		}
		for _, tol := range forwardTols() {
			if _, ok := want[tol]; !ok && r/r0 <= tol {
				want[tol] = float64(calls)
			}
		}
		z, fz = fz, z
	}
	require.Len(t, want, 3, "Picard did not reach every tolerance by hand")
	picard := fw.Methods[0]
	require.Equal(t, "picard", picard.Method)
	for i, tol := range forwardTols() {
		require.Equal(t, want[tol], picard.Curve.Budgets[int(want[tol])-1])
		// The median over two batches is the smaller (nearest rank), so it
		// is at most the first batch's count.
		require.LessOrEqual(t, float64(picard.Tols[i].Calls), want[tol])
	}

	again, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.True(t, again.Forward.Cached)
	for i, m := range again.Forward.Methods {
		for j := range m.Tols {
			require.Equal(t, fw.Methods[i].Tols[j].Calls, m.Tols[j].Calls)
		}
	}
}

func TestTrainingProductsFLOPs(t *testing.T) {
	sh := trainingShapes{n: 8, p: 10, d: 6, h: 4, c: 3}
	k := epochCounts{batches: 2, fwdCalls: 5, certCalls: 1, adjCalls: 7, vjps: 2}
	flops := 0.0
	for _, c := range sh.products(k) {
		flops += float64(c.count) * 2 * float64(c.prod[0]*c.prod[1]*c.prod[2])
	}
	n, p, d, h, c := 8.0, 10.0, 6.0, 4.0, 3.0
	want := 2*(4*n*p*d+2*n*d*h+6*n*h*c) + // per batch: encoder, input term, readout
		(5+1)*2*n*h*h + 7*2*n*h*h + // forward and certificate calls, adjoint calls
		2*(2*n*h*h+4*n*d*h) // full VJPs
	require.Equal(t, want, flops)
}

func TestTrainingSection(t *testing.T) {
	rep, err := Run(context.Background(), Config{Quick: true, Sections: []string{sectionTraining}})
	require.NoError(t, err)
	tr := rep.Training
	require.Len(t, tr.Epochs, 3)
	require.Len(t, tr.HeapAfterEpoch, 3)
	for _, e := range tr.Epochs {
		require.Equal(t, 4, e.Batches)
		require.Equal(t, 256, e.Examples)
		require.Greater(t, e.FwdCalls, int64(0))
		require.Greater(t, e.AdjCalls, int64(0))
		require.Greater(t, e.GFLOPS, 0.0)
		require.InDelta(t, e.GFLOPS/e.RefGFLOPS, e.Efficiency, 1e-12)
		require.Greater(t, e.HeapPeak, uint64(0))
	}
	require.Len(t, rep.Targets, 1)
	require.Equal(t, "training-efficiency", rep.Targets[0].Name)
}

func TestHeapGrowth(t *testing.T) {
	require.Equal(t, 0.0, heapGrowth(nil))
	require.Equal(t, 0.0, heapGrowth([]uint64{5}))
	require.InDelta(t, 0.25, heapGrowth([]uint64{100, 90, 125}), 1e-15)
}
