package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
)

// writeIDXDir writes the four StandardFiles of a data set of n training
// and n test images of rows×cols pixels, labels cycling through classes,
// into a new directory and returns it.
func writeIDXDir(t *testing.T, n, rows, cols, classes int) string {
	t.Helper()
	dir := t.TempDir()
	for i, name := range datasets.StandardFiles {
		var b bytes.Buffer
		put := func(v uint32) { require.NoError(t, binary.Write(&b, binary.BigEndian, v)) }
		if i%2 == 0 {
			put(datasets.MagicImages)
			put(uint32(n))
			put(uint32(rows))
			put(uint32(cols))
			for k := range n * rows * cols {
				b.WriteByte(byte(k * 37))
			}
		} else {
			put(datasets.MagicLabels)
			put(uint32(n))
			for k := range n {
				b.WriteByte(byte(k % classes))
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644))
	}
	return dir
}

// goField matches a Go field path of the library's configuration types.
var goField = regexp.MustCompile(`\b(Config|Options|Settings|Forward|Backward|Model|Aids|Eval|Augment|Download|Sizes)\.[A-Z]`)

// TestRefusalsNameTheFlag runs the command over bad inputs, flag values
// and combinations that only the data, the file system or the checkpoint
// reveal among them: each exits with status 2 and one line naming the
// flag, before any work (no output file appears).
func TestRefusalsNameTheFlag(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "run.ckpt")
	code, out, errOut := runCmd(tinyTrain(dir, "--epochs", "1", "--json")...)
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut, "a run whose loss does not grow warns of nothing")
	sum := decodeOne(t, out)
	require.NotContains(t, sum, "loss_growth")
	require.NotContains(t, sum, "warnings")

	file := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	missing := filepath.Join(dir, "no-such-dir")
	other := writeIDXDir(t, 20, 28, 28, 10) // digits' shape, another name
	small := writeIDXDir(t, 20, 8, 8, 10)   // another image size
	empty := t.TempDir()                    // no IDX files
	broken := writeIDXDir(t, 20, 28, 28, 10)
	require.NoError(t, os.Truncate(filepath.Join(broken, datasets.StandardFiles[0]), 100))
	train := func(extra ...string) []string {
		return append([]string{"train", "--data", "synthetic", "--train-limit", "384", "--test-limit", "10", "--quiet",
			"--hidden", "8", "--epochs", "1", "--metrics", filepath.Join(dir, "m.jsonl")}, extra...)
	}
	for _, tc := range []struct {
		args []string
		want []string // substrings of the one line
	}{
		// Only the data reveal that the batch exceeds them.
		{train("--batch", "5000"), []string{"--batch = 5000", "384 training images"}},
		{train("--val", "300", "--batch", "128"), []string{"--batch = 128", "84 training images"}},
		// Output paths, checked before the data are loaded.
		{train("--checkpoint", filepath.Join(missing, "run.ckpt")), []string{"--checkpoint", "does not exist"}},
		{train("--checkpoint", dir), []string{"--checkpoint", "is a directory"}},
		{train("--checkpoint", filepath.Join(file, "run.ckpt")), []string{"--checkpoint", "not a directory"}},
		{train("--metrics", filepath.Join(missing, "m.jsonl")), []string{"--metrics", "does not exist"}},
		{train("--metrics", dir), []string{"--metrics", "is a directory"}},
		{train("--plot", file), []string{"--plot", "not a directory"}},
		{train("--plot", filepath.Join(file, "plots")), []string{"--plot", "not a directory"}},
		{train("--cpuprofile", filepath.Join(missing, "cpu.prof")), []string{"--cpuprofile", "does not exist"}},
		{train("--cpuprofile", dir), []string{"--cpuprofile", "is a directory"}},
		{[]string{"bench", "--out", file}, []string{"--out", "not a directory"}},
		{[]string{"bench", "--out", filepath.Join(file, "sub")}, []string{"--out", "not a directory"}},
		{[]string{"bench", "--out", dir, "--markdown", filepath.Join(file, "B.md")}, []string{"--markdown", "not a directory"}},
		{[]string{"bench", "--out", dir, "--markdown", dir}, []string{"--markdown", "is a directory"}},
		// A reason that names another field names its flag.
		{train("--dropout", "0.5", "--solver", "vrghal", "--batch", "64"), []string{"--dropout = 0.5", "--solver = vrghal"}},
		{train("--jac-freq", "2"), []string{"--jac-freq = 2", "positive --jac-weight"}},
		{train("--normalization", "weight", "--eval-solver", "ghal", "--batch", "64"), []string{"--normalization = weight", "--eval-solver = ghal"}},
		// A --data directory that cannot be served.
		{train("--data", empty), []string{"--data " + empty, "no train-images-idx3-ubyte"}},
		{train("--data", broken), []string{"--data " + broken, "truncated"}},
		{[]string{"eval", "--checkpoint", ck, "--data", empty}, []string{"--data " + empty}},
		// deq eval on other data than the checkpoint's.
		{[]string{"eval", "--checkpoint", ck, "--data", other}, []string{"--data " + other, "synthetic", "--force"}},
		{[]string{"eval", "--checkpoint", ck, "--data", small}, []string{"--data " + small, "8×8", "784 pixels"}},
		{[]string{"eval", "--checkpoint", ck, "--data", small, "--force"}, []string{"--data", "--force cannot"}},
		{[]string{"eval", "--checkpoint", ck, "--batch", "-1"}, []string{"--batch"}},
		{[]string{"eval", "--checkpoint", file}, []string{"--checkpoint"}},
	} {
		requireUsageError(t, tc.args, tc.want[0])
		_, _, errOut := runCmd(tc.args...)
		for _, w := range tc.want[1:] {
			require.Contains(t, errOut, w, tc.args)
		}
		require.NotRegexp(t, goField, errOut, "a flag, not a Go field")
		require.NoFileExists(t, filepath.Join(dir, "m.jsonl"), "refused before the work: %v", tc.args)
	}
}

