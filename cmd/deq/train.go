package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/blasimpl"
	"github.com/deqgo/deq/internal/plots"
	"github.com/deqgo/deq/train"
)

func newTrainCmd() *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "train [flags]",
		Short: "Train an encoder → DEQ → readout classifier and report test accuracy and certificates",
		Long: `Train builds a classifier whose hidden layer is a deep equilibrium (DEQ) layer:
images are standardised, encoded by a ReLU layer, mapped to the fixed point
z* = f(z*, e) of a Lipschitz-constrained cell found by --solver, and
classified by a linear readout. Gradients pass through z* in --backward mode.
After every epoch the test set is evaluated with the evaluation solver
(--eval-solver, by default --solver with a tolerance ten times tighter).

Every forward solve returns a residual certificate: a bound on ‖f(z) − z‖ in
--norm. Every cell is a finite sum of its terms, so the certificate is exact
(one full evaluation of the cell at the returned point), for every solver,
VR-GHAL on a sampled cell included. The summary reports the largest and mean
bound and the fraction of batches whose bound met --tol.

--checkpoint F writes F after every epoch (atomically, with a checksum);
--resume continues the run saved in F exactly, with the configuration stored
there (flags that contradict it are refused). SIGINT or SIGTERM stops after
the current batch, saves the checkpoint and exits with status 130.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd)
		},
	}
	fl := cmd.Flags()
	f.data.bind(fl, "(default: fashion-mnist if installed, else synthetic; with --resume: the checkpoint's)", true)
	f.bindConfig(fl)
	fl.StringVar(&f.metrics, "metrics", "", "write one JSON line per epoch to FILE (appended to with --resume)")
	fl.StringVar(&f.checkpoint, "checkpoint", "", "write the checkpoint FILE after every epoch and on interrupt")
	fl.BoolVar(&f.resume, "resume", false, "continue the run saved in --checkpoint")
	fl.StringVar(&f.plot, "plot", "", "write loss, accuracy and residual plots (PNG) into DIR")
	fl.BoolVar(&f.json, "json", false, "print the final summary as one JSON object")
	fl.BoolVar(&f.quiet, "quiet", false, "print no progress on standard error")
	fl.BoolVar(&f.progressFlag, "progress", false, "draw a progress bar even when standard error is not a terminal")
	return cmd
}

// interruptedError reports a run stopped by a signal after saving its
// state (exit status 130).
type interruptedError struct{ err error }

func (e interruptedError) Error() string { return e.err.Error() }
func (e interruptedError) Unwrap() error { return e.err }

// run executes `deq train`.
func (f *trainFlags) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	cfg, err := f.config(cmd.Flags().Changed)
	if err != nil {
		return err
	}
	if f.resume && f.checkpoint == "" {
		return usagef("--resume needs --checkpoint")
	}
	var ck *train.Checkpoint
	if f.resume {
		if ck, err = train.Load(f.checkpoint); err != nil {
			return usagef("--resume: %v", err)
		}
		if err := f.checkResume(cfg, ck.Config, cmd.Flags().Changed); err != nil {
			return err
		}
		cfg = ck.Config
	}
	spec := f.data.spec
	if spec == "" {
		spec = defaultData()
		if ck != nil && dataOf(ck.TestSet) != "" {
			spec = dataOf(ck.TestSet)
		}
	}
	data, err := f.data.open(ctx, spec)
	if err != nil {
		return err
	}
	lg := newProgress(stderr, f.quiet, f.progressFlag)
	var metricsFile *os.File
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
	var metricsErr error
	opts := &train.Options{
		Checkpoint: f.checkpoint,
		OnBatch:    lg.batch,
		OnEpoch: func(e *train.EpochMetrics) {
			lg.epoch(e, cfg.Epochs)
			if metricsFile != nil && metricsErr == nil {
				b, err := json.Marshal(e)
				if err == nil {
					_, err = fmt.Fprintf(metricsFile, "%s\n", b)
				}
				metricsErr = err
			}
		},
		Logf: lg.logf,
	}
	var tr *train.Trainer
	if ck != nil {
		tr, err = ck.Resume(data.Train, data.Test, opts)
		if errors.Is(err, train.ErrDataMismatch) {
			return usagef("--resume: %v (pass the run's --data, --train-limit, --test-limit and --data-seed)", err)
		}
	} else {
		tr, err = train.New(cfg, data.Train, data.Test, opts)
		var fe *train.FieldError
		if errors.As(err, &fe) && f.flagOf(fe.Field) != "" {
			return usagef("--%s = %v %s", f.flagOf(fe.Field), fe.Value, fe.Reason)
		}
	}
	if err != nil {
		return runtimeError{err}
	}
	lg.start(tr, data)
	start := time.Now()
	res, err := tr.Run(ctx)
	lg.finish()
	wall := time.Since(start)
	if err != nil && res != nil && res.Interrupted {
		where := ""
		if f.checkpoint != "" {
			where = "; checkpoint saved to " + f.checkpoint + " (continue with --resume)"
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
		if _, err := plots.WriteTraining(f.plot, res.Epochs, cfg.Forward.Tol); err != nil {
			return runtimeError{err}
		}
	}
	sum := summarize(data, tr, res, wall)
	if f.json {
		b, err := json.Marshal(sum)
		if err != nil {
			return runtimeError{err}
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	return sum.write(stdout)
}

// trainSummary is the final report of `deq train`.
type trainSummary struct {
	Data      string `json:"data"`
	TrainSize int    `json:"train_size"`
	TestSize  int    `json:"test_size"`
	BLAS      string `json:"blas"`
	Cell      string `json:"cell"`
	Hidden    int    `json:"hidden"`
	// Channels, Groups and Kernels describe the conv cell.
	Channels int `json:"channels,omitempty"`
	Groups   int `json:"groups,omitempty"`
	Kernels  int `json:"kernels,omitempty"`
	// Proven reports whether the cell proves its Lipschitz bound γ̄ in
	// Norm; when it does not, the certificates still bound the residuals,
	// but a contraction is not proven.
	Proven     bool   `json:"proven"`
	Norm       string `json:"norm"`
	Gamma      number `json:"gamma"`
	Params     int    `json:"params"`
	Solver     string `json:"solver"`
	Tol        number `json:"tol"`
	Backward   string `json:"backward"`
	EvalSolver string `json:"eval_solver"`
	EvalTol    number `json:"eval_tol"`
	Epochs     int    `json:"epochs"`
	// Final is the last epoch's metrics line.
	Final train.EpochMetrics `json:"final"`
	// WallSeconds is the time of this process's training; SecondsPerEpoch
	// the mean over the epochs it ran.
	WallSeconds     float64 `json:"wall_seconds"`
	SecondsPerEpoch float64 `json:"seconds_per_epoch"`
}

func summarize(data *datasets.Data, tr *train.Trainer, res *train.Result, wall time.Duration) *trainSummary {
	c := tr.Config()
	s := &trainSummary{
		Data: data.Name, TrainSize: data.Train.Len(), TestSize: data.Test.Len(), BLAS: blasimpl.Name,
		Cell: c.Model.Cell.String(), Hidden: c.Model.Hidden, Norm: c.Model.Norm.String(), Gamma: number(c.Model.Gamma),
		Params: tr.Model().NumParams(), Solver: c.Forward.Method.String(), Tol: number(c.Forward.Tol),
		Backward: c.Backward.Mode.String(), EvalSolver: c.Eval.Method.String(), EvalTol: number(c.Eval.Tol),
		Epochs: len(res.Epochs), WallSeconds: wall.Seconds(), Proven: tr.Model().Proven(),
	}
	if c.Model.Cell == train.ConvCell {
		s.Hidden = tr.Model().Cell().Shape().HiddenLen()
		s.Channels, s.Groups, s.Kernels = c.Model.Channels, c.Model.Groups, c.Model.Kernels
	}
	if c.Backward.Mode == deq.Implicit {
		s.Backward += " (" + c.Backward.Solver.Method.String() + ")"
	}
	if f := res.Final(); f != nil {
		s.Final = *f
	}
	ran := 0
	for _, e := range res.Epochs {
		if e.EpochSeconds > 0 {
			ran++
		}
	}
	if ran > 0 {
		s.SecondsPerEpoch = wall.Seconds() / float64(ran)
	}
	return s
}

func (s *trainSummary) write(w io.Writer) error {
	e := s.Final
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "test accuracy\t%.2f%% (%d test images) after %d epochs; train accuracy %.2f%%, loss %.4f\n",
		100*e.TestAcc, s.TestSize, s.Epochs, 100*e.TrainAcc, e.TrainLoss)
	fmt.Fprintf(tw, "data\t%s: %d training, %d test images; BLAS %s\n", s.Data, s.TrainSize, s.TestSize, s.BLAS)
	proof := "proven"
	if !s.Proven {
		proof = "not proven"
		if s.Groups > 0 {
			proof += " (GroupNorm)"
		}
	}
	conv := ""
	if s.Channels > 0 {
		conv = fmt.Sprintf(" (%d channels, %d GroupNorm groups, %d kernels)", s.Channels, max(s.Groups, 0), s.Kernels)
	}
	fmt.Fprintf(tw, "model\t%s cell%s, %d hidden, γ̄ %g in %s, %s; %d parameters\n", s.Cell, conv, s.Hidden, float64(s.Gamma), s.Norm, proof, s.Params)
	fmt.Fprintf(tw, "forward\t%s, tol %g: %.1f calls, %.1f iterations per batch; %d of %d batches unconverged, %d skipped\n",
		s.Solver, float64(s.Tol), e.FwdCallsMean, e.FwdItersMean, e.Forward.Unconverged, e.Batches, e.Skipped)
	fmt.Fprintf(tw, "certificates\ttraining (last epoch): ‖f(z) − z‖ ≤ %.3g max, %.3g mean; %.1f%% of batches ≤ tol\n",
		e.CertBoundMax, e.CertBoundMean, 100*e.CertMetFrac)
	fmt.Fprintf(tw, "\ttest (%s, tol %g): ‖f(z) − z‖ ≤ %.3g max, %.3g mean; %.1f%% of batches ≤ tol\n",
		s.EvalSolver, float64(s.EvalTol), e.Test.CertBoundMax, e.Test.CertBoundMean, 100*e.Test.CertMetFrac)
	fmt.Fprintf(tw, "backward\t%s: %.1f iterations, %.1f calls per batch\n", s.Backward, e.BwdItersMean, e.BwdCallsMean)
	fmt.Fprintf(tw, "time\t%.1f s, %.1f s per epoch\n", s.WallSeconds, s.SecondsPerEpoch)
	return tw.Flush()
}
