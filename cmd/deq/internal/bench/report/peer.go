package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Peer targets: the PyTorch peer's seconds per training epoch over ours
// should be at least these ratios, like for like: the dense model, the
// conv model with the one-step gradient on both sides (conv), and with
// implicit differentiation on both sides (conv-implicit). The cross ratio
// of our conv defaults against the implicit peer (writeCrossRatio) is
// reported without a verdict.
const (
	PeerDenseTarget        = 2
	PeerConvTarget         = 2
	PeerConvImplicitTarget = 3
)

// PeerReport is the "PyTorch peer" section: the same DEQ classifiers
// trained in the same run by this library and by PyTorch (the repository's
// scripts/torch_peer.py) on the same standardised data.
type PeerReport struct {
	// Python is the interpreter that ran the peer and Torch its torch
	// version; both empty when the peer did not run.
	Python string `json:"python,omitempty"`
	Torch  string `json:"torch,omitempty"`
	// Threads is the number of torch threads the peer ran on (zero when
	// the peer did not run).
	Threads int `json:"threads,omitempty"`
	// Note, when not empty, says why the peer did not run at all.
	Note   string      `json:"note,omitempty"`
	Models []PeerModel `json:"models"`
	// Seconds is the wall time of the section.
	Seconds float64 `json:"seconds"`
}

// PeerModel is one model trained by both sides.
type PeerModel struct {
	// Model is "dense", "conv" or "conv-implicit"; Summary describes the architecture, the
	// solvers and the optimiser both sides use.
	Model   string `json:"model"`
	Summary string `json:"summary"`
	// Data names the data set; Train and Test count its images.
	Data   string `json:"data"`
	Train  int    `json:"train"`
	Test   int    `json:"test"`
	Epochs int    `json:"epochs"`
	// Note, when not empty, says why this model (or its peer) did not run.
	Note string `json:"note,omitempty"`
	// Ours is this library's run; Peer is PyTorch's, nil when it did not
	// run.
	Ours *PeerSide `json:"ours,omitempty"`
	Peer *PeerSide `json:"peer,omitempty"`
	// Target is the ratio Peer.SecondsPerEpoch/Ours.SecondsPerEpoch the
	// project aims at.
	Target float64 `json:"target"`
}

// Ratio returns the peer's mean seconds per training epoch over ours, or
// NaN.
func (m *PeerModel) Ratio() Number {
	if m.Ours == nil || m.Peer == nil || m.Ours.SecondsPerEpoch <= 0 {
		return Number(math.NaN())
	}
	return Number(m.Peer.SecondsPerEpoch / m.Ours.SecondsPerEpoch)
}

// BestRatio returns the peer's fastest training epoch over ours, or NaN:
// the ratio least disturbed by other work on the machine, on which the
// target is judged.
func (m *PeerModel) BestRatio() Number {
	if m.Ours == nil || m.Peer == nil {
		return Number(math.NaN())
	}
	o, p := m.Ours.BestEpoch(), m.Peer.BestEpoch()
	if o <= 0 || math.IsNaN(o) || math.IsNaN(p) {
		return Number(math.NaN())
	}
	return Number(p / o)
}

// BestEpoch returns the shortest training epoch in seconds, or NaN.
func (s *PeerSide) BestEpoch() float64 {
	if len(s.EpochSeconds) == 0 {
		return math.NaN()
	}
	return slices.Min(s.EpochSeconds)
}

// PeerSide is one side's training run.
type PeerSide struct {
	// SecondsPerEpoch is the mean training wall time of an epoch (the
	// test-set evaluation excluded); EpochSeconds and EpochTestAcc are per
	// epoch.
	SecondsPerEpoch float64   `json:"seconds_per_epoch"`
	EpochSeconds    []float64 `json:"epoch_seconds"`
	EpochTestAcc    []float64 `json:"epoch_test_acc"`
	// TestAcc is the test accuracy after the last epoch.
	TestAcc float64 `json:"test_acc"`
	// FwdIters and BwdIters are the mean forward and backward solver
	// iterations per training batch, and FwdMet the fraction of training
	// batches whose forward solve met its tolerance, over all epochs.
	FwdIters float64 `json:"fwd_iters"`
	BwdIters float64 `json:"bwd_iters"`
	FwdMet   float64 `json:"fwd_met"`
	// BLAS names the BLAS used and DType the floating-point type.
	BLAS  string `json:"blas"`
	DType string `json:"dtype"`
	// Backward names the gradient: "implicit" (an adjoint solve per batch)
	// or "jacobian-free" (one cell step at z*); empty in reports written
	// before the field.
	Backward string `json:"backward,omitempty"`
	// Phases is the mean over the epochs of the seconds per phase; nil
	// when the side did not report them.
	Phases *Phases `json:"phases,omitempty"`
	// PhaseCPU is the mean over the epochs of the process's processor
	// seconds per phase (every thread: ours through getrusage, the
	// peer's through Python's time.process_time); nil when the side did
	// not report them. PhaseCPU over Phases is the cores a phase kept
	// busy.
	PhaseCPU *Phases `json:"phase_cpu,omitempty"`
}