// TestEvalRefusesOtherData: deq eval refuses a test set of another name
// than the checkpoint's run unless --force, which evaluates it with a
// warning on standard error and in the JSON report; one of another image
// size is refused even with --force; the run's own data need neither.
func TestEvalRefusesOtherData(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "run.ckpt")
	code, _, errOut := runCmd(tinyTrain(dir, "--epochs", "1")...)
	require.Equal(t, 0, code, errOut)
	other := writeIDXDir(t, 20, 28, 28, 10)
	requireUsageError(t, []string{"eval", "--checkpoint", ck, "--data", other}, "--force")
	requireUsageError(t, []string{"eval", "--checkpoint", ck, "--data", writeIDXDir(t, 20, 8, 8, 10), "--force"}, "--data")

	// --force evaluates a set of another name, with a warning on standard
	// error and in the JSON report.
	code, out, errOut := runCmd("eval", "--checkpoint", ck, "--data", other, "--force", "--json")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	require.Contains(t, errOut, "deq: warning: evaluating on "+other+" a model trained on synthetic (--force)")
	ev := decodeOne(t, out)
	require.Equal(t, 20.0, ev["examples"])
	require.Contains(t, ev["data_warning"], "--force")
	// The run's own data need no --force and get no warning.
	code, out, errOut = runCmd("eval", "--checkpoint", ck, "--data", "synthetic", "--test-limit", "20", "--json")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut)
	require.NotContains(t, decodeOne(t, out), "data_warning")
}

// TestCheckpointDirectoryCheckedFirst: a --checkpoint in a directory that
// does not exist is refused before the first epoch, naming the flag.
func TestCheckpointDirectoryCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, "m.jsonl")
	args := tinyTrain(dir, "--metrics", metrics, "--checkpoint", filepath.Join(dir, "missing", "run.ckpt"))
	requireUsageError(t, args, "--checkpoint "+filepath.Join(dir, "missing", "run.ckpt")+": directory")
	require.NoFileExists(t, metrics, "no epoch ran")
}

// TestMissingDataSetNamesDownload: a named data set that is not installed
// is a usage error naming --data and --download, not the library's
// Options.Download.Enabled.
func TestMissingDataSetNamesDownload(t *testing.T) {
	if _, err := os.Stat(filepath.Join(datasets.DefaultSystemDir, datasets.MNIST10k)); err == nil {
		t.Skip("mnist-10k is installed system-wide")
	}
	t.Setenv(datasets.CacheDirEnv, t.TempDir())
	dir := t.TempDir()
	code, _, errOut := runCmd(tinyTrain(dir, "--epochs", "1")...)
	require.Equal(t, 0, code, errOut)
	for _, args := range [][]string{
		{"train", "--data", datasets.MNIST10k, "--quiet"},
		{"eval", "--checkpoint", filepath.Join(dir, "run.ckpt"), "--data", datasets.MNIST10k},
	} {
		requireUsageError(t, args, "--data "+datasets.MNIST10k+": not installed")
		_, _, errOut := runCmd(args...)
		require.Contains(t, errOut, "--download")
		require.NotRegexp(t, goField, errOut)
	}
}

