package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/train"
)

// trainedSetup is the data and model of a section that needs a trained
// DEQ: the forward and training sections.
type trainedSetup struct {
	data                  string // datasets.Open spec
	trainLimit, testLimit int
	hidden, epochs, batch int
	lr                    float64
}

// forwardSetup returns the model the forward section solves: a dense DEQ of
// 128 hidden units trained for 2 epochs (16 units, 1 epoch on 512 synthetic
// images when Quick).
func (s *settings) forwardSetup() trainedSetup {
	if s.Quick {
		return trainedSetup{data: datasets.SyntheticName, trainLimit: 512, testLimit: 200, hidden: 16, epochs: 1, batch: 64, lr: 2e-3}
	}
	return trainedSetup{data: s.data(), hidden: 128, epochs: 2, batch: 128, lr: 2e-3}
}

// trainingSetup returns the run the training section times: a dense DEQ of
// 128 hidden units, 3 epochs of 100 batches of 128 images (16 units, 3
// epochs of 4 batches of 64 synthetic images when Quick).
func (s *settings) trainingSetup() trainedSetup {
	if s.Quick {
		return trainedSetup{data: datasets.SyntheticName, trainLimit: 256, testLimit: 64, hidden: 16, epochs: 3, batch: 64, lr: 2e-3}
	}
	return trainedSetup{data: s.data(), trainLimit: 12800, testLimit: 1000, hidden: 128, epochs: 3, batch: 128, lr: 2e-3}
}

// data returns the data set of the trained-model sections: Config.Data,
// else Fashion-MNIST when installed, else the synthetic digits.
func (s *settings) data() string {
	if s.Data != "" {
		return s.Data
	}
	if _, err := datasets.Find(datasets.FashionMNIST, nil); err == nil {
		return datasets.FashionMNIST
	}
	return datasets.SyntheticName
}

// config returns the training configuration of ts.
func (ts trainedSetup) config(seed uint64) train.Config {
	return train.Config{
		Seed: seed, Epochs: ts.epochs, BatchSize: ts.batch, LR: ts.lr,
		Model: train.ModelConfig{Cell: train.DenseCell, Hidden: ts.hidden},
	}
}

// open loads the data of ts with raw pixels (the model standardises them).
func (ts trainedSetup) open(ctx context.Context, seed uint64) (*datasets.Data, error) {
	d, err := datasets.Open(ctx, ts.data, &datasets.Options{
		Seed:      seed,
		Sizes:     datasets.SizeOptions{TrainLimit: ts.trainLimit, TestLimit: ts.testLimit},
		Synthetic: datasets.SyntheticOptions{Train: ts.trainLimit, Test: ts.testLimit},
	})
	if err != nil {
		return nil, fmt.Errorf("bench: data %q: %w", ts.data, err)
	}
	return d, nil
}

// cachedModel returns the trained model of ts: the checkpoint at path when
// it holds a finished run of the same configuration on the same data,
// otherwise a model trained now and saved at path (path empty: not
// cached). It reports whether the model came from the cache.
func cachedModel(ctx context.Context, s *settings, ts trainedSetup, d *datasets.Data, path string) (*train.Model, bool, error) {
	cfg := ts.config(s.Seed)
	if path != "" {
		ck, err := train.Load(path)
		switch {
		case err == nil:
			want, derr := cfg.Defaults()
			if derr == nil && ck.Epoch == want.Epochs && ck.Config == want && ck.TrainSet == d.Train.Name && ck.TestSet == d.Test.Name {
				return ck.Model, true, nil
			}
			s.logf("forward: %s holds another run; training a new model", path)
		case errors.Is(err, fs.ErrNotExist):
		default:
			s.logf("forward: ignoring %s: %v", path, err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, false, err
		}
	}
	tr, err := train.New(cfg, d.Train, d.Test, &train.Options{Checkpoint: path})
	if err != nil {
		return nil, false, fmt.Errorf("bench: training the forward section's model: %w", err)
	}
	res, err := tr.Run(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("bench: training the forward section's model: %w", err)
	}
	if f := res.Final(); f != nil {
		s.logf("forward: trained %s on %s: test accuracy %.4f", cfg.Model.Cell, d.Train.Name, f.TestAcc)
	}
	return tr.Model(), false, nil
}

// dataName returns the data set of the trained-model sections when one of
// them runs, else "".
func (s *settings) dataName() string {
	if !s.run[sectionForward] && !s.run[sectionTraining] {
		return ""
	}
	if s.Quick {
		return datasets.SyntheticName
	}
	return s.data()
}
