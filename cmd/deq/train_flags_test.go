package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/train"
)

// TestTrainFlagsNameConfigFields: every Config field the flag table names
// exists, so that train's field errors and --resume's differences map to
// their flags.
func TestTrainFlagsNameConfigFields(t *testing.T) {
	var f trainFlags
	f.bindConfig(pflag.NewFlagSet("train", pflag.ContinueOnError))
	require.NotEmpty(t, f.bound)
	for _, b := range f.bound {
		for _, field := range b.fields {
			typ := reflect.TypeOf(train.Config{})
			for _, part := range strings.Split(field, ".") {
				sf, ok := typ.FieldByName(part)
				require.True(t, ok, "--%s: no Config field %s", b.name, field)
				typ = sf.Type
			}
			require.Equal(t, b.name, f.flagOf(field), "one flag per field")
		}
	}
}

// TestTrainAidFlagsSetConfig: the training aids' flags set their Config
// fields, with the defaults that derive from them (--jac-freq 1,
// --correction-gamma 0.8), and map back to their flags.
func TestTrainAidFlagsSetConfig(t *testing.T) {
	var f trainFlags
	fl := pflag.NewFlagSet("train", pflag.ContinueOnError)
	f.bindConfig(fl)
	require.NoError(t, fl.Parse([]string{"--jac-weight", "0.25", "--correction-states", "3", "--dropout", "0.1", "--normalization", "weight"}))
	c, err := f.config(fl.Changed)
	require.NoError(t, err)
	require.Equal(t, train.AidsConfig{JacWeight: 0.25, JacFreq: 1, CorrectionStates: 3, CorrectionGamma: train.DefaultCorrectionGamma, Dropout: 0.1}, c.Aids)
	require.Equal(t, layers.WeightNorm, c.Model.Normalization)

	f = trainFlags{}
	fl = pflag.NewFlagSet("train", pflag.ContinueOnError)
	f.bindConfig(fl)
	require.NoError(t, fl.Parse([]string{"--jac-weight", "1", "--jac-freq", "4", "--correction-states", "2", "--correction-gamma", "0.5", "--normalization", "spectral"}))
	c, err = f.config(fl.Changed)
	require.NoError(t, err)
	require.Equal(t, train.AidsConfig{JacWeight: 1, JacFreq: 4, CorrectionStates: 2, CorrectionGamma: 0.5}, c.Aids)
	require.Equal(t, layers.SpectralNorm, c.Model.Normalization)
	for flag, field := range map[string]string{
		"jac-weight": "Aids.JacWeight", "jac-freq": "Aids.JacFreq", "correction-states": "Aids.CorrectionStates",
		"correction-gamma": "Aids.CorrectionGamma", "dropout": "Aids.Dropout", "normalization": "Model.Normalization",
	} {
		require.Equal(t, flag, f.flagOf(field))
	}

	// Without the flags, every aid is off and the checkpoint's Config is
	// that of a run before the aids existed.
	f = trainFlags{}
	fl = pflag.NewFlagSet("train", pflag.ContinueOnError)
	f.bindConfig(fl)
	c, err = f.config(fl.Changed)
	require.NoError(t, err)
	require.Zero(t, c.Aids)
	require.Equal(t, layers.Projection, c.Model.Normalization)
}

// TestShiftFlagSetsConfig: --shift sets Config.Augment.Shift, 0 meaning
// none (spelt −1 where the cell's default is a shift), and without it each
// cell takes its default (train.DefaultConvShift for the conv cell, none
// for the others) on every data set; a given --shift wins.
func TestShiftFlagSetsConfig(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		spec  string
		want  int // Config.Augment.Shift of the flags
		final int // the shift applied: after dataDefaults and Defaults, none as 0
	}{
		{nil, datasets.MNIST10k, 0, 0},
		{nil, datasets.FashionMNIST, 0, 0},
		{[]string{"--shift", "2"}, datasets.MNIST10k, 2, 2},
		{[]string{"--shift", "1"}, datasets.FashionMNIST, 1, 1},
		{[]string{"--cell", "conv"}, datasets.MNIST10k, train.DefaultConvShift, train.DefaultConvShift},
		{[]string{"--cell", "conv"}, datasets.SyntheticName, train.DefaultConvShift, train.DefaultConvShift},
		{[]string{"--cell", "conv"}, datasets.FashionMNIST, train.DefaultConvShift, train.DefaultConvShift},
		{[]string{"--cell", "conv", "--shift", "0"}, datasets.MNIST10k, -1, 0},
		{[]string{"--cell", "conv", "--shift", "1"}, datasets.MNIST10k, 1, 1},
		{[]string{"--cell", "conv", "--shift", "2"}, datasets.FashionMNIST, 2, 2},
	} {
		f, changed, c, err := parseTrainFlags(t, tc.args...)
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.want, c.Augment.Shift, "%v", tc.args)
		require.Equal(t, "shift", f.flagOf("Augment.Shift"))
		d, err := dataDefaults(c, tc.spec, changed).Defaults()
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.final, max(d.Augment.Shift, 0), "%v on %s", tc.args, tc.spec)
	}
}

