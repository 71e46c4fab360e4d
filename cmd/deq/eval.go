package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/internal/blasimpl"
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/train"
)

// evalFlags are the flags of `deq eval`.
type evalFlags struct {
	checkpoint     string
	data           dataFlags
	batch          int
	solver         solver.MethodSpec
	tol, certDelta float64
	maxIter        int
	settings       solver.MethodSettings // --delta, --sample-scale, --memory
	json, force    bool
	corruptions    string
	corruptionSeed uint64
}

func newEvalCmd() *cobra.Command {
	var f evalFlags
	cmd := newCommand("eval --checkpoint F [flags]",
		"Evaluate a trained DEQ classifier on a test set and report solver statistics",
		`Eval loads a checkpoint written by deq train and classifies the test set of
--data with the forward solver --solver (by default the run's evaluation
solver, with its tolerance and iteration limit), reporting accuracy, loss,
solver work and the residual certificates of the solves, and the spectral
radius and norm of ∂f/∂z at the fixed points of the first 32 test images
(Arnoldi and power iteration) beside the cell's declared Lipschitz bound γ̄.

--data must be the data set the run was trained on: a test set of another
image size or number of classes is refused, and so is one of another name
(say Fashion-MNIST for a model of digits) unless --force is given, when
eval prints a warning and evaluates anyway. A checkpoint that does not name
its data set has its image size and classes checked only, and eval says so.

--corruptions all (or mnist-c, or a comma-separated list of names)
evaluates the model again on each corruption of the test set in the suite
of package datasets (see datasets.Corruption): mnist-c selects the fifteen
corruptions of MNIST-C, made with the parameters of its published
generator; all adds four extras MNIST-C lacks (gaussian_noise, dilate,
erode, thicken). The random parameters are drawn from --corruption-seed;
eval reports the accuracy per corruption, with its group, their mean and
minimum.`,
		f.run)
	fl := cmd.Flags()
	fl.StringVar(&f.checkpoint, "checkpoint", "", "checkpoint written by deq train (required)")
	f.data.bind(fl, "(default: the run's)", false)
	fl.IntVar(&f.batch, "batch", 0, "evaluation batch size (0: the run's)")
	fl.Var(&textValue{&f.solver}, "solver", "forward solver: "+names(train.Methods())+" (default: the run's evaluation solver)")
	fl.Float64Var(&f.tol, "tol", 0, "residual tolerance (0: the run's evaluation tolerance)")
	fl.IntVar(&f.maxIter, "max-iter", 0, "iteration limit (0: the run's evaluation limit)")
	fl.Float64Var(&f.settings.Delta, "delta", 0, "failure probability δ of the certificates and of vrghal (0: the run's)")
	fl.Float64Var(&f.certDelta, "cert-delta", 0, "certify the solves of the meanfield and experts cells from a sample of their terms with probability ≥ 1 − δ where that is cheaper than the exact pass (0: the run's; exact when the run's is 0)")
	fl.Float64Var(&f.settings.SampleScale, "sample-scale", 0, "vrghal: multiplier on the paper's sample sizes (0: the run's)")
	fl.IntVar(&f.settings.Memory, "memory", 0, "anderson/broyden memory (0: the run's)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of a summary")
	fl.StringVar(&f.corruptions, "corruptions", "", "also evaluate on corrupted test sets: all, mnist-c (MNIST-C's fifteen) or a comma-separated list of "+strings.Join(datasets.CorruptionNames(), ", "))
	fl.Uint64Var(&f.corruptionSeed, "corruption-seed", 1, "seed of the corruptions' parameters")
	fl.BoolVar(&f.force, "force", false, "evaluate on a --data set whose name differs from the checkpoint's (its image size and classes must still match)")
	return cmd
}

