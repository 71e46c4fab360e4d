package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// ErrTooManyBadBatches is returned by Run when Config.MaxBadBatches
// consecutive batches had to be skipped because a solve diverged.
var ErrTooManyBadBatches = errors.New("train: too many consecutive bad batches")

// Options control what a Trainer does besides training; none of them
// changes the run's results.
type Options struct {
	// Checkpoint is the file written after every epoch and when Run stops
	// on a done context. Empty means none.
	Checkpoint string
	// OnBatch, if not nil, is called after every training batch. Its
	// argument is reused for the next batch: copy it to keep it.
	OnBatch func(*BatchMetrics)
	// OnEpoch, if not nil, is called after every epoch's evaluation.
	OnEpoch func(*EpochMetrics)
	// Logf, if not nil, receives a line for every skipped batch (see
	// Trainer, Numerical faults).
	Logf func(format string, args ...any)
	// Source, if not nil, records how the data sets were opened; the
	// checkpoints store it (see DataSource). Resume with a nil Source
	// keeps the checkpoint's.
	Source *DataSource
}

// Trainer trains a Model on a training set, evaluating it on a test set
// after every epoch.
//
// Each training batch runs a hand-written step: the encoder, the DEQ
// layer's forward solve (Config.Forward), the readout and the mean softmax
// cross-entropy, then their gradients in reverse — the readout's, the DEQ
// layer's backward pass in Config.Backward's mode (deq.Layer.Backward,
// which also gives the cotangent of the encoder's output) and the
// encoder's. The gradients are clipped by their global norm, the weights
// decayed, Adam steps with the schedule's learning rate and the cell is
// projected back onto its Lipschitz bound. The step's own scratch is
// allocated once per batch size, so that in steady state it allocates
// nothing itself (the solvers and the DEQ layer allocate their iterates
// and results).
//
// # Numerical faults
//
// A NaN or ±Inf stops Run at once with an error wrapping
// solver.ErrNonFinite that names the epoch (from 1) and the batch (from 0)
// and what was not finite: the standardised input, a value of the cell
// during the forward or adjoint solve (see deq.Layer.Forward and
// Backward), the loss, the Jacobian penalty, the correction loss, a
// parameter's gradient, or a parameter after the optimiser step. Skipping
// such a batch would not help: a non-finite value in the data or the
// parameters poisons every batch that follows, and the measurements after
// the epoch with them. Nothing is updated by the failing batch (a
// parameter made non-finite by the step itself is reported after it) and
// no checkpoint is written, so the last one written holds finite
// parameters; New and Resume already refuse a data set holding a
// non-finite pixel (datasets.Dataset.Validate).
//
// A batch whose forward or adjoint solve diverges with finite values (its
// residual grew past the solver's DivergenceFactor times its best, Status
// Diverged without an error) is skipped — no parameter, optimiser moment
// or projection state changes, and its gradients are discarded. A skipped
// batch is counted (EpochMetrics.Skipped), reported to Options.Logf and
// OnBatch, left out of the epoch's loss, accuracy and solver figures, and
// still advances the schedule. After Config.MaxBadBatches consecutive
// skipped batches Run stops with ErrTooManyBadBatches, writing no
// checkpoint. Solves that merely stop short of their tolerance (an
// iteration limit) are not faults: they are used and counted as
// unconverged.
//
// # Checkpoints and resuming
//
// With Options.Checkpoint set, Run writes a checkpoint (see Save) after
// every epoch and when its context is done. Cancellation is checked
// between batches: the batch in progress completes, so a checkpoint always
// sits on a batch boundary. Resume continues such a checkpoint exactly:
// the metrics, the parameters and the checkpoint bytes of an interrupted
// and resumed run equal those of an uninterrupted one, bit for bit (only
// the wall times differ). Checkpoint.Resume can also extend a run to more
// epochs, re-planning the learning-rate schedule over the new total from
// the checkpoint's position on.
//
// # Reproducibility
//
// Everything random — initialisation, shuffles, solver draws — derives
// from Config.Seed and the position in the run, so the same Config, data
// and build give the same metrics and checkpoint bytes. Wall times are the
// exception. Different BLAS implementations (gonum's pure Go or OpenBLAS,
// see internal/blasimpl) round differently and give different bits.
//
// A Trainer is not safe for concurrent use.
type Trainer struct {
	cfg    Config
	opts   Options
	model  *Model
	train  *datasets.Dataset
	test   *datasets.Dataset
	data   [32]byte    // fingerprint of train and test
	source *DataSource // Options.Source, or the checkpoint's

	adam      *Adam
	layer     *deq.Layer
	evalLayer *deq.Layer
	batcher   *datasets.Batcher
	shifter   *datasets.Shifter // nil without Config.Augment.Shift
	warper    *datasets.Warper  // nil without Config.Augment.Rotate or Scale
	// The parameters' values and gradients in checkpoint order, and
	// whether weight decay applies to each.
	vals, grads [][]float64
	decay       []bool
	bm          BatchMetrics // the metrics of the last batch

	epoch, batch int // position: the next batch to train
	steps        int // optimiser steps taken
	bad          int // consecutive skipped batches
	acc          epochAcc
	history      []EpochMetrics

	// Fault injection for tests: beforeRun may corrupt a batch's
	// standardised input after the input check, afterForward its forward
	// solution, afterBackward its gradients and afterStep its parameters.
	beforeRun     func(epoch, batch int, x []float64)
	afterForward  func(epoch, batch int, sol *deq.Solution)
	afterBackward func(epoch, batch int, grads [][]float64)
	afterStep     func(epoch, batch int, vals [][]float64)
}

