package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/internal/blasimpl"
	"github.com/deqgo/deq/internal/plots"
	"github.com/deqgo/deq/train"
)

// trainFlags are the flags of `deq train`.
type trainFlags struct {
	data, normalize                   string
	dataSeed                          uint64
	trainLimit, testLimit             int
	cell, activation, norm            string
	hidden, encoder, units, terms     int
	gamma                             float64
	exactEvery                        int
	solver                            string
	tol, delta, sampleScale           float64
	maxIter, memory                   int
	backward, backwardSolver          string
	backwardTol                       float64
	backwardMaxIter, phantomSteps     int
	evalSolver                        string
	evalTol                           float64
	evalMaxIter                       int
	epochs, batch, evalBatch          int
	lr, weightDecay, clipNorm         float64
	schedule                          string
	seed                              uint64
	metrics, checkpoint, plot         string
	resume, json, quiet, progressFlag bool
}

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
--norm, exact for deterministic solvers and holding with probability 1 − δ
for VR-GHAL. The summary reports the largest and mean bound and the fraction
of batches whose bound met --tol.

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
	fl.StringVar(&f.data, "data", "", "data: fashion-mnist, mnist, kmnist, mnist-10k, synthetic or a directory of IDX files (default: fashion-mnist if installed, else synthetic; with --resume: the checkpoint's)")
	fl.Uint64Var(&f.dataSeed, "data-seed", 1, "seed of the synthetic digits")
	fl.IntVar(&f.trainLimit, "train-limit", 0, "use only the first N training images (0: all)")
	fl.IntVar(&f.testLimit, "test-limit", 0, "use only the first N test images (0: all)")
	fl.StringVar(&f.normalize, "normalize", "global", "pixel standardisation: global, per-pixel or none")
	fl.StringVar(&f.cell, "cell", "dense", "DEQ cell: dense, wide (stochastic) or mixture (stochastic)")
	fl.IntVar(&f.hidden, "hidden", train.DefaultHidden, "hidden state size")
	fl.IntVar(&f.encoder, "encoder", 0, "encoder features (0: --hidden, for mixture rounded up to a multiple of --terms)")
	fl.IntVar(&f.units, "units", 0, "wide: hidden units M (0: 4·--hidden)")
	fl.IntVar(&f.terms, "terms", 0, fmt.Sprintf("mixture: terms M (0: %d)", train.DefaultTerms))
	fl.StringVar(&f.activation, "activation", "relu", "cell activation: relu or tanh")
	fl.Float64Var(&f.gamma, "gamma", train.DefaultGamma, "Lipschitz bound γ̄ ∈ (0, 1) of the cell in z")
	fl.IntVar(&f.exactEvery, "exact-every", 1, "l2 constraint: exact spectral norm every N projections (power iteration in between)")
	fl.StringVar(&f.norm, "norm", "l2", "norm of the hidden state: l2, lp:P, linf or schatten:P")
	fl.StringVar(&f.solver, "solver", "broyden", "forward solver: "+strings.Join(train.Methods(), ", "))
	fl.Float64Var(&f.tol, "tol", train.DefaultForwardTol, "forward residual tolerance (vrghal stops at an estimate of tol/2)")
	fl.IntVar(&f.maxIter, "max-iter", train.DefaultForwardIter, "forward iteration limit (epochs for vrghal)")
	fl.Float64Var(&f.delta, "delta", train.DefaultDelta, "failure probability δ ∈ (0, 1) of the certificates and of vrghal")
	fl.Float64Var(&f.sampleScale, "sample-scale", 1, "vrghal: multiplier on the paper's sample sizes")
	fl.IntVar(&f.memory, "memory", 0, "anderson/broyden memory (0: the solver's default)")
	fl.StringVar(&f.backward, "backward", "implicit", "backward mode: implicit, jacobian-free or phantom")
	fl.StringVar(&f.backwardSolver, "backward-solver", "broyden", "adjoint solver of implicit mode: "+strings.Join(train.Methods(), ", "))
	fl.Float64Var(&f.backwardTol, "backward-tol", train.DefaultBackwardTol, "adjoint tolerance, relative to the first residual")
	fl.IntVar(&f.backwardMaxIter, "backward-max-iter", train.DefaultBackwardIter, "adjoint iteration limit")
	fl.IntVar(&f.phantomSteps, "phantom-steps", 0, "phantom: unrolled steps (0: 5)")
	fl.StringVar(&f.evalSolver, "eval-solver", "", "evaluation solver (default: --solver)")
	fl.Float64Var(&f.evalTol, "eval-tol", 0, "evaluation tolerance (0: --tol/10)")
	fl.IntVar(&f.evalMaxIter, "eval-max-iter", 0, "evaluation iteration limit (0: 2·--max-iter)")
	fl.IntVar(&f.epochs, "epochs", train.DefaultEpochs, "training epochs")
	fl.IntVar(&f.batch, "batch", train.DefaultBatchSize, "training batch size")
	fl.IntVar(&f.evalBatch, "eval-batch", train.DefaultEvalBatchSize, "evaluation batch size")
	fl.Float64Var(&f.lr, "lr", train.DefaultLR, "peak learning rate of Adam")
	fl.StringVar(&f.schedule, "schedule", "cosine", "learning-rate schedule: cosine, step or constant")
	fl.Float64Var(&f.weightDecay, "weight-decay", 0, "decoupled weight decay (AdamW) of the weight matrices")
	fl.Float64Var(&f.clipNorm, "clip-norm", train.DefaultClipNorm, "clip the global gradient norm at this value (0: no clipping)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the initialisation, shuffles and solver draws")
	fl.StringVar(&f.metrics, "metrics", "", "write one JSON line per epoch to FILE (appended to with --resume)")
	fl.StringVar(&f.checkpoint, "checkpoint", "", "write the checkpoint FILE after every epoch and on interrupt")
	fl.BoolVar(&f.resume, "resume", false, "continue the run saved in --checkpoint")
	fl.StringVar(&f.plot, "plot", "", "write loss, accuracy and residual plots (PNG) into DIR")
	fl.BoolVar(&f.json, "json", false, "print the final summary as one JSON object")
	fl.BoolVar(&f.quiet, "quiet", false, "print no progress on standard error")
	fl.BoolVar(&f.progressFlag, "progress", false, "draw a progress bar even when standard error is not a terminal")
	return cmd
}

