package train

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/solver"
)

// blobs returns n labelled 4×4 images in 3 classes: each class has a fixed
// random prototype with pixels in [0, 1], and an image is its class's
// prototype plus N(0, noise²) pixel noise. Images are drawn from seed.
func blobs(name string, n int, noise float64, seed uint64) *datasets.Dataset {
	const rows, cols, classes = 4, 4, 3
	protos := blobPrototypes()
	rng := rand.New(rand.NewPCG(seed, 7))
	d := &datasets.Dataset{Name: name, Rows: rows, Cols: cols, Classes: classes, X: make([]float64, 0, n*rows*cols), Y: make([]int, n)}
	for i := range d.Y {
		c := rng.IntN(classes)
		d.Y[i] = c
		for _, v := range protos[c] {
			d.X = append(d.X, v+noise*rng.NormFloat64())
		}
	}
	return d
}

// blobPrototypes returns the class prototypes of blobs.
func blobPrototypes() [][]float64 {
	rng := rand.New(rand.NewPCG(99, 99))
	protos := make([][]float64, 3)
	for c := range protos {
		protos[c] = make([]float64, 16)
		for i := range protos[c] {
			protos[c][i] = rng.Float64()
		}
	}
	return protos
}

// bayesAccuracy returns the accuracy on d of the nearest-prototype rule,
// the Bayes classifier of blobs (isotropic Gaussian noise, equal priors).
func bayesAccuracy(d *datasets.Dataset) float64 {
	protos := blobPrototypes()
	correct := 0
	for i, y := range d.Y {
		best, arg := math.Inf(1), -1
		for c, p := range protos {
			s := 0.0
			for j, v := range d.Image(i) {
				s += (v - p[j]) * (v - p[j])
			}
			if s < best {
				best, arg = s, c
			}
		}
		if arg == y {
			correct++
		}
	}
	return float64(correct) / float64(d.Len())
}

// blobData returns a training and a test set of blobs.
func blobData(ntrain, ntest int) (train, test *datasets.Dataset) {
	return blobs("blobs/train", ntrain, 0.3, 1), blobs("blobs/test", ntest, 0.3, 2)
}

// tinyConfig is a small, fast configuration: 8 batches of 32 per epoch on
// blobData(256, ·).
func tinyConfig() Config {
	return Config{
		Seed: 3, Epochs: 2, BatchSize: 32, EvalBatchSize: 50, LR: 0.05,
		Model: ModelConfig{Hidden: 6, Encoder: 5},
	}
}

// run trains cfg on data to the end, checkpointing into dir/name, and
// returns the result and the checkpoint's bytes.
func run(t testing.TB, cfg Config, train, test *datasets.Dataset, path string) (*Result, []byte) {
	t.Helper()
	tr, err := New(cfg, train, test, &Options{Checkpoint: path})
	require.NoError(t, err)
	res, err := tr.Run(context.Background())
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return res, b
}

// withoutTimes returns the epochs with their wall times zeroed.
func withoutTimes(es []EpochMetrics) []EpochMetrics {
	out := append([]EpochMetrics(nil), es...)
	for i := range out {
		out[i].clearTimes()
	}
	return out
}

// normSpec returns the norm named name.
func normSpec(name string) solver.NormSpec {
	n, err := solver.ParseNormSpec(name)
	if err != nil {
		panic(err)
	}
	return n
}

// tempPath returns a path in a fresh temporary directory.
func tempPath(t testing.TB, name string) string { return filepath.Join(t.TempDir(), name) }

func equalBytes(a, b []byte) bool { return bytes.Equal(a, b) }

// methodNamed returns the registry method named name, which must exist.
func methodNamed(name string) solver.MethodSpec {
	m, err := solver.ParseMethodSpec(name)
	if err != nil {
		panic(err)
	}
	return m
}

// requireResumesExactly runs cfg, canceling each (re)started run after
// the number of batches of stops (0: before the first), resumes it from its
// checkpoint to the end and requires the metrics, steps and final
// checkpoint bytes of the uninterrupted run want, wantBytes.
func requireResumesExactly(t *testing.T, cfg Config, tr, te *datasets.Dataset, stops []int, want *Result, wantBytes []byte) {
	t.Helper()
	path := tempPath(t, "run.ckpt")
	var trn *Trainer
	var err error
	for i, stop := range stops {
		ctx, cancel := context.WithCancel(context.Background())
		seen := 0
		opts := &Options{Checkpoint: path, OnBatch: func(*BatchMetrics) {
			seen++
			if seen == stop {
				cancel()
			}
		}}
		if stop == 0 {
			cancel()
		}
		if i == 0 {
			trn, err = New(cfg, tr, te, opts)
		} else {
			trn, err = Resume(path, tr, te, opts)
		}
		require.NoError(t, err)
		res, err := trn.Run(ctx)
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, res.Interrupted)
		ck, err := Load(path)
		require.NoError(t, err)
		require.Equal(t, res.Epoch, ck.Epoch)
		require.Equal(t, res.Batch, ck.Batch)
	}
	trn, err = Resume(path, tr, te, &Options{Checkpoint: path})
	require.NoError(t, err)
	got, err := trn.Run(context.Background())
	require.NoError(t, err)
	gotBytes, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, withoutTimes(want.Epochs), withoutTimes(got.Epochs))
	require.Equal(t, want.Steps, got.Steps)
	require.True(t, equalBytes(wantBytes, gotBytes), "resumed run ends with the uninterrupted run's checkpoint")
}