// Result is what Run returns.
type Result struct {
	// Epochs holds the metrics of every epoch completed so far, including
	// those restored from a checkpoint (whose wall times are zero).
	Epochs []EpochMetrics
	// Steps is the number of optimiser steps taken.
	Steps int
	// Interrupted is set when Run stopped because its context was done.
	Interrupted bool
	// Epoch and Batch are the position at which Run stopped: the next
	// batch to train.
	Epoch, Batch int
}

// Final returns the metrics of the last completed epoch, or nil.
func (r *Result) Final() *EpochMetrics {
	if len(r.Epochs) == 0 {
		return nil
	}
	return &r.Epochs[len(r.Epochs)-1]
}

// New returns a Trainer for cfg on the given training and test sets (raw
// pixels; the model standardises them with statistics of train as
// cfg.Normalize says). A nil opts means no options.
func New(cfg Config, train, test *datasets.Dataset, opts *Options) (*Trainer, error) {
	c, err := cfg.Defaults()
	if err != nil {
		return nil, err
	}
	if err := checkData(train, test); err != nil {
		return nil, err
	}
	norm, err := datasets.FitNormalizer(train, c.Normalize)
	if err != nil {
		return nil, err
	}
	m, err := newModel(c.Model, train.Rows, train.Cols, train.Classes, norm, c.Seed)
	if err != nil {
		return nil, err
	}
	return newTrainer(c, m, train, test, opts)
}

// checkData validates the training and test sets.
func checkData(train, test *datasets.Dataset) error {
	if train == nil || test == nil {
		return errors.New("train: nil training or test set")
	}
	for _, d := range []*datasets.Dataset{train, test} {
		if err := d.Validate(); err != nil {
			return err
		}
		if d.Len() == 0 {
			return fmt.Errorf("train: %s is empty", d.Name)
		}
	}
	if train.Dim() != test.Dim() || train.Classes != test.Classes {
		return fmt.Errorf("train: training images have %d pixels and %d classes, test images %d and %d",
			train.Dim(), train.Classes, test.Dim(), test.Classes)
	}
	return nil
}