// TestHelpPrintsOneDefault: no flag's help states two defaults (its own
// text and pflag's "(default …)").
func TestHelpPrintsOneDefault(t *testing.T) {
	for _, sub := range []string{"train", "eval", "solve", "bench"} {
		code, out, errOut := runCmd(sub, "--help")
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "Flags:")
		for _, line := range strings.Split(out, "\n") {
			require.LessOrEqual(t, strings.Count(line, "(default"), 1, "deq %s: %s", sub, line)
		}
	}
	_, out, _ := runCmd("train", "--help")
	require.Contains(t, out, "--cell conv: Fourier bound every N, 100 when not given (default 1)")
}

// TestTrainWarnsOnLossGrowth: a learning rate far too large makes the loss
// grow by orders of magnitude; the run goes on to its end (exit 0) and
// says so once on standard error, --quiet or not, in the JSON summary and
// in the metrics.
func TestTrainWarnsOnLossGrowth(t *testing.T) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, "m.jsonl")
	code, out, errOut := runCmd(tinyTrain(dir, "--lr", "100", "--json", "--metrics", metrics)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	require.True(t, strings.HasPrefix(errOut, "deq: warning: epoch 1's mean training loss"), errOut)
	require.Contains(t, errOut, "--lr")
	sum := decodeOne(t, out)
	require.Greater(t, sum["loss_growth"], 100.0)
	require.Len(t, sum["warnings"], 1)
	require.Equal(t, 2.0, sum["epochs"], "the run is not stopped")
	b, err := os.ReadFile(metrics)
	require.NoError(t, err)
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		require.Greater(t, m["loss_growth"], 100.0, "epoch %d", i+1)
	}
}

