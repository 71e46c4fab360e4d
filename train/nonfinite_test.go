package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/solver"
)

// TestNewRefusesNonFinitePixel: one NaN or ±Inf pixel in the training or
// the test set is refused by New, before global standardisation could
// spread it to every batch, with an error wrapping solver.ErrNonFinite
// that names the set and the image.
func TestNewRefusesNonFinitePixel(t *testing.T) {
	for _, set := range []string{"train", "test"} {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			t.Run(fmt.Sprintf("%s/%v", set, v), func(t *testing.T) {
				tr, te := blobData(256, 100)
				d := tr
				if set == "test" {
					d = te
				}
				d.X[7*d.Dim()+2] = v
				trn, err := New(tinyConfig(), tr, te, nil)
				require.ErrorIs(t, err, solver.ErrNonFinite)
				require.ErrorContains(t, err, fmt.Sprintf("blobs/%s: image 7 holds %v", set, v))
				require.Nil(t, trn)
			})
		}
	}
}

// TestStopsOnNonFinite injects a NaN or +Inf at batch 2 of epoch 1 in each
// place a non-finite value can enter a training step. Run stops there with
// an error wrapping solver.ErrNonFinite that names the epoch, the batch
// and the value at fault, at position (0, 2) after two optimiser steps,
// writing no checkpoint; except where the fault is injected into the
// parameters, they are those of the last good step.
func TestStopsOnNonFinite(t *testing.T) {
	const bad = 2 // the faulty batch of epoch 0
	type fault struct {
		name    string
		want    string
		inject  func(trn *Trainer)
		restore func(trn *Trainer) // undoes an injection into the parameters
	}
	var saved float64
	faults := []fault{
		{"data", "the standardised input", func(trn *Trainer) {
			// Poison, after New, the image that the shuffle puts into
			// batch 2 of epoch 0.
			trn.batcher.Reset(0)
			for range bad + 1 {
				trn.batcher.Next()
			}
			i := trn.batcher.Batch().Index[0]
			trn.train.X[i*trn.train.Dim()] = math.NaN()
			trn.batcher.Reset(0)
		}, nil},
		{"forward", "deq: Forward", func(trn *Trainer) {
			trn.beforeRun = func(e, b int, x []float64) {
				if e == 0 && b == bad {
					x[3] = math.Inf(1)
				}
			}
		}, nil},
		{"loss", "the loss NaN", func(trn *Trainer) {
			trn.beforeRun = func(e, b int, x []float64) {
				if e == 0 && b == bad {
					saved, trn.model.outW.data[0] = trn.model.outW.data[0], math.NaN()
				}
			}
		}, func(trn *Trainer) { trn.model.outW.data[0] = saved }},
		{"gradient", "the gradient of parameter", func(trn *Trainer) {
			trn.afterBackward = func(e, b int, g [][]float64) {
				if e == 0 && b == bad {
					g[1][0] = math.NaN()
				}
			}
		}, nil},
		{"step", "after the optimiser step, parameter encoder.W holds +Inf at 4", func(trn *Trainer) {
			trn.afterStep = func(e, b int, v [][]float64) {
				if e == 0 && b == bad {
					v[0][4] = math.Inf(1)
				}
			}
		}, nil},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			tr, te := blobData(256, 100)
			path := tempPath(t, "never.ckpt")
			trn, err := New(tinyConfig(), tr, te, &Options{Checkpoint: path})
			require.NoError(t, err)
			params := func() []float64 {
				var all []float64
				for _, p := range trn.model.params {
					all = append(all, p.data...)
				}
				return all
			}
			var last []float64
			trn.opts.OnBatch = func(b *BatchMetrics) {
				require.False(t, b.Skipped)
				last = params()
			}
			f.inject(trn)
			res, err := trn.Run(context.Background())
			require.ErrorIs(t, err, solver.ErrNonFinite)
			require.True(t, strings.HasPrefix(err.Error(), "train: epoch 1 batch 2: "), err.Error())
			require.ErrorContains(t, err, f.want)
			require.Equal(t, bad, res.Steps)
			require.Equal(t, 0, res.Epoch)
			require.Equal(t, bad, res.Batch)
			require.Empty(t, res.Epochs)
			_, err = os.Stat(path)
			require.True(t, errors.Is(err, os.ErrNotExist), "a stopped run writes no checkpoint")
			if f.name == "step" {
				return
			}
			if f.restore != nil {
				f.restore(trn)
			}
			require.Equal(t, last, params(), "the faulty batch changes no parameter")
			require.True(t, numeric.AllFinite(params()))
		})
	}
}