// newTrainer wires a Trainer around a model.
func newTrainer(c Config, m *Model, train, test *datasets.Dataset, opts *Options) (*Trainer, error) {
	t := &Trainer{cfg: c, model: m, train: train, test: test, data: fingerprint(train, test)}
	if opts != nil {
		t.opts = *opts
		if opts.Source != nil {
			s := *opts.Source
			t.source = &s
		}
	}
	if c.BatchSize > train.Len() {
		return nil, fieldErr("BatchSize", c.BatchSize, fmt.Sprintf("exceeds the %d training images", train.Len()))
	}
	if err := checkProven(c, m); err != nil {
		return nil, err
	}
	if err := checkAids(c, m); err != nil {
		return nil, err
	}
	t.adam = &Adam{LR: c.LR, Beta1: c.Beta1, Beta2: c.Beta2, Eps: c.AdamEps}
	var err error
	if t.layer, err = m.layer(c.Forward, &c.Backward, &c.Aids); err != nil {
		return nil, err
	}
	if t.evalLayer, err = m.layer(c.Eval, nil, &AidsConfig{Dropout: c.Aids.Dropout}); err != nil {
		return nil, err
	}
	for _, p := range m.params {
		t.vals = append(t.vals, p.data)
		t.grads = append(t.grads, p.grad)
		t.decay = append(t.decay, p.decay)
	}
	t.batcher, err = datasets.NewBatcher(train, c.BatchSize, &datasets.BatchOptions{Shuffle: true, Seed: numeric.Mix(c.Seed, streamShuffle), DropLast: true})
	if err != nil {
		return nil, err
	}
	if s := c.Augment.Shift; s > 0 {
		if t.shifter, err = datasets.NewShifter(train.Rows, train.Cols, s); err != nil {
			return nil, &FieldError{Field: "Augment.Shift", Value: s, Reason: "is refused: " + err.Error(), cause: err}
		}
	}
	if a := c.Augment; a.Rotate != 0 || a.Scale != 0 {
		if t.warper, err = datasets.NewWarper(train.Rows, train.Cols, a.Rotate, a.Scale); err != nil {
			field, v := "Augment.Rotate", a.Rotate
			if _, e := datasets.NewWarper(train.Rows, train.Cols, a.Rotate, 0); e == nil {
				field, v = "Augment.Scale", a.Scale // the rotation alone passes
			}
			return nil, &FieldError{Field: field, Value: v, Reason: "is refused: " + err.Error(), cause: err}
		}
	}
	return t, nil
}

// checkProven refuses the stochastic solver for a conv cell whose Lipschitz
// bound is not proven (with GroupNorm, weight normalisation or float32
// products, or in a norm other than ℓ2 and Schatten-2): its guarantees
// rest on that bound. The deterministic solvers
// run either way.
func checkProven(c Config, m *Model) error {
	for _, s := range []struct {
		field string
		m     solver.MethodSpec
	}{{"Forward.Method", c.Forward.Method}, {"Backward.Solver.Method", c.Backward.Solver.Method}, {"Eval.Method", c.Eval.Method}} {
		if (s.field == "Backward.Solver.Method" && c.Backward.Mode != deq.Implicit) || !m.lacksProof(s.m) {
			continue
		}
		if c.Model.Normalization == layers.WeightNorm {
			return fieldErr("Model.Normalization", c.Model.Normalization, fmt.Sprintf("proves no Lipschitz bound, which %s = %v needs (the conv cell has one only under the projection, without GroupNorm, in l2 or schatten:2)", s.field, s.m))
		}
		return fieldErr(s.field, s.m, m.unprovenReason())
	}
	return nil
}

// lacksProof reports whether meth's guarantees rest on a Lipschitz bound
// that the model's cell does not prove: meth is stochastic and the cell is
// a conv cell without a proven bound. The deterministic solvers run either
// way.
func (m *Model) lacksProof(meth solver.MethodSpec) bool {
	return (m.Config.Cell == ConvCell || m.custom) && !m.Proven() && meth.Info().Stochastic
}

// lacksGamma reports whether meth needs a Lipschitz bound γ̄ (GHAL,
// VR-GHAL) that the model's cell does not declare (weight normalisation).
func (m *Model) lacksGamma(meth solver.MethodSpec) bool {
	return needsGamma(meth) && math.IsInf(m.cell.Gamma(), 1)
}

// unprovenReason is the reason of the refusal of a stochastic method on
// the model's cell, which proves no bound: a conv cell's configuration, or
// a CellFunc's cell whose Proven method is false.
func (m *Model) unprovenReason() string {
	c := m.Config
	if m.custom {
		return fmt.Sprintf("needs a proven Lipschitz bound, and the model's cell does not prove its bound γ̄ = %g in Model.Norm = %v (its Proven method is false)", m.cell.Gamma(), c.Norm)
	}
	return fmt.Sprintf("needs a proven Lipschitz bound, which the conv cell has only in l2 (or schatten:2), without GroupNorm, under the projection and in float64 (Model.Norm = %v, Model.Groups = %d, −1 meaning none; Model.Normalization = %v; Model.Precision = %v)", c.Norm, c.Groups, c.Normalization, c.Precision)
}