// TestFlipFlagSetsConfig: --flip sets Config.Augment.Flip; without it the
// conv cell mirrors Fashion-MNIST's training images (train.DataAugment)
// and nothing else mirrors; --flip=false turns the default off.
func TestFlipFlagSetsConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		spec string
		want bool
	}{
		{nil, datasets.FashionMNIST, false},
		{nil, datasets.MNIST, false},
		{[]string{"--cell", "conv"}, datasets.FashionMNIST, true},
		{[]string{"--cell", "conv"}, datasets.MNIST, false},
		{[]string{"--cell", "conv"}, datasets.MNIST10k, false},
		{[]string{"--cell", "conv"}, datasets.KMNIST, false},
		{[]string{"--cell", "conv"}, datasets.SyntheticName, false},
		{[]string{"--cell", "conv", "--flip=false"}, datasets.FashionMNIST, false},
		{[]string{"--cell", "conv", "--flip"}, datasets.MNIST, true},
		{[]string{"--flip"}, datasets.FashionMNIST, true},
	} {
		f, changed, c, err := parseTrainFlags(t, tc.args...)
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, "flip", f.flagOf("Augment.Flip"))
		d, err := dataDefaults(c, tc.spec, changed).Defaults()
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.want, d.Augment.Flip, "%v on %s", tc.args, tc.spec)
	}
}

// parseTrainFlags parses the arguments of deq train into the flags and
// returns them, whether each flag was given, and their configuration or
// its error.
func parseTrainFlags(t *testing.T, args ...string) (*trainFlags, func(string) bool, train.Config, error) {
	t.Helper()
	f := new(trainFlags)
	fl := pflag.NewFlagSet("train", pflag.ContinueOnError)
	f.bindConfig(fl)
	require.NoError(t, fl.Parse(args))
	c, err := f.config(fl.Changed)
	return f, fl.Changed, c, err
}

// TestResumeNamesShiftAsFlagged: resuming a conv run with translations
// with --shift 0 is refused with the flag's 0, not the Config's −1.
func TestResumeNamesShiftAsFlagged(t *testing.T) {
	f, changed, cfg, err := parseTrainFlags(t, "--cell", "conv", "--shift", "0")
	require.NoError(t, err)
	require.Equal(t, -1, cfg.Augment.Shift)
	stored := cfg
	stored.Augment.Shift = 1
	err = f.checkResume(cfg, stored, changed)
	require.ErrorContains(t, err, "--shift = 0 contradicts the checkpoint's 1")
}

// TestPrecisionFlagSetsConfig: --precision sets Config.Model.Precision,
// and without it each run takes its default: float32 for the conv cell,
// float64 for the others and for a conv run whose forward, implicit
// adjoint or evaluation solver needs a proven bound that the cell proves
// in float64 (no GroupNorm, the projection, ℓ2 or Schatten-2).
func TestPrecisionFlagSetsConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want layers.Precision
	}{
		{nil, layers.Float64},
		{[]string{"--precision", "float32"}, layers.Float32},
		{[]string{"--cell", "meanfield"}, layers.Float64},
		{[]string{"--cell", "conv"}, layers.Float32},
		{[]string{"--cell", "conv", "--precision", "float64"}, layers.Float64},
		{[]string{"--cell", "conv", "--precision", "float32"}, layers.Float32},
		{[]string{"--cell", "conv", "--solver", "anderson", "--backward", "implicit", "--backward-solver", "broyden"}, layers.Float32},
		// Forward and evaluation solves are certified on the float64 map.
		{[]string{"--cell", "conv", "--groups", "-1", "--solver", "vrghal"}, layers.Float32},
		{[]string{"--cell", "conv", "--groups", "-1", "--solver", "ghal"}, layers.Float32},
		{[]string{"--cell", "conv", "--groups", "-1", "--solver", "growing-batch"}, layers.Float32},
		{[]string{"--cell", "conv", "--groups", "-1", "--backward", "implicit", "--backward-solver", "vrghal"}, layers.Float64},
		// The conv default mode (Jacobian-free) makes no adjoint solve.
		{[]string{"--cell", "conv", "--groups", "-1", "--backward", "phantom"}, layers.Float32},
		{[]string{"--cell", "conv", "--groups", "-1", "--eval-solver", "ghal"}, layers.Float32},
		{[]string{"--cell", "conv", "--groups", "-1", "--solver", "vrghal", "--precision", "float32"}, layers.Float32},
		// With GroupNorm (the default) or in ℓ∞ the bound is not proven in
		// float64 either: the default stays float32.
		{[]string{"--cell", "conv", "--solver", "ghal"}, layers.Float32},
		{[]string{"--cell", "conv", "--groups", "-1", "--norm", "linf", "--solver", "ghal"}, layers.Float32},
	} {
		f, _, c, err := parseTrainFlags(t, tc.args...)
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.want, c.Model.Precision, "%v", tc.args)
		require.Equal(t, "precision", f.flagOf("Model.Precision"))
	}
	// The help states the defaults and the solvers that change them.
	fl := pflag.NewFlagSet("train", pflag.ContinueOnError)
	new(trainFlags).bindConfig(fl)
	usage := fl.Lookup("precision").Usage
	for _, want := range []string{"default float32 for --cell conv", "ghal, vrghal or growing-batch", "--groups -1", "float64 for the other cells", "certified on the float64 map"} {
		require.Contains(t, usage, want)
	}
	require.Empty(t, fl.Lookup("precision").DefValue, "the default depends on the cell: the usage states it")
}

