package train

import (
	"context"
	"errors"
	"fmt"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/solver"
)

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
	if t.flipper != nil {
		t.flipper.Apply(b.X.RawMatrix().Data, mix3(t.cfg.Seed, streamFlip, t.position()))
	}
	if t.shifter != nil {
		t.shifter.Apply(b.X.RawMatrix().Data, mix3(t.cfg.Seed, streamAugment, t.position()))
	}
	t.clock.start()
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
	// The cell's projection overlaps the update of the other parameters.
	if err := t.adam.updateThen(t.vals, t.grads, t.cellFrom, t.project); err != nil {
		return bm, err
	}
	if t.afterStep != nil {
		t.afterStep(t.epoch, t.batch, t.vals)
	}
	if err := t.nonFinite(t.vals, "after the optimiser step,"); err != nil {
		return bm, err
	}
	t.clock.lap(&t.clock.step)
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
	t.acc.Forward.add(sol.Result, sol.Float32)
	t.acc.FwdTermEvals += bm.FwdTermEvals
	t.acc.BwdTermEvals += bm.BwdTermEvals
	if bm.Backward != nil {
		t.acc.Backward.add(bm.Backward, nil)
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
	if err := m.encode(w, w.e, n); err != nil {
		return nil, 0, "", err
	}
	t.clock.lap(&t.clock.encode)
	t.layer.SetSeeds(mix3(t.cfg.Seed, streamForward, t.position()), mix3(t.cfg.Seed, streamBackward, t.position()))
	// The solves are not interrupted: Run checks its context between
	// batches, so that a checkpoint sits on a batch boundary.
	ctx := context.Background()
	sol, err = t.layer.Forward(ctx, w.e)
	t.clock.lap(&t.clock.solve)
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
	t.clock.lap(&t.clock.readout)
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
	err = m.encodeBackward(w, n)
	t.clock.lap(&t.clock.backward)
	return sol, correct, "", err
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