// checkAids refuses the training aids a cell or a solver cannot honour:
// Jacobian regularisation for a cell without a fused Jacobian penalty, and
// the solvers that need a Lipschitz bound γ̄ ≤ 1 (GHAL, VR-GHAL) where the
// cell declares none (weight normalisation) or, in training, dropout's
// 1/(1 − p) pushes it above one.
func checkAids(c Config, m *Model) error {
	if c.Aids.JacWeight > 0 {
		ev, err := m.cell.Evaluator(c.BatchSize)
		if err != nil {
			return err
		}
		if _, ok := ev.(layers.JacobianPenalizer); !ok {
			return fieldErr("Aids.JacWeight", c.Aids.JacWeight, fmt.Sprintf("needs a cell with an exact Jacobian-penalty gradient (the dense cell); the %s cell has none", m.cellName()))
		}
	}
	gamma := m.cell.Gamma()
	for _, s := range []struct {
		field string
		m     solver.MethodSpec
		used  bool // the solve runs
		train bool // the solve sees the dropout mask
	}{
		{"Forward.Method", c.Forward.Method, true, true},
		{"Backward.Solver.Method", c.Backward.Solver.Method, c.Backward.Mode == deq.Implicit, true},
		{"Eval.Method", c.Eval.Method, true, false},
	} {
		switch {
		case !s.used || !needsGamma(s.m):
		case m.lacksGamma(s.m):
			return fieldErr("Model.Normalization", c.Model.Normalization, fmt.Sprintf("declares no Lipschitz bound γ̄, which %s = %v needs (use the projection or another solver)", s.field, s.m))
		case s.train && gamma/(1-c.Aids.Dropout) > 1:
			return fieldErr("Aids.Dropout", c.Aids.Dropout, fmt.Sprintf("scales the cell's bound γ̄ = %g to %g > 1, and %s = %v needs a bound of at most one", gamma, gamma/(1-c.Aids.Dropout), s.field, s.m))
		}
	}
	return nil
}

// needsGamma reports whether the method's guarantees and schedule rest on
// a Lipschitz bound γ̄ (GHAL and VR-GHAL).
func needsGamma(m solver.MethodSpec) bool { return m.Info().NeedsGamma }

// Model returns the model being trained.
func (t *Trainer) Model() *Model { return t.model }

// Config returns the run's configuration with defaults filled in.
func (t *Trainer) Config() Config { return t.cfg }

// Position returns the next batch to train: its epoch and index, both
// from 0. After the last epoch, epoch equals Config.Epochs.
func (t *Trainer) Position() (epoch, batch int) { return t.epoch, t.batch }

// BatchesPerEpoch returns the number of training batches per epoch.
func (t *Trainer) BatchesPerEpoch() int { return t.batcher.Batches() }

// History returns the metrics of the epochs completed so far.
func (t *Trainer) History() []EpochMetrics { return append([]EpochMetrics(nil), t.history...) }