// Phases are the seconds of a training epoch by phase, with the JSON
// names of train.PhaseSeconds (which our side reports) and of the peer
// script's epoch lines.
type Phases struct {
	// Encode is the encoder's forward pass; Solve the forward solve
	// (certificate included on our side, under torch.no_grad on the
	// peer's).
	Encode float64 `json:"encode"`
	Solve  float64 `json:"solve"`
	// Readout is the readout and the loss: on our side with their
	// gradients, on the peer's without (autograd runs them inside its
	// backward pass).
	Readout float64 `json:"readout"`
	// Backward is the rest of the gradient: the adjoint solve (or the
	// one-step gradient) and the parameters' gradients, the encoder's
	// included.
	Backward float64 `json:"backward"`
	// Step is the optimiser step: clipping, Adam, the schedule and the
	// projection.
	Step float64 `json:"step"`
	// Eval is the test-set evaluation after the epoch (not part of the
	// training seconds).
	Eval float64 `json:"eval"`
}

// Train returns the sum of the training phases (all but Eval).
func (p *Phases) Train() float64 { return p.Encode + p.Solve + p.Readout + p.Backward + p.Step }

// writePeer writes the section's table.
func writePeer(b *strings.Builder, pr *PeerReport) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("## PyTorch peer\n\n")
	p("The same DEQ classifiers trained in one run by this library (in process, `train.New` and `Run`) and by PyTorch (`scripts/torch_peer.py`%s) on the same standardised images, written once as float32 to a temporary directory, with the same seed value (the two sides draw different random numbers from it), epochs, batch size, optimiser and schedule, solvers, tolerances and iteration caps. Seconds are training wall time per epoch, the test-set evaluation excluded; accuracy is on the test set after the last epoch; iterations are the mean forward and backward solver iterations per training batch, and *met* the fraction of training batches whose forward solve met its tolerance. The ratio is the peer's seconds per epoch over ours; the target is judged on the fastest epoch of each side, the one least disturbed by other work on the machine.\n\n", peerThreadsText(pr.Threads))
	if pr.Note != "" {
		p("**Skipped:** %s\n\n", pr.Note)
	}
	if pr.Torch != "" {
		p("Peer: torch %s (`%s`).\n\n", pr.Torch, pr.Python)
	}
	for i := range pr.Models {
		m := &pr.Models[i]
		p("### %s\n\n%s Data: %s, %d training and %d test images, %d epochs.\n\n", m.Model, m.Summary, m.Data, m.Train, m.Test, m.Epochs)
		if m.Note != "" {
			p("**Note:** %s\n\n", m.Note)
		}
		if m.Ours == nil {
			continue
		}
		p("| | s/epoch (mean) | s/epoch (best) | test accuracy | fwd iters/batch | gradient | bwd iters/batch | fwd met | BLAS | dtype |\n|---|---|---|---|---|---|---|---|---|---|\n")
		row := func(name string, s *PeerSide) {
			p("| %s | %.2f | %.2f | %.2f%% | %.1f | %s | %.1f | %.0f%% | %s | %s |\n", name, s.SecondsPerEpoch, s.BestEpoch(), 100*s.TestAcc, s.FwdIters, cmp.Or(s.Backward, "implicit"), s.BwdIters, 100*s.FwdMet, s.BLAS, s.DType)
		}
		row("deq (Go)", m.Ours)
		if m.Peer == nil {
			p("\n")
			writePhases(b, m)
			continue
		}
		row("PyTorch peer", m.Peer)
		p("\n")
		writePhases(b, m)
		r := m.BestRatio()
		verdict := "**missed**"
		if float64(r) >= m.Target {
			verdict = "met"
		}
		p("Ratio peer/ours: **%.2f×** on the fastest epochs (target ≥ %g×: %s), %.2f× on the means.\n\n", float64(r), m.Target, verdict, float64(m.Ratio()))
	}
	writeCrossRatio(b, pr)
}