// config returns the train.Config the flags describe, validated; errors
// name the flag.
func (f *trainFlags) config() (train.Config, error) {
	checks := []struct {
		ok   bool
		flag string
		v    any
		want string
	}{
		{f.hidden > 0, "--hidden", f.hidden, "must be positive"},
		{f.encoder >= 0, "--encoder", f.encoder, "must not be negative"},
		{f.units >= 0, "--units", f.units, "must not be negative"},
		{f.terms >= 0, "--terms", f.terms, "must not be negative"},
		{f.gamma > 0 && f.gamma < 1, "--gamma", f.gamma, "must lie in (0, 1)"},
		{f.exactEvery > 0, "--exact-every", f.exactEvery, "must be positive"},
		{f.tol > 0 && !math.IsInf(f.tol, 1), "--tol", f.tol, "must be positive and finite"},
		{f.maxIter > 0, "--max-iter", f.maxIter, "must be positive"},
		{f.delta > 0 && f.delta < 1, "--delta", f.delta, "must lie in (0, 1)"},
		{f.sampleScale > 0 && !math.IsInf(f.sampleScale, 1), "--sample-scale", f.sampleScale, "must be positive and finite"},
		{f.memory >= 0, "--memory", f.memory, "must not be negative"},
		{f.backwardTol > 0 && !math.IsInf(f.backwardTol, 1), "--backward-tol", f.backwardTol, "must be positive and finite"},
		{f.backwardMaxIter > 0, "--backward-max-iter", f.backwardMaxIter, "must be positive"},
		{f.phantomSteps >= 0, "--phantom-steps", f.phantomSteps, "must not be negative"},
		{f.evalTol >= 0 && !math.IsInf(f.evalTol, 1), "--eval-tol", f.evalTol, "must be positive and finite (0: --tol/10)"},
		{f.evalMaxIter >= 0, "--eval-max-iter", f.evalMaxIter, "must not be negative"},
		{f.epochs > 0, "--epochs", f.epochs, "must be positive"},
		{f.batch > 0, "--batch", f.batch, "must be positive"},
		{f.evalBatch > 0, "--eval-batch", f.evalBatch, "must be positive"},
		{f.lr > 0 && !math.IsInf(f.lr, 1), "--lr", f.lr, "must be positive and finite"},
		{f.weightDecay >= 0 && !math.IsInf(f.weightDecay, 1), "--weight-decay", f.weightDecay, "must be non-negative and finite"},
		{f.clipNorm >= 0 && !math.IsInf(f.clipNorm, 1), "--clip-norm", f.clipNorm, "must be non-negative and finite (0: no clipping)"},
		{f.trainLimit >= 0, "--train-limit", f.trainLimit, "must not be negative"},
		{f.testLimit >= 0, "--test-limit", f.testLimit, "must not be negative"},
	}
	for _, c := range checks {
		if !c.ok {
			return train.Config{}, usagef("%s = %v %s", c.flag, c.v, c.want)
		}
	}
	names := []struct {
		flag, v string
		allowed []string
	}{
		{"--cell", f.cell, train.Cells()},
		{"--solver", f.solver, train.Methods()},
		{"--backward", f.backward, train.BackwardModes()},
		{"--backward-solver", f.backwardSolver, train.Methods()},
		{"--schedule", f.schedule, train.Schedules()},
		{"--normalize", f.normalize, train.Normalizations()},
	}
	if f.evalSolver != "" {
		names = append(names, struct {
			flag, v string
			allowed []string
		}{"--eval-solver", f.evalSolver, train.Methods()})
	}
	for _, n := range names {
		if !contains(n.allowed, n.v) {
			return train.Config{}, usagef("%s: unknown value %q (want %s)", n.flag, n.v, strings.Join(n.allowed, ", "))
		}
	}
	switch {
	case f.terms != 0 && f.cell != "mixture":
		return train.Config{}, usagef("--terms applies to --cell mixture only")
	case f.units != 0 && f.cell != "wide":
		return train.Config{}, usagef("--units applies to --cell wide only")
	case f.sampleScale != 1 && f.solver != "vrghal" && f.backwardSolver != "vrghal" && f.evalSolver != "vrghal":
		return train.Config{}, usagef("--sample-scale applies to the vrghal solver only")
	}
	clip := f.clipNorm
	if clip == 0 {
		clip = -1
	}
	c := train.Config{
		Seed: f.seed, Epochs: f.epochs, BatchSize: f.batch, EvalBatchSize: f.evalBatch, Normalize: f.normalize,
		LR: f.lr, Schedule: f.schedule, WeightDecay: f.weightDecay, ClipNorm: clip,
		Model: train.ModelConfig{
			Cell: f.cell, Hidden: f.hidden, Encoder: f.encoder, Activation: f.activation, Gamma: f.gamma,
			Norm: f.norm, Units: f.units, Terms: f.terms, ExactEvery: f.exactEvery,
		},
		Forward:  train.SolverConfig{Method: f.solver, Tol: f.tol, MaxIter: f.maxIter, Delta: f.delta, SampleScale: f.sampleScale, Memory: f.memory},
		Backward: train.BackwardConfig{Mode: f.backward, PhantomSteps: f.phantomSteps, Solver: train.SolverConfig{Method: f.backwardSolver, Tol: f.backwardTol, MaxIter: f.backwardMaxIter, Delta: f.delta, Memory: f.memory}},
		Eval:     train.SolverConfig{Method: f.evalSolver, Tol: f.evalTol, MaxIter: f.evalMaxIter},
	}
	d, err := c.Defaults()
	if err != nil {
		return d, usagef("%s", flagOfConfigError(err))
	}
	return d, nil
}