// Run trains until Config.Epochs epochs are complete, the context is done
// or a fatal error occurs. On a done context it finishes the batch in
// progress (or abandons the evaluation in progress), writes the checkpoint
// if Options.Checkpoint is set, and returns the Result with Interrupted set
// and an error wrapping the context's. Run may be called again to
// continue.
func (t *Trainer) Run(ctx context.Context) (*Result, error) {
	nb := t.batcher.Batches()
	for t.epoch < t.cfg.Epochs {
		start := time.Now()
		t.batcher.Reset(t.epoch)
		for i := 0; i < t.batch; i++ {
			t.batcher.Next()
		}
		for t.batch < nb {
			if err := ctx.Err(); err != nil {
				return t.interrupt(err)
			}
			t.batcher.Next()
			bm, err := t.trainBatch(t.batcher.Batch())
			if err != nil {
				return t.result(false), err
			}
			t.batch++
			if t.opts.OnBatch != nil {
				t.opts.OnBatch(bm)
			}
			if t.bad >= t.cfg.MaxBadBatches {
				return t.result(false), fmt.Errorf("%w: %d in a row, the last at epoch %d batch %d (%s)",
					ErrTooManyBadBatches, t.bad, bm.Epoch+1, bm.Batch, bm.SkipReason)
			}
		}
		trainTime := time.Since(start)
		em := t.acc.finish(t.epoch + 1)
		first := em.TrainLoss
		if len(t.history) > 0 {
			first = t.history[0].TrainLoss
		}
		em.LossGrowth = lossGrowth(em.TrainLoss, first, t.model.Classes)
		evalStart := time.Now()
		ev, err := t.model.evaluate(ctx, t.evalLayer, t.test, t.cfg.EvalBatchSize, t.cfg.Eval.Tol, mix3(t.cfg.Seed, streamEval, uint64(t.epoch)))
		if err != nil {
			if ctx.Err() != nil {
				return t.interrupt(ctx.Err())
			}
			return t.result(false), fmt.Errorf("train: epoch %d: evaluation: %w", t.epoch+1, err)
		}
		em.TestAcc, em.TestLoss, em.Test, em.TermRelVar = ev.Accuracy, ev.Loss, ev.Solver, ev.TermRelVar
		// Seed 0, as Model.Spectral (and so deq eval) measures.
		sp, err := t.model.spectral(ctx, t.evalLayer, t.test, 0)
		if err != nil {
			if ctx.Err() != nil {
				return t.interrupt(ctx.Err())
			}
			return t.result(false), fmt.Errorf("train: epoch %d: spectral measurement: %w", t.epoch+1, err)
		}
		em.SpectralRadius, em.SpectralNorm = sp.Radius, sp.Norm
		em.TrainSeconds = trainTime.Seconds()
		em.EvalSeconds = time.Since(evalStart).Seconds()
		em.EpochSeconds = time.Since(start).Seconds()
		t.history = append(t.history, em)
		t.epoch++
		t.batch = 0
		t.acc = epochAcc{}
		if t.opts.Checkpoint != "" {
			if err := t.Save(t.opts.Checkpoint); err != nil {
				return t.result(false), err
			}
		}
		if t.opts.OnEpoch != nil {
			t.opts.OnEpoch(&t.history[len(t.history)-1])
		}
	}
	return t.result(false), nil
}

// interrupt saves the checkpoint after a done context.
func (t *Trainer) interrupt(cause error) (*Result, error) {
	if t.opts.Checkpoint != "" {
		if err := t.Save(t.opts.Checkpoint); err != nil {
			return t.result(true), errors.Join(fmt.Errorf("train: interrupted: %w", cause), err)
		}
	}
	return t.result(true), fmt.Errorf("train: interrupted at epoch %d batch %d: %w", t.epoch+1, t.batch, cause)
}

func (t *Trainer) result(interrupted bool) *Result {
	return &Result{Epochs: t.History(), Steps: t.steps, Interrupted: interrupted, Epoch: t.epoch, Batch: t.batch}
}

// lr returns the learning rate at the current position.
func (t *Trainer) lr() float64 {
	c := t.cfg
	nb := t.batcher.Batches()
	switch c.Schedule {
	case Constant:
		return c.LR
	case Step:
		switch {
		case t.epoch >= 3*c.Epochs/4 && 3*c.Epochs/4 > 0:
			return c.LR / 100
		case t.epoch >= c.Epochs/2 && c.Epochs/2 > 0:
			return c.LR / 10
		}
		return c.LR
	}
	pos := float64(t.epoch*nb + t.batch)
	total := float64(c.Epochs * nb)
	return c.LR * (1 + math.Cos(math.Pi*pos/total)) / 2
}