// evalReport is what `deq eval --json` prints.
type evalReport struct {
	Checkpoint string  `json:"checkpoint"`
	Data       string  `json:"data"`
	Examples   int     `json:"examples"`
	Correct    int     `json:"correct"`
	TestAcc    number  `json:"test_acc"`
	TestLoss   number  `json:"test_loss"`
	Solver     string  `json:"solver"`
	Tol        number  `json:"tol"`
	MaxIter    int     `json:"max_iter"`
	Norm       string  `json:"norm"`
	Cell       string  `json:"cell"`
	Epochs     int     `json:"epochs"`
	BLAS       string  `json:"blas"`
	Seconds    float64 `json:"seconds"`
	// Stats summarises the forward solves, one per batch.
	Stats train.SolveSummary `json:"solver_stats"`
	// SpectralRadius and SpectralNorm are the largest spectral radius and
	// norm of ∂f/∂z at the fixed points of the first train.SpectralBatch
	// test images; Gamma is the cell's declared bound γ̄ (null under weight
	// normalisation, which declares none) and Proven whether the cell
	// proves it.
	SpectralRadius number `json:"spectral_radius"`
	SpectralNorm   number `json:"spectral_norm"`
	Gamma          number `json:"gamma"`
	Proven         bool   `json:"proven"`
	// DataWarning is the warning printed about --data (a set of another
	// name evaluated with --force, or a checkpoint that names none), or
	// empty.
	DataWarning string `json:"data_warning,omitempty"`
	// Corruptions is the accuracy on each corruption of --corruptions.
	Corruptions *corruptionSummary `json:"corruptions,omitempty"`
}

// checkEvalData refuses data whose test set differs from the checkpoint's
// run: another number of pixels or classes always (the model cannot read
// it), another name unless force. It returns the warning to print: the
// forced difference, or that a checkpoint naming no data set had its image
// size and classes checked only.
func checkEvalData(ck *train.Checkpoint, data *datasets.Data, force bool) (string, error) {
	test := data.Test
	if test.Dim() != ck.Model.InputDim || test.Classes != ck.Model.Classes {
		return "", usagef("--data %s: %d×%d images in %d classes, the checkpoint's model reads %d pixels in %d classes (--force cannot change that)",
			data.Name, test.Rows, test.Cols, test.Classes, ck.Model.InputDim, ck.Model.Classes)
	}
	want := setOf(ck.TestSet)
	switch {
	case want == "":
		return "warning: the checkpoint does not name its data set; only the image size and classes of --data " + data.Name + " were checked", nil
	case filepath.Clean(want) == filepath.Clean(data.Name):
		return "", nil
	case !force:
		return "", usagef("--data %s differs from the data set the checkpoint was trained on, %s (pass --data %s, or --force to evaluate anyway)", data.Name, want, shellQuote(want))
	}
	return fmt.Sprintf("warning: evaluating on %s a model trained on %s (--force)", data.Name, want), nil
}

// setOf returns the data set of a set name: the name without its trailing
// elements train, test and validation ("fashion-mnist/test" →
// "fashion-mnist"; "mnist/train/validation", the images --val holds out,
// → "mnist"; "/data/digits/test" → "/data/digits").
func setOf(name string) string {
	for {
		i := strings.LastIndex(name, "/")
		if i < 0 {
			return name
		}
		switch name[i+1:] {
		case "train", "test", "validation":
			name = name[:i]
		default:
			return name
		}
	}
}