// flagOfConfigError rewrites the Config field names of train's validation
// errors as flags.
func flagOfConfigError(err error) string {
	msg := err.Error()
	for _, r := range [][2]string{
		{"train: Config.Model.Norm", "--norm"}, {"train: Config.Model.Activation", "--activation"},
		{"train: Config.Model.Encoder", "--encoder"}, {"train: Config.Model.Cell", "--cell"},
	} {
		msg = strings.Replace(msg, r[0], r[1], 1)
	}
	return msg
}

func contains(xs []string, v string) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
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

// openData loads spec with raw pixels.
func openData(ctx context.Context, spec string, trainLimit, testLimit int, seed uint64) (*datasets.Data, error) {
	d, err := datasets.Open(ctx, spec, &datasets.Options{
		Seed:      seed,
		Sizes:     datasets.SizeOptions{TrainLimit: trainLimit, TestLimit: testLimit},
		Synthetic: datasets.SyntheticOptions{Train: trainLimit, Test: testLimit},
	})
	if err != nil {
		if strings.Contains(err.Error(), "is neither a data set") {
			return nil, usagef("--data: %v", err)
		}
		return nil, runtimeError{err}
	}
	return d, nil
}

// resumeCheck names a flag and the Config field it sets.
type resumeCheck struct {
	flag string
	get  func(train.Config) any
}

