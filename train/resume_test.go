package train

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/layers"
)

// stateBits returns the bits of every number of the trainer's state that
// the next batch depends on: the model's tensors (input statistics and
// parameters), Adam's step and moments, the cell's projection state and the
// position in the run.
func stateBits(t *Trainer) map[string][]uint64 {
	out := map[string][]uint64{}
	put := func(name string, x []float64) {
		b := make([]uint64, len(x))
		for i, v := range x {
			b[i] = math.Float64bits(v)
		}
		out[name] = b
	}
	t.model.tensors(func(name string, _, _ int, x []float64) error { put(name, x); return nil })
	as := t.adam.State()
	for i := range as.M {
		put("adam.m."+t.model.params[i].name, as.M[i])
		put("adam.v."+t.model.params[i].name, as.V[i])
	}
	if ps, ok := t.model.cell.(layers.ProjectionStater); ok {
		st := ps.ProjectionState()
		put("cell.projection", st.Vector)
		out["cell.projection.calls"] = []uint64{uint64(st.Calls)}
	}
	out["position"] = []uint64{uint64(t.epoch), uint64(t.batch), uint64(t.steps), uint64(as.Step)}
	return out
}

// requireSameBits requires the states of two trainers to be bit for bit
// equal (math.Float64bits of every value, not a tolerance).
func requireSameBits(t *testing.T, want, got map[string][]uint64) {
	t.Helper()
	require.Equal(t, len(want), len(got), "tensors")
	for name, w := range want {
		g, ok := got[name]
		require.True(t, ok, "tensor %s missing", name)
		require.Equal(t, len(w), len(g), "tensor %s", name)
		for i := range w {
			if w[i] != g[i] {
				t.Fatalf("%s[%d]: %v (bits %#x) after resuming, %v (bits %#x) uninterrupted",
					name, i, math.Float64frombits(g[i]), g[i], math.Float64frombits(w[i]), w[i])
			}
		}
	}
}

// stopAfter returns a context and Options that cancel it from inside
// OnBatch after n batches (never for n ≤ 0), checkpointing into path.
func stopAfter(path string, n int) (context.Context, context.CancelFunc, *Options) {
	ctx, cancel := context.WithCancel(context.Background())
	seen := 0
	return ctx, cancel, &Options{Checkpoint: path, OnBatch: func(*BatchMetrics) {
		if seen++; seen == n {
			cancel()
		}
	}}
}

// runStops trains cfg on tr, te from New, cancelling the context from
// inside OnBatch after stops[0] batches, then continues as continueStops
// with the remaining stops, and returns the trainer that finished the run.
func runStops(t *testing.T, cfg Config, tr, te *datasets.Dataset, stops []int, extend int) *Trainer {
	t.Helper()
	path := tempPath(t, "run.ckpt")
	ctx, cancel, opts := stopAfter(path, stops[0])
	defer cancel()
	trn, err := New(cfg, tr, te, opts)
	require.NoError(t, err)
	_, err = trn.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	return continueStops(t, path, tr, te, extend, stops[1:])
}

// continueStops resumes the checkpoint at path, extended to extend epochs
// if extend is positive, interrupting it after each number of batches of
// stops (counted from each resume) and resuming it again, and returns the
// trainer that finished the run.
func continueStops(t *testing.T, path string, tr, te *datasets.Dataset, extend int, stops []int) *Trainer {
	t.Helper()
	var trn *Trainer
	for i := 0; i <= len(stops); i++ {
		n := 0
		if i < len(stops) {
			n = stops[i]
		}
		ctx, cancel, opts := stopAfter(path, n)
		ck, err := Load(path)
		require.NoError(t, err)
		if i == 0 && extend > 0 {
			ck.Config.Epochs = extend
		}
		trn, err = ck.Resume(tr, te, opts)
		require.NoError(t, err)
		_, err = trn.Run(ctx)
		cancel()
		if i < len(stops) {
			require.ErrorIs(t, err, context.Canceled)
		} else {
			require.NoError(t, err)
		}
	}
	return trn
}

// TestResumeIsBitIdentical: a run interrupted mid-epoch, at an epoch
// boundary or several times, and resumed from its checkpoints, ends with
// every parameter, input statistic, Adam moment and projection state equal
// bit for bit to those of an uninterrupted run.
func TestResumeIsBitIdentical(t *testing.T) {
	tr, te := blobData(256, 50)
	cfg := tinyConfig() // 8 batches per epoch, 2 epochs
	whole, err := New(cfg, tr, te, nil)
	require.NoError(t, err)
	_, err = whole.Run(context.Background())
	require.NoError(t, err)
	want := stateBits(whole)
	for _, tc := range []struct {
		name  string
		stops []int
	}{
		{"mid-epoch", []int{3}},
		{"epoch boundary", []int{8}},
		{"last batch", []int{15}},
		{"three times", []int{1, 6, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireSameBits(t, want, stateBits(runStops(t, cfg, tr, te, tc.stops, 0)))
		})
	}
}