// TestResumeLegacyPrecision: a conv checkpoint written before float32 was
// the conv default omits its precision and loads as float64; resuming it
// without --precision is not refused and runs in float64, while an
// explicit --precision float32 contradicts it.
func TestResumeLegacyPrecision(t *testing.T) {
	f, changed, cfg, err := parseTrainFlags(t, "--cell", "conv")
	require.NoError(t, err)
	require.Equal(t, layers.Float32, cfg.Model.Precision)
	stored := cfg
	stored.Model.Precision = layers.Float64
	require.NoError(t, f.checkResume(cfg, stored, changed))
	f, changed, cfg, err = parseTrainFlags(t, "--cell", "conv", "--precision", "float32")
	require.NoError(t, err)
	require.ErrorContains(t, f.checkResume(cfg, stored, changed), "--precision = float32 contradicts the checkpoint's float64")

	// End to end: a float64 checkpoint edited into the spelling of
	// checkpoints written before the field existed (the precision omitted,
	// the checksum recomputed).
	dir := t.TempDir()
	ck := filepath.Join(dir, "conv.ckpt")
	args := []string{"train", "--data", "synthetic", "--train-limit", "64", "--test-limit", "20", "--cell", "conv", "--channels", "2",
		"--batch", "32", "--epochs", "1", "--max-iter", "10", "--quiet", "--json", "--checkpoint", ck}
	code, _, errOut := runCmd(append(args, "--precision", "float64")...)
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(ck)
	require.NoError(t, err)
	field := `,"Precision":"float64"`
	i := bytes.Index(b, []byte(field))
	require.Positive(t, i)
	copy(b[i:], strings.Repeat(" ", len(field)))
	n := len(b) - sha256.Size
	sum := sha256.Sum256(b[:n])
	copy(b[n:], sum[:])
	require.NoError(t, os.WriteFile(ck, b, 0o644))
	code, out, errOut := runCmd(append(args, "--resume")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "float64", decodeOne(t, out)["precision"])
	code, _, errOut = runCmd(append(args, "--resume", "--precision", "float32")...)
	require.NotEqual(t, 0, code)
	require.Contains(t, errOut, "--precision = float32 contradicts the checkpoint's float64")
}

