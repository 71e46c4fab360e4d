package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/deqgo/deq/cmd/deq/internal/plots"
	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/train"
)

func newTrainCmd() *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "train [flags]",
		Short: "Train an encoder → DEQ → readout classifier and report test accuracy and certificates",
		Long: `Train builds a classifier whose hidden layer is a deep equilibrium (DEQ) layer:
images are standardised, encoded (by a ReLU layer; for --cell conv by
--encoder-layers convolution blocks, the first of stride 2, ending in
GroupNorm or, without groups, ReLU), mapped to the fixed point
z* = f(z*, e) of a Lipschitz-constrained cell found by --solver, and
classified by a readout (linear, or with --readout-hidden one hidden ReLU
layer). Gradients pass through z* in --backward mode (by default implicit
differentiation, an adjoint solve; for --cell conv the one-step
Jacobian-free gradient, TorchDEQ's default, which skips that solve).
After every epoch the test set is evaluated with the evaluation solver
(--eval-solver, by default --solver with a tolerance ten times tighter).

Every forward solve returns a residual certificate: a bound on ‖f(z) − z‖ in
--norm. Every cell is a finite sum of its terms, so the certificate is exact
(one full evaluation of the cell at the returned point), for every solver,
VR-GHAL on a sampled cell included. The summary reports the largest and mean
bound and the fraction of batches whose bound met --tol. --tol is absolute
unless --tol-relative makes it relative to each solve's first residual.

Cells (--cell): dense, σ(zW + eU + b); the stochastic meanfield,
eU + b + (1/M) Σ_m v_m σ(w_mᵀz + c_m) over M = --units hidden units, and
experts, eU + b + (1/M) Σ_m σ(zW_m + c_m) over M = --terms dense experts,
whose injection eU + b is computed once per batch and whose average VR-GHAL
samples; conv, a convolutional cell. The retired wide and mixture cells
(which put the input inside the sampled average) are refused, and so are
their checkpoints. Per epoch the metrics report fwd_term_evals_mean and
bwd_term_evals_mean (term evaluations per batch: one term on the whole
batch; an exact call or VJP counts M, a sampled one its sample size, the
forward certificate included) and, for a stochastic cell, term_rel_var, the
single-term relative variance σ²/‖z*‖² at the first test batch's fixed
points, which decides whether sampling can pay.

Training aids (all off by default; see go doc train.AidsConfig):
  --jac-weight W [--jac-freq F]  Jacobian regularisation, from "Stabilizing
      Equilibrium Models by Jacobian Regularization" by Shaojie Bai, Vladlen
      Koltun and J. Zico Kolter (ICML 2021): every F-th step adds W·R to the
      loss, R a one-probe Hutchinson estimate of the mean ‖∂f/∂z‖_F² at z*,
      with its exact gradient (through the parameters, the encoder and z*).
      Dense cell only. Metric jac_frob_mean.
  --correction-states K [--correction-gamma γ]  fixed-point correction, from
      "Deep Equilibrium Optical Flow Estimation" by Shaojie Bai, Zhengyang
      Geng, Yash Savani and J. Zico Kolter (CVPR 2022): the loss is also
      applied to f(z_k) at K states of the forward trajectory (the last z*),
      weighted γ^(K−1−k) normalised to sum to one, each with a one-step
      gradient. Metric correction_loss.
  --dropout P  DEQ dropout, from "Deep Equilibrium Models" by Shaojie Bai,
      J. Zico Kolter and Vladlen Koltun (NeurIPS 2019): one mask per batch,
      fixed across the solver's iterations so that the fixed point is defined
      (a deterministic map, unlike a stochastic cell's sampled oracle, which
      redraws its terms at every call), off at evaluation. It scales γ̄ by
      1/(1 − P): GHAL and VR-GHAL are refused when that exceeds 1.
  --normalization project|weight|spectral  how the dense or conv cell keeps
      its recurrent weight in check: the Lipschitz projection (default,
      proven γ̄); weight normalisation, from "Weight Normalization: A Simple
      Reparameterization to Accelerate Training of Deep Neural Networks" by
      Tim Salimans and Diederik P. Kingma (NeurIPS 2016), per output unit
      (dense) or output channel (conv), which proves no bound (GHAL and
      VR-GHAL, which need γ̄, are refused); or, dense cell only, spectral
      normalisation, from "Spectral Normalization for Generative Adversarial
      Networks" by Takeru Miyato, Toshiki Kataoka, Masanori Koyama and Yuichi
      Yoshida (ICLR 2018), exact, proven γ̄ in l2.
After every epoch the spectral radius ρ and norm ‖J‖₂ of ∂f/∂z at the fixed
points of the first 32 test images are measured (Arnoldi and power
iteration) and shown beside the declared γ̄ (metrics spectral_radius and
spectral_norm, the plot spectral.png, and deq eval).

--checkpoint F writes F after every epoch (atomically, with a checksum);
--resume continues the run saved in F exactly, bit for bit, with the
configuration and the data flags stored there (--data, --data-seed,
--train-limit, --test-limit and --val; flags that contradict them are
refused). --resume --epochs N with N above the stored number of epochs
extends the run, finished or not: the learning-rate schedule is re-planned
over the N epochs from the checkpoint's position on, the rate of every later
batch being the one a run planned for N epochs gives at that position (the
cosine rate of a finished E-epoch run restarts at lr·(1 + cos(πE/N))/2 and
anneals to zero at epoch N; the step schedule's drops move to N/2 and 3N/4;
a constant rate is unchanged). SIGINT or SIGTERM stops after the current
batch, saves the checkpoint and exits with status 130.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	fl := cmd.Flags()
	f.data.bind(fl, "(default: fashion-mnist if installed, else synthetic; with --resume: the checkpoint's)", true)
	f.bindConfig(fl)
	fl.IntVar(&f.val, "val", 0, "hold out N training images, chosen by --data-seed, and evaluate on them instead of the test set (for choosing settings without the test set; 0: off)")
	fl.StringVar(&f.metrics, "metrics", "", "write one JSON line per epoch to FILE (appended to with --resume)")
	fl.StringVar(&f.checkpoint, "checkpoint", "", "write the checkpoint FILE after every epoch and on interrupt")
	fl.BoolVar(&f.resume, "resume", false, "continue the run saved in --checkpoint with its stored configuration and data flags (--epochs N above the stored number extends it)")
	fl.StringVar(&f.plot, "plot", "", "write loss, accuracy and residual plots (PNG) into DIR")
	fl.BoolVar(&f.json, "json", false, "print the final summary as one JSON object")
	fl.BoolVar(&f.quiet, "quiet", false, "print no progress on standard error")
	fl.BoolVar(&f.progressFlag, "progress", false, "draw a progress bar even when standard error is not a terminal")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the training (data loading excluded) to FILE, for go tool pprof")
	return cmd
}

// openData opens spec with --val training images held out by datasets.Open
// (Options.Sizes.Validation, chosen by the data seed) and, when --val is
// positive, puts them in place of the test set: the run evaluates on them.
func (f *trainFlags) openData(ctx context.Context, spec string) (*datasets.Data, error) {
	if f.val < 0 {
		return nil, usagef("--val = %d must not be negative", f.val)
	}
	f.data.validation = f.val
	data, err := f.data.open(ctx, spec)
	if errors.Is(err, datasets.ErrValidationSize) {
		return nil, usagef("--val: %v", err)
	}
	if err != nil {
		return nil, err
	}
	if data.Validation != nil {
		data.Test, data.Validation = data.Validation, nil
	}
	return data, nil
}

// interruptedError reports a command stopped by a signal after it wrote
// what it could (exit status 130).
type interruptedError struct{ err error }

func (e interruptedError) Error() string { return e.err.Error() }
func (e interruptedError) Unwrap() error { return e.err }

// dataDefaults returns cfg with the augmentation that depends on the data
// set spec (train.DataAugment) where its flags were not given: on
// Fashion-MNIST the conv cell mirrors its training images at random.
func dataDefaults(cfg train.Config, spec string, changed func(string) bool) train.Config {
	if !changed("flip") {
		cfg.Augment.Flip = train.DataAugment(cfg.Model.Cell, spec).Flip
	}
	return cfg
}

// run executes `deq train`.
func (f *trainFlags) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	cfg, err := f.config(cmd.Flags().Changed)
	if err != nil {
		return err
	}
	if err := f.checkOutputs(); err != nil {
		return err
	}
	prof, err := createProfile(f.cpuProfile)
	if err != nil {
		return runtimeError{err}
	}
	defer prof.close()
	if f.resume && f.checkpoint == "" {
		return usagef("--resume needs --checkpoint")
	}
	var ck *train.Checkpoint
	if f.resume {
		if ck, err = train.Load(f.checkpoint); err != nil {
			return usagef("--resume: %v", err)
		}
		// A mode's settings given for a run of another mode are named as
		// such before any contradiction with the stored values.
		if err := checkModeFlags(ck.Config.Backward.Mode, "the checkpoint's", cmd.Flags().Changed); err != nil {
			return err
		}
		if err := f.checkResume(cfg, ck.Config, cmd.Flags().Changed); err != nil {
			return err
		}
		if cmd.Flags().Changed("epochs") {
			ck.Config.Epochs = cfg.Epochs // an extension: checkResume refuses fewer
		}
		cfg = ck.Config
		if err := f.restoreData(ck.Source, cmd.Flags().Changed); err != nil {
			return err
		}
	}
	spec := f.data.spec
	if spec == "" {
		spec = defaultData()
		if ck != nil && dataOf(ck.TestSet) != "" {
			spec = dataOf(ck.TestSet)
		}
	}
	data, err := f.openData(ctx, spec)
	if err != nil {
		return err
	}
	if ck == nil {
		cfg = dataDefaults(cfg, spec, cmd.Flags().Changed)
	}
	lg := newProgress(stderr, f.quiet, f.progressFlag)
	lg.validation = f.val > 0
	var metricsFile *os.File // opened once the trainer accepts the data
	var metricsErr error
	warned := false   // the loss-growth warning was printed
	var gamma float64 // the cell's declared bound, once the trainer exists
	opts := &train.Options{
		Checkpoint: f.checkpoint,
		OnBatch:    lg.batch,
		OnEpoch: func(e *train.EpochMetrics) {
			lg.epoch(e, cfg.Epochs, gamma)
			if e.LossGrowth > 0 && !warned {
				// Once per run, even with --quiet; the run goes on.
				warned = true
				fmt.Fprintln(stderr, oneLine(lossGrowthWarning(e, cfg.LR)))
			}
			if metricsFile != nil && metricsErr == nil {
				b, err := json.Marshal(e)
				if err == nil {
					_, err = fmt.Fprintf(metricsFile, "%s\n", b)
				}
				metricsErr = err
			}
		},
		Logf:   lg.logf,
		Source: f.source(spec),
	}
	var tr *train.Trainer
	if ck != nil {
		tr, err = ck.Resume(data.Train, data.Test, opts)
		if errors.Is(err, train.ErrDataMismatch) {
			return usagef("--resume: %v (pass the run's --data, --train-limit, --test-limit, --data-seed and --val)", err)
		}
	} else {
		tr, err = train.New(cfg, data.Train, data.Test, opts)
		var fe *train.FieldError
		if errors.As(err, &fe) && f.flagOf(fe.Field) != "" {
			return f.fieldUsage(fe)
		}
	}
	if err != nil {
		return runtimeError{err}
	}
	if f.metrics != "" {
		mode := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if f.resume {
			mode = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		if metricsFile, err = os.OpenFile(f.metrics, mode, 0o644); err != nil {
			return runtimeError{err}
		}
		defer metricsFile.Close()
	}
	gamma = tr.Model().Cell().Gamma()
	lg.start(tr, data)
	if err := prof.start(); err != nil {
		return runtimeError{err}
	}
	start := time.Now()
	res, err := tr.Run(ctx)
	profErr := prof.stop()
	lg.finish()
	wall := time.Since(start)
	if err != nil && res != nil && res.Interrupted {
		where := ""
		if f.checkpoint != "" {
			where = "; checkpoint saved to " + f.checkpoint + " (continue with: " + resumeFlags(cmd.Flags()) + ")"
		}
		return interruptedError{fmt.Errorf("train: interrupted at epoch %d batch %d%s", res.Epoch+1, res.Batch, where)}
	}
	if err != nil {
		return runtimeError{err}
	}
	if metricsErr != nil {
		return runtimeError{fmt.Errorf("--metrics: %w", metricsErr)}
	}
	if f.plot != "" {
		if _, err := plots.WriteTraining(f.plot, res.Epochs, cfg.Forward.Tol, tr.Model().Cell().Gamma()); err != nil {
			return runtimeError{err}
		}
	}
	sum := summarize(data, tr, res, wall)
	sum.Validation = f.val > 0
	if f.json {
		b, err := json.Marshal(sum)
		if err != nil {
			return runtimeError{err}
		}
		if _, err = fmt.Fprintf(stdout, "%s\n", b); err != nil {
			return err
		}
	} else if err := sum.write(stdout); err != nil {
		return err
	}
	if profErr != nil {
		return runtimeError{profErr}
	}
	return nil
}

// lossGrowthWarning is the warning of an epoch whose training loss grew
// by orders of magnitude (train.EpochMetrics.LossGrowth).
func lossGrowthWarning(e *train.EpochMetrics, lr float64) string {
	return fmt.Sprintf("warning: epoch %d's mean training loss %.3g is %.3g times the reference loss (the first epoch's or ln(classes), the smaller; warned above %d times): the loss grows by orders of magnitude; a smaller --lr than %g may help",
		e.Epoch, e.TrainLoss, e.LossGrowth, train.LossGrowthFactor, lr)
}

// checkOutputs refuses, before any work, an output path of the flags
// that cannot be written: --checkpoint, --metrics and --cpuprofile files
// and the --plot directory.
func (f *trainFlags) checkOutputs() error {
	for _, o := range []struct{ flag, path string }{
		{"checkpoint", f.checkpoint}, {"metrics", f.metrics}, {"cpuprofile", f.cpuProfile},
	} {
		if err := checkOutputFile(o.flag, o.path); err != nil {
			return err
		}
	}
	if f.checkpoint != "" {
		// Save writes a temporary file beside the checkpoint and renames
		// it: the directory must be writable too.
		if err := checkWritableDir("checkpoint", f.checkpoint, filepath.Dir(f.checkpoint)); err != nil {
			return err
		}
	}
	return checkOutputDir("plot", f.plot)
}
