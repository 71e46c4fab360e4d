package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/cputime"
	"github.com/deqgo/deq/internal/numeric"
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
// cross-entropy, their gradients in reverse with deq.Layer.Backward in
// Config.Backward's mode, gradient clipping, weight decay, an Adam step and
// the cell's projection. In steady state the step itself allocates nothing.
//
// # Numerical faults
//
// A NaN or ±Inf stops Run at once with an error wrapping
// solver.ErrNonFinite that names the epoch (from 1), the batch (from 0) and
// what was not finite: the standardised input, a value of the cell during
// the forward or adjoint solve, the loss, the Jacobian penalty, the
// correction loss, a gradient, or a parameter after the optimiser step.
// Nothing is updated by the failing batch and no checkpoint is written, so
// the last one written holds finite parameters.
//
// A batch whose forward or adjoint solve diverges with finite values
// (Status Diverged without an error) is skipped: nothing changes, the batch
// is counted (EpochMetrics.Skipped), reported to Options.Logf and OnBatch,
// left out of the epoch's figures, and still advances the schedule. After
// Config.MaxBadBatches consecutive skipped batches Run stops with
// ErrTooManyBadBatches. Solves that stop short of their tolerance are used
// and counted as unconverged.
//
// # Checkpoints and reproducibility
//
// With Options.Checkpoint set, Run writes a checkpoint (see Save) after
// every epoch and when its context is done, on a batch boundary. Resume
// continues it exactly: the parameters, metrics and checkpoint bytes equal
// those of an uninterrupted run, bit for bit. Everything random derives
// from Config.Seed and the position in the run, so the same Config, data
// and build give the same results; wall times and the BLAS implementation
// (see internal/blasimpl) are the exceptions. The page docs/training.md in
// the repository gives the details.
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
	flipper   *datasets.Flipper // nil without Config.Augment.Flip
	// The parameters' values and gradients in checkpoint order, and
	// whether weight decay applies to each.
	vals, grads [][]float64
	// cellFrom is the index in vals of the cell's first parameter when
	// the cell's parameters come last, in the cell's order, so that Adam
	// can overlap the cell's projection with the update of the others
	// (Adam.updateThen); 0 otherwise. project is the cell's Project,
	// bound once.
	cellFrom int
	project  func() error
	decay    []bool
	bm       BatchMetrics // the metrics of the last batch

	epoch, batch int // position: the next batch to train
	steps        int // optimiser steps taken
	bad          int // consecutive skipped batches
	acc          epochAcc
	clock        phaseClock // the epoch's phase times, not checkpointed
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
	return newWithCell(cfg, nil, train, test, opts)
}

// newWithCell is New, with the model's cell built by newCell unless it is
// nil (NewWithCell).
func newWithCell(cfg Config, newCell CellFunc, train, test *datasets.Dataset, opts *Options) (*Trainer, error) {
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
	m, err := newModelWith(c.Model, train.Rows, train.Cols, train.Classes, norm, c.Seed, newCell)
	if err != nil {
		return nil, err
	}
	return newTrainer(c, m, train, test, opts)
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
	splitAdam(t.adam)
	var err error
	m.split = c.Split
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
	t.cellFrom, t.project = cellTail(t.vals, m.cell.Params()), m.cell.Project
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
	if c.Augment.Flip {
		if t.flipper, err = datasets.NewFlipper(train.Rows, train.Cols); err != nil {
			return nil, &FieldError{Field: "Augment.Flip", Value: true, Reason: "is refused: " + err.Error(), cause: err}
		}
	}
	return t, nil
}

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
		t.clock = phaseClock{}
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
		evalStart, evalCPU := time.Now(), cputime.Process()
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
		em.Phases, em.PhaseCPU = t.clock.seconds()
		em.Phases.Eval = em.EvalSeconds
		em.PhaseCPU.Eval = (cputime.Process() - evalCPU).Seconds()
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
	// streamFlip draws the mirrorings of Augment.
	streamFlip = 0x1a2b_3c4d_0000_010a
)