// writePhases writes the model's seconds per epoch by phase, both sides
// side by side, when either reported them.
func writePhases(b *strings.Builder, m *PeerModel) {
	type side struct {
		name string
		s    *PeerSide
	}
	var sides []side
	for _, x := range []side{{"deq (Go)", m.Ours}, {"PyTorch peer", m.Peer}} {
		if x.s != nil && x.s.Phases != nil {
			sides = append(sides, x)
		}
	}
	if len(sides) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("Seconds per epoch by phase (mean over the epochs; *other* is the training time the phases leave out: drawing the batches, bookkeeping; the peer's readout and loss exclude their gradients, which autograd computes in its backward pass; our evaluation includes the spectral measurement of ∂f/∂z after the epoch):\n\n")
	p("| | encoder | forward solve | readout and loss | backward | optimiser | other | evaluation |\n|---|---|---|---|---|---|---|---|\n")
	for _, x := range sides {
		ph := x.s.Phases
		p("| %s | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g |\n", x.name, ph.Encode, ph.Solve, ph.Readout, ph.Backward, ph.Step,
			max(x.s.SecondsPerEpoch-ph.Train(), 0), ph.Eval)
	}
	p("\n")
	var cores []side
	for _, x := range sides {
		if x.s.PhaseCPU != nil {
			cores = append(cores, x)
		}
	}
	if len(cores) == 0 {
		return
	}
	p("Cores kept busy by phase (the process's processor seconds, every thread, over the phase's wall seconds; the whole epoch is the training phases together):\n\n")
	p("| | encoder | forward solve | readout and loss | backward | optimiser | training phases | evaluation |\n|---|---|---|---|---|---|---|---|\n")
	for _, x := range cores {
		w, c := x.s.Phases, x.s.PhaseCPU
		p("| %s | %s | %s | %s | %s | %s | %s | %s |\n", x.name, coresText(c.Encode, w.Encode), coresText(c.Solve, w.Solve),
			coresText(c.Readout, w.Readout), coresText(c.Backward, w.Backward), coresText(c.Step, w.Step),
			coresText(c.Train(), w.Train()), coresText(c.Eval, w.Eval))
	}
	p("\n")
}

// coresText gives cpu over wall seconds with one decimal, "–" where the
// wall time is zero.
func coresText(cpu, wall float64) string {
	if !(wall > 0) {
		return "–"
	}
	return fmt.Sprintf("%.1f", cpu/wall)
}

// writeCrossRatio compares, when both ran, our side of the conv model (the
// defaults of `deq train --cell conv`, whose gradient is Jacobian-free) with
// the peer of the conv-implicit model (implicit differentiation, the peer
// the conv target was set against): the same run and architecture, two
// different gradients.
func writeCrossRatio(b *strings.Builder, pr *PeerReport) {
	var ours, peer *PeerModel
	for i := range pr.Models {
		switch m := &pr.Models[i]; m.Model {
		case "conv":
			ours = m
		case "conv-implicit":
			peer = m
		}
	}
	if ours == nil || peer == nil || ours.Ours == nil || peer.Peer == nil {
		return
	}
	cross := PeerModel{Ours: ours.Ours, Peer: peer.Peer}
	fmt.Fprintf(b, "### conv defaults against the implicit peer\n\nOur side of *conv* (the defaults, Jacobian-free gradient) against the PyTorch peer of *conv-implicit* (implicit differentiation, an Anderson adjoint solve per batch), same bench run, same architecture and epochs, different gradients: **%.2f×** on the fastest epochs, %.2f× on the means (test accuracy %.2f%% against %.2f%%). Like for like, the tables above.\n\n",
		float64(cross.BestRatio()), float64(cross.Ratio()), 100*ours.Ours.TestAcc, 100*peer.Peer.TestAcc)
}

// peerThreadsText describes the peer's torch threads for the section's
// opening paragraph.
func peerThreadsText(threads int) string {
	switch threads {
	case 0:
		return ""
	case 1:
		return ", 1 thread"
	}
	return fmt.Sprintf(", %d threads", threads)
}