// trainBatch runs one batch and, unless it is skipped, one optimiser step.
func (t *Trainer) trainBatch(b *datasets.Batch) (*BatchMetrics, error) {
	lr := t.lr()
	bm := &t.bm
	*bm = BatchMetrics{Epoch: t.epoch, Batch: t.batch, Step: t.steps, Examples: b.Len(), LR: lr}
	// Rotations and scalings first, so that translations stay whole
	// pixels.
	if t.warper != nil {
		t.warper.Apply(b.X.RawMatrix().Data, mix3(t.cfg.Seed, streamWarp, t.position()))
	}
	if t.shifter != nil {
		t.shifter.Apply(b.X.RawMatrix().Data, mix3(t.cfg.Seed, streamAugment, t.position()))
	}
	sol, correct, reason, err := t.gradient(b.X.RawMatrix().Data, b.Labels, bm)
	switch {
	case err != nil:
		return bm, err
	case reason != "":
		return bm, t.skip(bm, reason)
	}
	if t.afterBackward != nil {
		t.afterBackward(t.epoch, t.batch, t.grads)
	}
	bm.GradNorm = globalNorm(t.grads)
	if notFinite(bm.GradNorm) {
		return bm, t.nonFinite(t.grads, "the gradient of")
	}
	clipTo(t.grads, bm.GradNorm, t.cfg.ClipNorm)
	if wd := t.cfg.WeightDecay; wd > 0 {
		decay(t.vals, t.decay, 1-lr*wd)
	}
	t.adam.LR = lr
	if err := t.adam.Update(t.vals, t.grads); err != nil {
		return bm, err
	}
	if err := t.model.cell.Project(); err != nil {
		return bm, err
	}
	if t.afterStep != nil {
		t.afterStep(t.epoch, t.batch, t.vals)
	}
	if err := t.nonFinite(t.vals, "after the optimiser step,"); err != nil {
		return bm, err
	}
	n := b.Len()
	t.steps++
	t.bad = 0
	t.acc.Batches++
	t.acc.LR = lr
	t.acc.Examples += n
	t.acc.Correct += correct
	t.acc.LossSum += bm.Loss * float64(n)
	t.acc.CorrSum += bm.CorrectionLoss * float64(n)
	if bm.JacApplied {
		t.acc.JacSum += bm.JacFrob
		t.acc.JacCount++
	}
	t.acc.Forward.add(sol.Result)
	t.acc.FwdTermEvals += bm.FwdTermEvals
	t.acc.BwdTermEvals += bm.BwdTermEvals
	if bm.Backward != nil {
		t.acc.Backward.add(bm.Backward)
	}
	if t.acc.Trace == nil {
		t.acc.Trace = finiteTrace(sol.Result.Stats.Trace)
	}
	return bm, nil
}

// gradient computes the mean cross-entropy of the raw images x with their
// labels into bm (with the solves' results) and its gradient into t.grads:
// standardisation, encoder, the DEQ layer's forward solve, readout and
// loss, then the readout's, the layer's and the encoder's backward passes.
// It returns the forward solution and the number of images classified
// correctly, or the reason to skip the batch, or an error.
func (t *Trainer) gradient(x []float64, labels []int, bm *BatchMetrics) (sol *deq.Solution, correct int, skip string, err error) {
	m := t.model
	n := len(labels)
	w := m.work(n)
	t.zeroGrads()
	m.standardize(w.xs, x)
	if !numeric.AllFinite(w.xs) {
		for k, v := range w.xs {
			if v-v != 0 {
				return nil, 0, "", t.nonFiniteValue(fmt.Sprintf("the standardised input holds %v at pixel %d of the batch's image %d", v, k%m.InputDim, k/m.InputDim))
			}
		}
	}
	if t.beforeRun != nil {
		t.beforeRun(t.epoch, t.batch, w.xs)
	}
	if err := m.encode(w.e, w.xs, n); err != nil {
		return nil, 0, "", err
	}
	t.layer.SetSeeds(mix3(t.cfg.Seed, streamForward, t.position()), mix3(t.cfg.Seed, streamBackward, t.position()))
	// The solves are not interrupted: Run checks its context between
	// batches, so that a checkpoint sits on a batch boundary.
	ctx := context.Background()
	sol, err = t.layer.Forward(ctx, w.e)
	if sol != nil {
		if t.afterForward != nil {
			t.afterForward(t.epoch, t.batch, sol)
		}
		bm.Forward = sol.Result
	}
	switch {
	case err != nil && sol == nil && t.cfg.Aids.CorrectionStates > 0 && errors.Is(err, deq.ErrNoIterates):
		// No method of the registry does this today; a new one that
		// returns no iterates cannot serve fixed-point correction.
		return nil, 0, "", fieldErr("Aids.CorrectionStates", t.cfg.Aids.CorrectionStates, fmt.Sprintf("needs a forward solver that visits iterates; %v records none", t.cfg.Forward.Method))
	case err != nil:
		return sol, 0, "", fmt.Errorf("train: epoch %d batch %d: %w", t.epoch+1, t.batch, err)
	}
	m.readout(w, sol.Z, n)
	loss, correct := crossEntropy(w.dlogits, w.logits, labels, m.Classes)
	bm.Loss = loss / float64(n)
	bm.Accuracy = float64(correct) / float64(n)
	switch {
	case sol.Result.Status == solver.Diverged:
		return sol, correct, "forward solve diverged", nil
	case notFinite(bm.Loss):
		return sol, correct, "", t.nonFiniteValue(fmt.Sprintf("the loss %v", bm.Loss))
	}
	m.readoutBackward(w, sol.Z, n)
	if a := t.cfg.Aids; a.JacWeight > 0 && t.steps%a.JacFreq == 0 {
		if skip, err := t.jacobian(sol, w, bm); skip != "" || err != nil {
			return sol, correct, skip, err
		}
	}
	bs, err := t.layer.Backward(ctx, sol, w.gz, w.de)
	if bs != nil {
		bm.Backward, bm.VJPs = bs.Adjoint, bs.VJPs
		bm.FwdTermEvals, bm.BwdTermEvals = sol.TermEvals, bs.TermEvals
	}
	switch {
	case err != nil:
		return sol, correct, "", fmt.Errorf("train: epoch %d batch %d: %w", t.epoch+1, t.batch, err)
	case bm.Backward != nil && bm.Backward.Status == solver.Diverged:
		return sol, correct, "adjoint solve diverged", nil
	}
	if bm.JacApplied {
		addTo(w.de, w.jdx)
	}
	if t.cfg.Aids.CorrectionStates > 0 {
		if skip, err := t.correction(sol, w, labels, bm); skip != "" || err != nil {
			return sol, correct, skip, err
		}
	}
	return sol, correct, "", m.encodeBackward(w.xs, w.e, w.de, n)
}