// resumeChecks returns the flags compared with a checkpoint's
// configuration under --resume.
func resumeChecks() []resumeCheck {
	return []resumeCheck{
		{"seed", func(c train.Config) any { return c.Seed }},
		{"epochs", func(c train.Config) any { return c.Epochs }},
		{"batch", func(c train.Config) any { return c.BatchSize }},
		{"eval-batch", func(c train.Config) any { return c.EvalBatchSize }},
		{"normalize", func(c train.Config) any { return c.Normalize }},
		{"lr", func(c train.Config) any { return c.LR }},
		{"schedule", func(c train.Config) any { return c.Schedule }},
		{"weight-decay", func(c train.Config) any { return c.WeightDecay }},
		{"clip-norm", func(c train.Config) any { return c.ClipNorm }},
		{"cell", func(c train.Config) any { return c.Model.Cell }},
		{"hidden", func(c train.Config) any { return c.Model.Hidden }},
		{"encoder", func(c train.Config) any { return c.Model.Encoder }},
		{"units", func(c train.Config) any { return c.Model.Units }},
		{"terms", func(c train.Config) any { return c.Model.Terms }},
		{"activation", func(c train.Config) any { return c.Model.Activation }},
		{"gamma", func(c train.Config) any { return c.Model.Gamma }},
		{"exact-every", func(c train.Config) any { return c.Model.ExactEvery }},
		{"norm", func(c train.Config) any { return c.Model.Norm }},
		{"solver", func(c train.Config) any { return c.Forward.Method }},
		{"tol", func(c train.Config) any { return c.Forward.Tol }},
		{"max-iter", func(c train.Config) any { return c.Forward.MaxIter }},
		{"delta", func(c train.Config) any { return c.Forward.Delta }},
		{"sample-scale", func(c train.Config) any { return c.Forward.SampleScale }},
		{"memory", func(c train.Config) any { return c.Forward.Memory }},
		{"backward", func(c train.Config) any { return c.Backward.Mode }},
		{"backward-solver", func(c train.Config) any { return c.Backward.Solver.Method }},
		{"backward-tol", func(c train.Config) any { return c.Backward.Solver.Tol }},
		{"backward-max-iter", func(c train.Config) any { return c.Backward.Solver.MaxIter }},
		{"phantom-steps", func(c train.Config) any { return c.Backward.PhantomSteps }},
		{"eval-solver", func(c train.Config) any { return c.Eval.Method }},
		{"eval-tol", func(c train.Config) any { return c.Eval.Tol }},
		{"eval-max-iter", func(c train.Config) any { return c.Eval.MaxIter }},
	}
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
	cfg, err := f.config()
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
		for _, c := range resumeChecks() {
			if cmd.Flags().Changed(c.flag) && c.get(cfg) != c.get(ck.Config) {
				return usagef("--%s = %v contradicts the checkpoint's %v (--resume continues the saved run)", c.flag, c.get(cfg), c.get(ck.Config))
			}
		}
		cfg = ck.Config
	}
	spec := f.data
	if spec == "" {
		spec = defaultData()
		if ck != nil && dataOf(ck.TestSet) != "" {
			spec = dataOf(ck.TestSet)
		}
	}
	data, err := openData(ctx, spec, f.trainLimit, f.testLimit, f.dataSeed)
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
	Data       string `json:"data"`
	TrainSize  int    `json:"train_size"`
	TestSize   int    `json:"test_size"`
	BLAS       string `json:"blas"`
	Cell       string `json:"cell"`
	Hidden     int    `json:"hidden"`
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
		Cell: c.Model.Cell, Hidden: c.Model.Hidden, Norm: c.Model.Norm, Gamma: number(c.Model.Gamma),
		Params: tr.Model().NumParams(), Solver: c.Forward.Method, Tol: number(c.Forward.Tol),
		Backward: c.Backward.Mode, EvalSolver: c.Eval.Method, EvalTol: number(c.Eval.Tol),
		Epochs: len(res.Epochs), WallSeconds: wall.Seconds(),
	}
	if c.Backward.Mode == "implicit" {
		s.Backward += " (" + c.Backward.Solver.Method + ")"
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
	fmt.Fprintf(tw, "model\t%s cell, %d hidden, γ̄ %g in %s; %d parameters\n", s.Cell, s.Hidden, float64(s.Gamma), s.Norm, s.Params)
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

// progress reports training progress on standard error: a progress bar
// with ETA and live solver figures on a terminal, plain lines otherwise.
type progress struct {
	w      io.Writer
	quiet  bool
	bar    *progressbar.ProgressBar
	useTTY bool
	total  int
	done   int
	last   *train.BatchMetrics
}

func newProgress(w io.Writer, quiet, force bool) *progress {
	p := &progress{w: w, quiet: quiet}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.useTTY = true
	}
	p.useTTY = !quiet && (p.useTTY || force)
	return p
}

