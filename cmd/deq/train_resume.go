package main

import (
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/train"
)

// resumeFlags returns the command line that continues an interrupted run,
// quoted for a POSIX shell: deq train with --checkpoint, --resume and the
// data flags set on its command line, --val among them (the checkpoint
// stores the configuration, not which images the run used).
func resumeFlags(fl *pflag.FlagSet) string {
	args := []string{"deq", "train", "--checkpoint", shellQuote(fl.Lookup("checkpoint").Value.String()), "--resume"}
	for _, name := range []string{"data", "data-seed", "train-limit", "test-limit", "val"} {
		if fl.Changed(name) {
			args = append(args, "--"+name, shellQuote(fl.Lookup(name).Value.String()))
		}
	}
	return strings.Join(args, " ")
}

// shellQuote returns s as one word of a POSIX shell: unchanged when it
// holds only characters no shell treats specially, otherwise in single
// quotes, each single quote inside closed, escaped with a backslash and
// reopened.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=+,@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// source returns the data source of the run on spec for its checkpoints:
// the data flags, with a directory made absolute so that a resume from
// another working directory finds it.
func (f *trainFlags) source(spec string) *train.DataSource {
	if dataOf(spec) != spec {
		if abs, err := filepath.Abs(spec); err == nil {
			spec = abs
		}
	}
	d := f.data
	return &train.DataSource{
		Spec: spec, Seed: d.seed,
		Sizes:            datasets.SizeOptions{TrainLimit: d.trainLimit, TestLimit: d.testLimit, Validation: f.val},
		ValidationAsTest: f.val > 0,
	}
}

// restoreData sets the data flags not given on the command line to the
// values stored in a resumed checkpoint (src, nil for a checkpoint that
// stores none) and refuses those given with other values. A --data
// directory other than the stored one is left to the check of the data's
// digest: the directory may have moved.
func (f *trainFlags) restoreData(src *train.DataSource, changed func(string) bool) error {
	if src == nil {
		return nil
	}
	d := &f.data
	switch {
	case !changed("data"):
		d.spec = src.Spec
	case d.spec != src.Spec && dataOf(d.spec) == d.spec && dataOf(src.Spec) == src.Spec:
		return usagef("--data = %s contradicts the checkpoint's %s (--resume continues the saved run)", d.spec, src.Spec)
	}
	if !changed("data-seed") {
		d.seed = src.Seed
	} else if d.seed != src.Seed {
		return usagef("--data-seed = %d contradicts the checkpoint's %d (--resume continues the saved run)", d.seed, src.Seed)
	}
	for _, a := range []struct {
		flag   string
		p      *int
		stored int
	}{
		{"train-limit", &d.trainLimit, src.Sizes.TrainLimit},
		{"test-limit", &d.testLimit, src.Sizes.TestLimit},
		{"val", &f.val, src.Sizes.Validation},
	} {
		if !changed(a.flag) {
			*a.p = a.stored
		} else if *a.p != a.stored {
			return usagef("--%s = %d contradicts the checkpoint's %d (--resume continues the saved run)", a.flag, *a.p, a.stored)
		}
	}
	return nil
}