func (f *evalFlags) run(cmd *cobra.Command) error {
	switch {
	case f.checkpoint == "":
		return usagef("--checkpoint is required")
	case f.batch < 0:
		return usagef("--batch = %d must not be negative", f.batch)
	case f.tol < 0 || math.IsNaN(f.tol) || math.IsInf(f.tol, 1):
		return usagef("--tol = %v must be positive and finite (0: the run's)", f.tol)
	case f.maxIter < 0:
		return usagef("--max-iter = %d must not be negative", f.maxIter)
	case f.settings.Delta < 0 || f.settings.Delta >= 1 || math.IsNaN(f.settings.Delta):
		return usagef("--delta = %v must lie in (0, 1) (0: the run's)", f.settings.Delta)
	case f.settings.SampleScale < 0 || math.IsNaN(f.settings.SampleScale) || math.IsInf(f.settings.SampleScale, 1):
		return usagef("--sample-scale = %v must be positive and finite (0: the run's)", f.settings.SampleScale)
	case f.settings.Memory < 0:
		return usagef("--memory = %d must not be negative", f.settings.Memory)
	case f.certDelta < 0 || f.certDelta >= 1 || math.IsNaN(f.certDelta):
		return usagef("--cert-delta = %v must lie in [0, 1) (0: the run's)", f.certDelta)
	}
	corruptions, err := parseCorruptions(f.corruptions)
	if err != nil {
		return err
	}
	ck, err := train.Load(f.checkpoint)
	if err != nil {
		return usagef("--checkpoint: %v", err)
	}
	spec := f.data.spec
	if spec == "" {
		if spec = dataOf(ck.TestSet); spec == "" {
			return usagef("--data is required: the checkpoint's test set %q is not a known data set", ck.TestSet)
		}
	}
	f.data.trainLimit = 1 // only the test set is used
	data, err := f.data.open(cmd.Context(), spec)
	if err != nil {
		return err
	}
	warning, err := checkEvalData(ck, data, f.force)
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), oneLine(warning))
	}
	s := ck.Config.Eval
	if !f.solver.IsZero() && f.solver != s.Method {
		// Another method keeps the run's budget but none of its
		// method-specific settings.
		s = train.SolverConfig{Method: f.solver, Tol: s.Tol, MaxIter: s.MaxIter, MethodSettings: solver.MethodSettings{Delta: s.Delta}, CertDelta: s.CertDelta}
	}
	if f.tol > 0 {
		s.Tol = f.tol
	}
	if f.maxIter > 0 {
		s.MaxIter = f.maxIter
	}
	s.MethodSettings = f.settings.Or(s.MethodSettings)
	if f.certDelta > 0 {
		s.CertDelta = f.certDelta
	}
	batch := f.batch
	if batch == 0 {
		batch = ck.Config.EvalBatchSize
	}
	start := time.Now()
	em, err := ck.Model.Evaluate(cmd.Context(), data.Test, s, batch)
	var fe *train.FieldError
	if errors.As(err, &fe) && fe.Field == "Eval.Method" {
		return usagef("--solver = %v %s", fe.Value, fe.Reason)
	}
	if err != nil {
		return runtimeError{err}
	}
	sp, err := ck.Model.Spectral(cmd.Context(), data.Test, s)
	if err != nil {
		return runtimeError{err}
	}
	rep := &evalReport{
		Checkpoint: f.checkpoint, Data: data.Name, Examples: em.Examples, Correct: em.Correct,
		TestAcc: number(em.Accuracy), TestLoss: number(em.Loss), Solver: s.Method.String(), Tol: number(s.Tol), MaxIter: s.MaxIter,
		Norm: ck.Config.Model.Norm.String(), Cell: ck.Config.Model.Cell.String(), Epochs: ck.Epoch, BLAS: blasimpl.Name,
		Seconds: time.Since(start).Seconds(), Stats: em.Solver,
		SpectralRadius: number(sp.Radius), SpectralNorm: number(sp.Norm), Gamma: number(sp.Gamma), Proven: sp.Proven,
		DataWarning: warning,
	}
	if len(corruptions) > 0 {
		if rep.Corruptions, err = evalCorruptions(cmd.Context(), ck.Model, data.Test, corruptions, f.corruptionSeed, s, batch); err != nil {
			return runtimeError{err}
		}
	}
	if f.json {
		b, err := json.Marshal(rep)
		if err != nil {
			return runtimeError{err}
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
		return err
	}
	return rep.write(cmd.OutOrStdout())
}

func (r *evalReport) write(w io.Writer) error {
	s := r.Stats
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "test accuracy\t%.2f%% (%d/%d), loss %.4f\n", 100*float64(r.TestAcc), r.Correct, r.Examples, float64(r.TestLoss))
	fmt.Fprintf(tw, "model\t%s cell in %s after %s, from %s\n", r.Cell, r.Norm, plural(r.Epochs, "epoch"), r.Checkpoint)
	fmt.Fprintf(tw, "solver\t%s, tol %g, max %d iterations: %.1f calls, %.1f iterations per batch; %d of %d batches unconverged\n",
		r.Solver, float64(r.Tol), r.MaxIter, s.CallsMean, s.ItersMean, s.Unconverged, s.Solves)
	fmt.Fprintf(tw, "certificates\t‖f(z) − z‖ ≤ %.3g max, %.3g mean; %.1f%% of batches ≤ tol%s\n", s.CertBoundMax, s.CertBoundMean, 100*s.CertMetFrac, certRules(s))
	fmt.Fprintf(tw, "jacobian\tspectral radius %.4g, spectral norm %.4g at z* (first %d test images)%s\n",
		float64(r.SpectralRadius), float64(r.SpectralNorm), train.SpectralBatch, besideGamma(float64(r.Gamma), "weight"))
	fmt.Fprintf(tw, "time\t%.2f s (BLAS %s)\n", r.Seconds, r.BLAS)
	if err := tw.Flush(); err != nil || r.Corruptions == nil {
		return err
	}
	fmt.Fprintln(w)
	return r.Corruptions.write(w)
}