func (p *progress) start(tr *train.Trainer, data *datasets.Data) {
	if p.quiet {
		return
	}
	c := tr.Config()
	epoch, batch := tr.Position()
	nb := tr.BatchesPerEpoch()
	p.total = c.Epochs * nb
	p.done = epoch*nb + batch
	fmt.Fprintf(p.w, "training on %s (%d training, %d test images): %s cell, %d hidden, %s forward, %s backward, %d epochs of %d batches, BLAS %s\n",
		data.Name, data.Train.Len(), data.Test.Len(), c.Model.Cell, c.Model.Hidden, c.Forward.Method, c.Backward.Mode, c.Epochs, nb, blasimpl.Name)
	if epoch > 0 || batch > 0 {
		fmt.Fprintf(p.w, "resuming at epoch %d batch %d\n", epoch+1, batch)
	}
	if p.useTTY {
		p.bar = progressbar.NewOptions(p.total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		p.bar.Set(p.done)
	}
}

func (p *progress) batch(b *train.BatchMetrics) {
	p.done++
	p.last = b
	if p.bar == nil {
		return
	}
	desc := fmt.Sprintf("epoch %d loss %.3f acc %.2f", b.Epoch+1, b.Loss, b.Accuracy)
	if r := b.Forward; r != nil {
		desc += fmt.Sprintf(" fwd %d calls", r.Stats.Calls)
		if c := r.Certificate; c != nil {
			desc += fmt.Sprintf(" cert %.1e", c.Bound)
		}
	}
	if r := b.Backward; r != nil {
		desc += fmt.Sprintf(" bwd %d it", r.Stats.Iterations)
	}
	p.bar.Describe(desc)
	p.bar.Set(p.done)
}

func (p *progress) epoch(e *train.EpochMetrics, epochs int) {
	if p.quiet {
		return
	}
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintf(p.w, "epoch %d/%d  loss %.4f  train %.2f%%  test %.2f%%  fwd %.1f calls  bwd %.1f iters  cert max %.2g (%.0f%% ≤ tol)  skipped %d  %.1f s\n",
		e.Epoch, epochs, e.TrainLoss, 100*e.TrainAcc, 100*e.TestAcc, e.FwdCallsMean, e.BwdItersMean, e.CertBoundMax, 100*e.CertMetFrac, e.Skipped, e.EpochSeconds)
}

func (p *progress) logf(format string, args ...any) {
	if p.quiet {
		return
	}
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar.Clear()
	}
}