// TestEvalRefusesUnprovenSolvers: deq eval refuses, naming --solver, the
// solvers that deq train would refuse for the checkpoint's cell: a
// stochastic solver on a conv cell without a proven bound (GroupNorm, the
// default), GHAL on a cell that declares no bound (weight normalisation);
// the deterministic solvers still evaluate it.
func TestEvalRefusesUnprovenSolvers(t *testing.T) {
	dir := t.TempDir()
	train := func(name string, extra ...string) string {
		ck := filepath.Join(dir, name)
		args := append([]string{"train", "--data", "synthetic", "--train-limit", "64", "--test-limit", "20", "--cell", "conv", "--channels", "2",
			"--batch", "32", "--epochs", "1", "--max-iter", "10", "--quiet", "--checkpoint", ck}, extra...)
		code, _, errOut := runCmd(args...)
		require.Equal(t, 0, code, errOut)
		return ck
	}
	groupNorm, weightNorm := train("gn.ckpt"), train("wn.ckpt", "--normalization", "weight", "--groups", "-1")
	for _, tc := range []struct {
		ck, solver, want string
	}{
		{groupNorm, "vrghal", "--solver = vrghal needs a proven Lipschitz bound"},
		{groupNorm, "growing-batch", "--solver = growing-batch needs a proven Lipschitz bound"},
		{weightNorm, "ghal", "--solver = ghal needs a Lipschitz bound γ̄, which the cell declares none of"},
		{weightNorm, "vrghal", "--solver = vrghal needs a proven Lipschitz bound"},
	} {
		code, _, errOut := runCmd("eval", "--checkpoint", tc.ck, "--test-limit", "20", "--solver", tc.solver)
		require.Equal(t, exitUsage, code, "%s %s: %s", tc.ck, tc.solver, errOut)
		require.Contains(t, errOut, tc.want)
	}
	for _, s := range []string{"picard", "anderson"} {
		code, _, errOut := runCmd("eval", "--checkpoint", groupNorm, "--test-limit", "20", "--solver", s)
		require.Equal(t, 0, code, errOut)
	}
}

// TestBackwardModeFlagsResume: the conv default's gradient is
// Jacobian-free (the summary says so); an implicit conv run resumes with its
// own command line, --backward-tol included, though the flags alone would
// resolve to the Jacobian-free default; and a resumed run refuses the
// settings of a mode its checkpoint does not use, naming the checkpoint's.
func TestBackwardModeFlagsResume(t *testing.T) {
	ck := filepath.Join(t.TempDir(), "conv.ckpt")
	base := []string{"train", "--data", "synthetic", "--train-limit", "64", "--test-limit", "20", "--cell", "conv", "--channels", "2",
		"--batch", "32", "--epochs", "1", "--max-iter", "10", "--quiet", "--json"}
	code, out, errOut := runCmd(base...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "jacobian-free", decodeOne(t, out)["backward"])
	args := append(slices.Clone(base), "--checkpoint", ck, "--backward-tol", "1e-4")
	code, out, errOut = runCmd(append(args, "--backward", "implicit")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "implicit (anderson)", decodeOne(t, out)["backward"])
	code, out, errOut = runCmd(append(args, "--resume")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "implicit (anderson)", decodeOne(t, out)["backward"])
	code, _, errOut = runCmd(append(args, "--resume", "--phantom-steps", "5")...) // the stored value, refused for the mode
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--phantom-steps applies to --backward phantom only (the checkpoint's mode is implicit)")
}

// TestRotateScaleFlagsSetConfig: --rotate and --scale set
// Config.Augment.Rotate and Scale, none without them for every cell and
// data set, and a negative value is refused naming the flag.
func TestRotateScaleFlagsSetConfig(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		spec          string
		rotate, scale float64
	}{
		{nil, datasets.MNIST10k, 0, 0},
		{[]string{"--cell", "conv"}, datasets.MNIST10k, 0, 0},
		{[]string{"--cell", "conv"}, datasets.FashionMNIST, 0, 0},
		{[]string{"--rotate", "10"}, datasets.MNIST10k, 10, 0},
		{[]string{"--scale", "0.1"}, datasets.FashionMNIST, 0, 0.1},
		{[]string{"--cell", "conv", "--rotate", "12.5", "--scale", "0.15"}, datasets.MNIST10k, 12.5, 0.15},
		{[]string{"--cell", "conv", "--rotate", "0", "--scale", "0"}, datasets.MNIST10k, 0, 0},
	} {
		f, changed, c, err := parseTrainFlags(t, tc.args...)
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.rotate, c.Augment.Rotate, "%v", tc.args)
		require.Equal(t, tc.scale, c.Augment.Scale, "%v", tc.args)
		require.Equal(t, "rotate", f.flagOf("Augment.Rotate"))
		require.Equal(t, "scale", f.flagOf("Augment.Scale"))
		d, err := dataDefaults(c, tc.spec, changed).Defaults()
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.rotate, d.Augment.Rotate, "%v on %s", tc.args, tc.spec)
		require.Equal(t, tc.scale, d.Augment.Scale, "%v on %s", tc.args, tc.spec)
	}
	for _, args := range [][]string{{"--rotate", "-5"}, {"--scale", "-0.2"}, {"--scale", "NaN"}} {
		_, _, _, err := parseTrainFlags(t, args...)
		require.ErrorContains(t, err, args[0]+" = ", "%v", args)
	}
}