// addTo adds src to dst.
func addTo(dst, src []float64) {
	for i, v := range src {
		dst[i] += v
	}
}

// zeroGrads zeroes the gradients of every parameter.
func (t *Trainer) zeroGrads() {
	for _, g := range t.grads {
		clear(g)
	}
}

// nonFiniteValue returns the error that stops Run at the current batch
// because what is not finite.
func (t *Trainer) nonFiniteValue(what string) error {
	return fmt.Errorf("train: epoch %d batch %d: %s: %w", t.epoch+1, t.batch, what, solver.ErrNonFinite)
}

// nonFinite returns nil when every one of vs (the parameters' values or
// gradients, in checkpoint order) is finite, and otherwise the error that
// stops Run, naming the first parameter and element at fault after what.
func (t *Trainer) nonFinite(vs [][]float64, what string) error {
	for i, v := range vs {
		if numeric.AllFinite(v) {
			continue
		}
		for j, x := range v {
			if x-x != 0 {
				return t.nonFiniteValue(fmt.Sprintf("%s parameter %s holds %v at %d", what, t.model.params[i].name, x, j))
			}
		}
	}
	return nil
}

// skip records a skipped batch and discards its gradients.
func (t *Trainer) skip(bm *BatchMetrics, reason string) error {
	bm.Skipped, bm.SkipReason = true, reason
	t.acc.Batches++
	t.acc.LR = bm.LR
	t.acc.Skipped++
	t.bad++
	t.zeroGrads()
	if t.opts.Logf != nil {
		t.opts.Logf("epoch %d batch %d skipped: %s", bm.Epoch+1, bm.Batch, reason)
	}
	return nil
}

// position returns the index of the current batch in the whole run.
func (t *Trainer) position() uint64 { return uint64(t.epoch*t.batcher.Batches() + t.batch) }

// finiteTrace converts a trace, dropping non-finite residuals.
func finiteTrace(tr []solver.TracePoint) []TracePoint {
	out := make([]TracePoint, 0, len(tr))
	for _, p := range traceOf(tr) {
		if !notFinite(p.Residual) {
			out = append(out, p)
		}
	}
	return out
}

// Streams that separate the uses of the seed.
const (
	streamInit     = 0x1a2b_3c4d_0000_0001
	streamCell     = 0x1a2b_3c4d_0000_0002
	streamShuffle  = 0x1a2b_3c4d_0000_0003
	streamForward  = 0x1a2b_3c4d_0000_0004
	streamBackward = 0x1a2b_3c4d_0000_0005
	streamEval     = 0x1a2b_3c4d_0000_0006
	streamEncoder  = 0x1a2b_3c4d_0000_0007
	streamJacobian = 0x1a2b_3c4d_0000_0008
	streamAugment  = 0x1a2b_3c4d_0000_0009
	// streamWarp draws the rotations and scalings of Augment; its value
	// lies apart from the sequence above, which grows by one per stream.
	streamWarp = 0x1a2b_3c4d_0000_0109
)