// TestResumeExtendsRun: raising Checkpoint.Config.Epochs extends a run,
// finished or interrupted. With the constant schedule the extended run
// equals, bit for bit and byte for byte, a run planned for the new total;
// with the cosine schedule the extension's rates are those of the schedule
// re-planned over the new total, and an extended run interrupted again
// resumes exactly.
func TestResumeExtendsRun(t *testing.T) {
	tr, te := blobData(256, 50)
	const nb = 8 // batches per epoch
	constant := tinyConfig()
	constant.Schedule = Constant
	constant.Epochs = 3
	planned, plannedBytes := run(t, constant, tr, te, tempPath(t, "planned.ckpt"))
	short := constant
	short.Epochs = 1

	t.Run("finished constant run", func(t *testing.T) {
		path := tempPath(t, "run.ckpt")
		run(t, short, tr, te, path)
		ck, err := Load(path)
		require.NoError(t, err)
		require.Equal(t, 1, ck.Epoch)
		ck.Config.Epochs = 3
		trn, err := ck.Resume(tr, te, &Options{Checkpoint: path})
		require.NoError(t, err)
		res, err := trn.Run(context.Background())
		require.NoError(t, err)
		require.Equal(t, withoutTimes(planned.Epochs), withoutTimes(res.Epochs))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.True(t, equalBytes(plannedBytes, b), "the extended run's checkpoint is the planned run's")
	})
	t.Run("interrupted constant run", func(t *testing.T) {
		whole, err := New(constant, tr, te, nil)
		require.NoError(t, err)
		_, err = whole.Run(context.Background())
		require.NoError(t, err)
		requireSameBits(t, stateBits(whole), stateBits(runStops(t, short, tr, te, []int{5, 6}, 3)))
	})
	t.Run("cosine", func(t *testing.T) {
		cos := tinyConfig()
		cos.Epochs = 1
		path := tempPath(t, "run.ckpt")
		run(t, cos, tr, te, path)
		ck, err := Load(path)
		require.NoError(t, err)
		ck.Config.Epochs = 3
		var lrs []float64
		trn, err := ck.Resume(tr, te, &Options{Checkpoint: path, OnBatch: func(bm *BatchMetrics) { lrs = append(lrs, bm.LR) }})
		require.NoError(t, err)
		_, err = trn.Run(context.Background())
		require.NoError(t, err)
		require.Len(t, lrs, 2*nb)
		for i, lr := range lrs {
			pos := float64(nb + i)
			require.InDelta(t, cos.LR*(1+math.Cos(math.Pi*pos/(3*nb)))/2, lr, 1e-15, "batch %d", i)
		}
		require.InDelta(t, 3*cos.LR/4, lrs[0], 1e-15, "restarts at LR·(1 + cos(π/3))/2")
		// The extended run, interrupted and resumed, ends where it does
		// uninterrupted.
		again := tempPath(t, "again.ckpt")
		run(t, cos, tr, te, again)
		requireSameBits(t, stateBits(trn), stateBits(continueStops(t, again, tr, te, 3, []int{3, 7})))
	})
	t.Run("refusals", func(t *testing.T) {
		path := tempPath(t, "run.ckpt")
		run(t, short, tr, te, path)
		for _, tc := range []struct {
			field string
			edit  func(*Config)
		}{
			{"Epochs", func(c *Config) { c.Epochs = 0 }},
			{"LR", func(c *Config) { c.LR *= 2 }},
			{"Model.Hidden", func(c *Config) { c.Model.Hidden++ }},
		} {
			ck, err := Load(path)
			require.NoError(t, err)
			tc.edit(&ck.Config)
			_, err = ck.Resume(tr, te, nil)
			var fe *FieldError
			require.ErrorAs(t, err, &fe, tc.field)
			require.Equal(t, tc.field, fe.Field)
		}
	})
}

// TestCheckpointStoresDataSource: Options.Source is stored in the
// checkpoints and returned by Load; a resumed run with no Source keeps the
// checkpoint's, one with a Source records it; a checkpoint written
// without one loads with a nil Source.
func TestCheckpointStoresDataSource(t *testing.T) {
	tr, te := blobData(128, 50)
	cfg := tinyConfig()
	cfg.Epochs = 1
	src := &DataSource{Spec: "/data/blobs", Seed: 7, Sizes: datasets.SizeOptions{TrainLimit: 128, TestLimit: 50, Validation: 3}, ValidationAsTest: true}
	path := tempPath(t, "run.ckpt")
	trn, err := New(cfg, tr, te, &Options{Checkpoint: path, Source: src})
	require.NoError(t, err)
	_, err = trn.Run(context.Background())
	require.NoError(t, err)
	ck, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, src, ck.Source)

	ck.Config.Epochs = 2
	trn, err = ck.Resume(tr, te, &Options{Checkpoint: path})
	require.NoError(t, err)
	_, err = trn.Run(context.Background())
	require.NoError(t, err)
	ck, err = Load(path)
	require.NoError(t, err)
	require.Equal(t, src, ck.Source, "kept by a resume without a Source")

	moved := *src
	moved.Spec = "/elsewhere/blobs"
	trn, err = ck.Resume(tr, te, &Options{Source: &moved})
	require.NoError(t, err)
	again := tempPath(t, "again.ckpt")
	require.NoError(t, trn.Save(again))
	ck, err = Load(again)
	require.NoError(t, err)
	require.Equal(t, &moved, ck.Source)

	// Written without a source (as every checkpoint before DataSource).
	old, err := Load(func() string { p, _ := savedCheckpoint(t); return p }())
	require.NoError(t, err)
	require.Nil(t, old.Source)
}