// TestValFlagHoldsOutTrainingImages: --val N trains on the other training
// images and evaluates on the N held out.
func TestValFlagHoldsOutTrainingImages(t *testing.T) {
	code, out, errOut := runCmd("train", "--data", "synthetic", "--train-limit", "80", "--test-limit", "10", "--quiet", "--json",
		"--hidden", "8", "--batch", "16", "--epochs", "1", "--val", "30", "--shift", "1")
	require.Equal(t, 0, code, errOut)
	m := decodeOne(t, out)
	require.Equal(t, 50.0, m["train_size"])
	require.Equal(t, 30.0, m["test_size"])
	require.Equal(t, true, m["validation"])

	// The progress lines and the text summary name the validation set,
	// and a run without --val names the test set.
	args := []string{"train", "--data", "synthetic", "--train-limit", "80", "--test-limit", "10",
		"--hidden", "8", "--batch", "16", "--epochs", "1"}
	code, out, errOut = runCmd(append(args, "--val", "30")...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "(50 training, 30 validation images)")
	require.Regexp(t, `epoch 1/1 .* val \d`, errOut)
	require.Contains(t, out, "validation accuracy")
	require.Contains(t, out, "(30 validation images)")
	require.NotContains(t, out, "test")
	code, out, errOut = runCmd(args...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "(80 training, 10 test images)")
	require.Regexp(t, `epoch 1/1 .* test \d`, errOut)
	require.Contains(t, out, "test accuracy")
	require.NotContains(t, out, "validation")
	code, out, errOut = runCmd(append(args, "--quiet", "--json")...)
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, decodeOne(t, out), "validation")
}

// TestValHoldsOutTheDataSeedsSplit: the images --val holds out (through
// datasets.Options.Sizes.Validation) are those Dataset.Split chooses with
// --data-seed from the training set after --train-limit, the rest the
// training set, and another data seed holds out others.
func TestValHoldsOutTheDataSeedsSplit(t *testing.T) {
	ctx := context.Background()
	open := func(seed uint64) *datasets.Data {
		f := trainFlags{val: 30}
		f.data = dataFlags{seed: seed, trainLimit: 80, testLimit: 10}
		data, err := f.openData(ctx, datasets.SyntheticName)
		require.NoError(t, err)
		require.Nil(t, data.Validation)
		return data
	}
	for _, seed := range []uint64{1, 3} {
		got := open(seed)
		all, err := (&dataFlags{seed: seed, trainLimit: 80, testLimit: 10}).open(ctx, datasets.SyntheticName)
		require.NoError(t, err)
		tr, va, err := all.Train.Split(30, seed)
		require.NoError(t, err)
		require.Equal(t, va.X, got.Test.X, "seed %d: held-out images", seed)
		require.Equal(t, va.Y, got.Test.Y, "seed %d: held-out labels", seed)
		require.Equal(t, tr.X, got.Train.X, "seed %d: training images", seed)
		require.Equal(t, tr.Y, got.Train.Y, "seed %d: training labels", seed)
	}
	require.NotEqual(t, open(1).Test.X, open(2).Test.X, "data seeds 1 and 2 held out the same images")
	// Too many is a usage error naming --val.
	f := trainFlags{val: 80}
	f.data = dataFlags{seed: 1, trainLimit: 80, testLimit: 10}
	_, err := f.openData(ctx, datasets.SyntheticName)
	require.ErrorContains(t, err, "--val: ")
	require.ErrorContains(t, err, datasets.ErrValidationSize.Error())
	require.NotErrorAs(t, err, new(runtimeError))
}

// TestResumeFlags: the hint after an interrupted run is a shell command
// naming --checkpoint, --resume and the data flags set on the command line,
// --val among them, and no others, each value one shell word.
func TestResumeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--checkpoint", "run.ckpt"}, "deq train --checkpoint run.ckpt --resume"},
		{[]string{"--checkpoint", "c", "--hidden", "8", "--epochs", "3"}, "deq train --checkpoint c --resume"},
		{[]string{"--checkpoint", "c", "--data", "synthetic", "--train-limit", "80", "--val", "30", "--hidden", "8"}, "deq train --checkpoint c --resume --data synthetic --train-limit 80 --val 30"},
		{[]string{"--checkpoint", "my run.ckpt", "--data", "my digits", "--data-seed", "4", "--test-limit", "10"}, "deq train --checkpoint 'my run.ckpt' --resume --data 'my digits' --data-seed 4 --test-limit 10"},
		{[]string{"--checkpoint", "c", "--data", `it's $HOME\`}, `deq train --checkpoint c --resume --data 'it'\''s $HOME\'`},
	} {
		cmd := newTrainCmd()
		require.NoError(t, cmd.Flags().Parse(tc.args))
		require.Equal(t, tc.want, resumeFlags(cmd.Flags()), "%v", tc.args)
	}
}