// TestSkipsDivergedBatch: a forward solve that diverges with finite
// values (Status Diverged without an error) is skipped: counted, logged,
// left out of the figures, and no parameter changes.
func TestSkipsDivergedBatch(t *testing.T) {
	const bad = 2
	tr, te := blobData(256, 100)
	var logged []string
	trn, err := New(tinyConfig(), tr, te, &Options{Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }})
	require.NoError(t, err)
	params := func() []float64 {
		var all []float64
		for _, p := range trn.model.params {
			all = append(all, p.data...)
		}
		return all
	}
	trn.afterForward = func(e, b int, sol *deq.Solution) {
		if e == 0 && b == bad {
			sol.Result.Status = solver.Diverged
		}
	}
	var skipped []BatchMetrics
	before := params()
	trn.opts.OnBatch = func(b *BatchMetrics) {
		now := params()
		if b.Skipped {
			skipped = append(skipped, *b) // OnBatch's argument is reused
			require.Equal(t, before, now, "a skipped batch changes no parameter")
		} else {
			require.False(t, slices.Equal(before, now))
		}
		before = now
	}
	res, err := trn.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, skipped, 1)
	require.Equal(t, 0, skipped[0].Epoch)
	require.Equal(t, bad, skipped[0].Batch)
	require.Equal(t, "forward solve diverged", skipped[0].SkipReason)
	require.Equal(t, 1, res.Epochs[0].Skipped)
	require.Equal(t, 7, res.Epochs[0].Forward.Solves, "the skipped batch is left out of the solver figures")
	require.Equal(t, 15, res.Steps)
	require.Equal(t, []string{"epoch 1 batch 2 skipped: forward solve diverged"}, logged)
}

// TestAbortsAfterConsecutiveBadBatches: Config.MaxBadBatches consecutive
// diverged solves stop Run with ErrTooManyBadBatches and no checkpoint.
func TestAbortsAfterConsecutiveBadBatches(t *testing.T) {
	tr, te := blobData(256, 100)
	cfg := tinyConfig()
	cfg.MaxBadBatches = 3
	path := tempPath(t, "never.ckpt")
	trn, err := New(cfg, tr, te, &Options{Checkpoint: path})
	require.NoError(t, err)
	trn.afterForward = func(e, b int, sol *deq.Solution) {
		if b >= 4 {
			sol.Result.Status = solver.Diverged
		}
	}
	res, err := trn.Run(context.Background())
	require.ErrorIs(t, err, ErrTooManyBadBatches)
	require.Equal(t, 4, res.Steps, "four good batches, then three bad ones")
	require.Equal(t, 0, res.Epoch)
	require.Equal(t, 7, res.Batch)
	_, err = os.Stat(path)
	require.True(t, errors.Is(err, os.ErrNotExist), "an aborted run writes no checkpoint")
}

// TestMeasurementsRefuseNonFinitePixel: Model.Evaluate and Model.Spectral
// on a data set holding one NaN pixel return an error wrapping
// solver.ErrNonFinite (the spectral measurement, which standardises the
// first images itself, used to hand the eigenvalue computation a NaN
// matrix, on which it never returned).
func TestMeasurementsRefuseNonFinitePixel(t *testing.T) {
	tr, te := blobData(256, 100)
	trn, err := New(tinyConfig(), tr, te, nil)
	require.NoError(t, err)
	m := trn.Model()
	te.X[3] = math.NaN() // image 0, which the spectral batch holds
	_, err = m.Evaluate(context.Background(), te, SolverConfig{}, 0)
	require.ErrorIs(t, err, solver.ErrNonFinite)
	require.ErrorContains(t, err, "image 0 holds NaN")
	_, err = m.Spectral(context.Background(), te, SolverConfig{})
	require.ErrorIs(t, err, solver.ErrNonFinite)
	require.ErrorContains(t, err, "image 0 holds NaN")
}
