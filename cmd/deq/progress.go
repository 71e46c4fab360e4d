package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/internal/blasimpl"
	"github.com/deqgo/deq/train"
)

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
	// validation reports that the set evaluated after every epoch is
	// held out from the training set (--val), not the test set.
	validation bool
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
	size := fmt.Sprintf("%d hidden", c.Model.Hidden)
	if c.Model.Cell == train.ConvCell {
		sh := tr.Model().Cell().Shape()
		size = fmt.Sprintf("%d channels × %d pixels", sh.Rows, sh.Hidden)
		if !tr.Model().Proven() {
			size += ", Lipschitz bound not proven"
		}
	}
	size += encoderPhrase(c.Model.EncoderLayers) + readoutPhrase(c.Model.ReadoutHidden)
	if s := augmentPhrase(c.Augment.Shift, c.Augment.Rotate, c.Augment.Scale, c.Augment.Flip); s != "" {
		size += ", " + s
	}
	fmt.Fprintf(p.w, "training on %s (%d training, %d %s images): %s cell, %s, %s forward, %s backward, %d epochs of %d batches, BLAS %s\n",
		data.Name, data.Train.Len(), data.Test.Len(), evalSetName(p.validation), c.Model.Cell, size, c.Forward.Method, c.Backward.Mode, c.Epochs, nb, blasimpl.Name)
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

// epoch prints an epoch's line; gamma is the cell's declared bound γ̄
// (+Inf for none), printed beside the spectral radius and norm.
func (p *progress) epoch(e *train.EpochMetrics, epochs int, gamma float64) {
	if p.quiet {
		return
	}
	if p.bar != nil {
		p.bar.Clear()
	}
	aids := ""
	if e.JacFrobMean > 0 {
		aids += fmt.Sprintf("  ‖J‖²_F %.3g", e.JacFrobMean)
	}
	if e.CorrectionLoss > 0 {
		aids += fmt.Sprintf("  corr %.4f", e.CorrectionLoss)
	}
	bound := "no γ̄"
	if !math.IsInf(gamma, 1) {
		bound = fmt.Sprintf("γ̄ %g", gamma)
	}
	fmt.Fprintf(p.w, "epoch %d/%d  loss %.4f  train %.2f%%  %s %.2f%%  fwd %.1f calls  bwd %.1f iters  cert max %.2g (%.0f%% ≤ tol)  ρ %.3f ‖J‖₂ %.3f (%s)%s  skipped %d  %.1f s\n",
		e.Epoch, epochs, e.TrainLoss, 100*e.TrainAcc, p.evalShort(), 100*e.TestAcc, e.FwdCallsMean, e.BwdItersMean, e.CertBoundMax, 100*e.CertMetFrac,
		e.SpectralRadius, e.SpectralNorm, bound, aids, e.Skipped, e.EpochSeconds)
}

// evalShort names the evaluated set as the epoch line spells it.
func (p *progress) evalShort() string {
	if p.validation {
		return "val"
	}
	return "test"
}

// evalSetName names the set a run evaluates after every epoch: the
// validation set held out by --val, or the test set.
func evalSetName(validation bool) string {
	if validation {
		return "validation"
	}
	return "test"
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
