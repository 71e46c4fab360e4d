package train

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
)

var synth struct {
	once        sync.Once
	train, test *datasets.Dataset
	err         error
}

// synthData returns a small synthetic digits data set shared by the tests
// (copies, so that tests may modify them).
func synthData(t testing.TB, ntrain, ntest int) (train, test *datasets.Dataset) {
	t.Helper()
	synth.once.Do(func() {
		d, err := datasets.Open(context.Background(), datasets.SyntheticName, &datasets.Options{SyntheticTrain: 2000, SyntheticTest: 500, Seed: 1})
		if err != nil {
			synth.err = err
			return
		}
		synth.train, synth.test = d.Train, d.Test
	})
	require.NoError(t, synth.err)
	require.LessOrEqual(t, ntrain, synth.train.Len())
	require.LessOrEqual(t, ntest, synth.test.Len())
	cp := func(d *datasets.Dataset, n int) *datasets.Dataset {
		h := d.Head(n)
		c := *h
		c.X = append([]float64(nil), h.X...)
		c.Y = append([]int(nil), h.Y...)
		return &c
	}
	return cp(synth.train, ntrain), cp(synth.test, ntest)
}

// tinyConfig is a small, fast configuration.
func tinyConfig() Config {
	return Config{
		Seed: 3, Epochs: 2, BatchSize: 32, EvalBatchSize: 100, LR: 3e-3,
		Model: ModelConfig{Hidden: 12, Encoder: 16},
	}
}