func TestTrainUsageErrors(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "run.ckpt")
	code, _, errOut := runCmd(tinyTrain(dir, "--epochs", "1")...)
	require.Equal(t, 0, code, errOut)
	base := func(extra ...string) []string {
		return append([]string{"train", "--data", "synthetic", "--train-limit", "64", "--test-limit", "10", "--quiet"}, extra...)
	}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{base("--cell", "convolution"), "--cell"},
		{base("--solver", "newton"), "--solver"},
		{base("--backward", "unrolled"), "--backward"},
		{base("--backward-solver", "x"), "--backward-solver"},
		{base("--eval-solver", "x"), "--eval-solver"},
		{base("--norm", "l1"), "--norm"},
		{base("--norm", "schatten:1"), "--norm"},
		{base("--activation", "gelu"), "--activation"},
		{base("--schedule", "linear"), "--schedule"},
		{base("--normalize", "minmax"), "--normalize"},
		{base("--hidden", "0"), "--hidden"},
		{base("--gamma", "1"), "--gamma"},
		{base("--gamma", "0"), "--gamma"},
		{base("--tol", "0"), "--tol"},
		{base("--tol", "NaN"), "--tol"},
		{base("--delta", "1"), "--delta"},
		{base("--cert-delta", "1"), "--cert-delta"},
		{base("--cert-delta", "-0.1"), "--cert-delta"},
		{base("--epochs", "0"), "--epochs"},
		{base("--batch", "-3"), "--batch"},
		{base("--lr", "-1"), "--lr"},
		{base("--clip-norm", "-1"), "--clip-norm"},
		{base("--weight-decay", "-1"), "--weight-decay"},
		{base("--train-limit", "-1"), "--train-limit"},
		{base("--shift", "-1"), "--shift"},
		{base("--shift", "28", "--hidden", "8", "--batch", "16"), "--shift"},
		{base("--rotate", "-1"), "--rotate"},
		{base("--rotate", "NaN"), "--rotate"},
		{base("--rotate", "180", "--hidden", "8", "--batch", "16"), "--rotate"},
		{base("--scale", "-0.1"), "--scale"},
		{base("--scale", "1", "--hidden", "8", "--batch", "16"), "--scale"},
		{base("--val", "-1"), "--val"},
		{base("--val", "64"), "--val"},
		{base("--cell", "wide"), "replaced by \"meanfield\""},
		{base("--cell", "mixture"), "replaced by \"experts\""},
		{base("--terms", "3"), "--terms"},
		{base("--cell", "experts", "--units", "3"), "--units"},
		{base("--cell", "meanfield", "--terms", "3"), "--terms"},
		{base("--sample-scale", "0.1"), "--sample-scale"},
		{base("--channels", "8"), "--channels"},
		{base("--groups", "2"), "--groups"},
		{base("--cell", "meanfield", "--kernels", "2"), "--kernels"},
		{base("--cell", "conv", "--hidden", "32"), "--hidden"},
		{base("--cell", "conv", "--encoder", "32"), "--encoder"},
		{base("--cell", "conv", "--groups", "5"), "--groups"},
		{base("--cell", "conv", "--channels", "4", "--groups", "2", "--solver", "vrghal"), "--solver"},
		{base("--cell", "conv", "--channels", "4", "--norm", "linf", "--eval-solver", "vrghal"), "--eval-solver"},
		// An explicit float32 is kept, and VR-GHAL refuses its unproven
		// bound (the default would be float64).
		{base("--cell", "conv", "--channels", "4", "--groups", "-1", "--precision", "float32", "--backward", "implicit", "--backward-solver", "vrghal"), "--backward-solver"},
		// Settings of a backward mode the run does not use are refused:
		// the conv default makes no adjoint solve.
		{base("--cell", "conv", "--channels", "4", "--backward-solver", "anderson"), "--backward-solver applies to --backward implicit only (this run's mode is jacobian-free)"},
		{base("--cell", "conv", "--channels", "4", "--backward-tol", "1e-4"), "--backward-tol applies"},
		{base("--backward", "phantom", "--backward-max-iter", "5"), "--backward-max-iter applies"},
		{base("--backward", "implicit", "--phantom-steps", "3"), "--phantom-steps applies to --backward phantom only"},
		{base("--jac-weight", "-1"), "--jac-weight"},
		{base("--jac-weight", "0.1", "--cell", "meanfield", "--batch", "32"), "--jac-weight"},
		{base("--jac-weight", "0.1", "--cell", "conv", "--channels", "2", "--batch", "32"), "--jac-weight"},
		{base("--jac-freq", "2"), "--jac-freq"},
		{base("--correction-states", "-1"), "--correction-states"},
		{base("--correction-gamma", "0.5"), "--correction-gamma"},
		{base("--correction-states", "2", "--correction-gamma", "1.5"), "--correction-gamma"},
		{base("--dropout", "1"), "--dropout"},
		{base("--dropout", "0.2", "--solver", "ghal", "--batch", "32"), "--dropout"},
		{base("--normalization", "batch"), "--normalization"},
		{base("--precision", "float16"), "--precision"},
		{base("--precision", "float32", "--cell", "meanfield"), "--precision"},
		{base("--normalization", "weight", "--cell", "experts"), "--normalization"},
		{base("--normalization", "spectral", "--cell", "conv"), "--normalization"},
		{base("--normalization", "weight", "--cell", "conv", "--channels", "2", "--solver", "vrghal", "--batch", "32"), "--normalization"},
		{base("--normalization", "weight", "--solver", "ghal", "--batch", "32"), "--normalization"},
		{base("--normalization", "weight", "--eval-solver", "vrghal", "--batch", "32"), "--normalization"},
		{base("--data", "/no/such/dir"), "--data"},
		{base("--resume"), "--resume"},
		{base("--resume", "--checkpoint", filepath.Join(dir, "missing.ckpt")), "--resume"},
		{base("--resume", "--checkpoint", ck, "--hidden", "99"), "--hidden"},
		{base("--resume", "--checkpoint", ck, "--solver", "anderson"), "--solver"},
		{base("--resume", "--checkpoint", ck, "--rotate", "5"), "--rotate"},
		{[]string{"train", "--bogus"}, "--bogus"},
		{[]string{"eval"}, "--checkpoint"},
		{[]string{"eval", "--checkpoint", filepath.Join(dir, "missing.ckpt")}, "--checkpoint"},
		{[]string{"eval", "--checkpoint", ck, "--solver", "x"}, "--solver"},
		{[]string{"eval", "--checkpoint", ck, "--tol", "-1"}, "--tol"},
		{[]string{"eval", "--checkpoint", ck, "--delta", "2"}, "--delta"},
	} {
		requireUsageError(t, tc.args, tc.flag)
	}
	// A damaged checkpoint is refused by name.
	b, err := os.ReadFile(ck)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(ck, b[:len(b)/2], 0o644))
	code, _, errOut = runCmd("eval", "--checkpoint", ck)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "truncated checkpoint")
	// Resuming on other data is refused.
	code, _, errOut = runCmd(tinyTrain(dir, "--epochs", "1")...)
	require.Equal(t, 0, code, errOut)
	requireUsageError(t, tinyTrain(dir, "--epochs", "1", "--resume", "--train-limit", "320"), "--train-limit = 320 contradicts the checkpoint's 384")
	requireUsageError(t, tinyTrain(dir, "--epochs", "1", "--resume", "--data", "mnist"), "--data = mnist contradicts the checkpoint's synthetic")
	requireUsageError(t, tinyTrain(dir, "--epochs", "1", "--resume", "--data-seed", "2"), "--data-seed = 2 contradicts")
	requireUsageError(t, tinyTrain(dir, "--epochs", "1", "--resume", "--val", "10"), "--val = 10 contradicts the checkpoint's 0")
}
