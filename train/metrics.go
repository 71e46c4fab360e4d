package train

import (
	"math"
	"time"

	"github.com/deqgo/deq/internal/cputime"
	"github.com/deqgo/deq/solver"
)

// SolveSummary summarises a set of fixed-point solves (one per batch).
type SolveSummary struct {
	// Solves is the number of solves summarised.
	Solves int `json:"solves"`
	// CallsMean, ItersMean and SamplesMean are the mean oracle calls,
	// iterations (epochs for VR-GHAL) and unit samples per solve, the
	// certificate's excluded.
	CallsMean   float64 `json:"calls_mean"`
	ItersMean   float64 `json:"iters_mean"`
	SamplesMean float64 `json:"samples_mean"`
	// Unconverged counts the solves whose Status was not Success.
	Unconverged int `json:"unconverged"`
	// Certified counts the solves with a finite residual certificate;
	// CertBoundMax and CertBoundMean are the largest and mean bound among
	// them (zero when there is none).
	Certified     int     `json:"certified"`
	CertBoundMax  float64 `json:"cert_bound_max"`
	CertBoundMean float64 `json:"cert_bound_mean"`
	// CertMetFrac is the fraction of solves whose certified bound is at
	// most the absolute tolerance each solve stopped against (the solver's
	// Tol, or Tol times its first residual under a relative tolerance;
	// zero when Solves is zero).
	CertMetFrac float64 `json:"cert_met_frac"`
	// CertRules counts the certificates by their rule (exact ones,
	// "finite-sum-exact", or sampled ones such as "sampled-bernstein"),
	// and CertDeltaMax is the largest failure probability among them
	// (zero, and omitted, when all are exact).
	CertRules    map[solver.CertRule]int `json:"cert_rules,omitempty"`
	CertDeltaMax float64                 `json:"cert_delta_max,omitempty"`
	// Float64CallsMean is the mean oracle calls per solve on the cell's
	// float64 map when the solves are certified on it
	// (Model.CertifiesFloat64; included in CallsMean): 1 when every
	// float32 stage returned a point that met the tolerance on the
	// float64 map as well. Zero, and omitted, otherwise.
	Float64CallsMean float64 `json:"float64_calls_mean,omitempty"`
}

// solveAcc accumulates a SolveSummary. Its fields are exported for the
// checkpoint's encoding.
type solveAcc struct {
	Solves      int
	Calls       int64
	Iters       int64
	Samples     int64
	Unconverged int
	Certified   int
	Met         int
	BoundMax    float64
	BoundSum    float64
	Rules       map[solver.CertRule]int `json:",omitempty"`
	DeltaMax    float64                 `json:",omitempty"`
	// Float64Calls counts the calls on the float64 map of solves
	// certified on it.
	Float64Calls int64 `json:",omitempty"`
}

// add counts a solve. A certified bound meets the tolerance when it is at
// most the absolute tolerance the solve stopped against (Result.Tol: the
// configured tolerance, or under a relative tolerance that times the
// solve's first residual).
//
// first is the float32 stage of a solve certified on the float64 map
// (deq.Solution.Float32), nil otherwise: r.Stats counts both stages.
func (a *solveAcc) add(r, first *solver.Result) {
	tol := r.Tol
	if first != nil {
		a.Float64Calls += r.Stats.Calls - first.Stats.Calls
	}
	a.Solves++
	a.Calls += r.Stats.Calls
	a.Iters += int64(r.Stats.Iterations)
	a.Samples += r.Stats.Samples
	if r.Status != solver.Success {
		a.Unconverged++
	}
	if c := r.Certificate; c != nil && !math.IsNaN(c.Bound) && !math.IsInf(c.Bound, 0) {
		a.Certified++
		if a.Rules == nil {
			a.Rules = map[solver.CertRule]int{}
		}
		a.Rules[c.Rule]++
		if c.Delta > 0 {
			a.DeltaMax = math.Max(a.DeltaMax, c.Delta)
		}
		a.BoundMax = math.Max(a.BoundMax, c.Bound)
		a.BoundSum += c.Bound
		if c.Bound <= tol {
			a.Met++
		}
	}
}

func (a *solveAcc) summary() SolveSummary {
	s := SolveSummary{Solves: a.Solves, Unconverged: a.Unconverged, Certified: a.Certified, CertBoundMax: a.BoundMax,
		CertRules: a.Rules, CertDeltaMax: a.DeltaMax}
	if a.Solves > 0 {
		n := float64(a.Solves)
		s.CallsMean = float64(a.Calls) / n
		s.ItersMean = float64(a.Iters) / n
		s.SamplesMean = float64(a.Samples) / n
		s.CertMetFrac = float64(a.Met) / n
		s.Float64CallsMean = float64(a.Float64Calls) / n
	}
	if a.Certified > 0 {
		s.CertBoundMean = a.BoundSum / float64(a.Certified)
	}
	return s
}

// BatchMetrics describe one training batch.
type BatchMetrics struct {
	// Epoch and Batch locate the batch (both from 0); Step is the number of
	// optimiser steps taken before it.
	Epoch, Batch, Step int
	// Examples is the batch size.
	Examples int
	// LR is the learning rate of the batch's step.
	LR float64
	// Loss is the mean cross-entropy and Accuracy the fraction classified
	// correctly (by the logits of the forward pass, before the step).
	Loss, Accuracy float64
	// GradNorm is the global gradient norm before clipping.
	GradNorm float64
	// Skipped is set when the batch was not used for an update, and
	// SkipReason says why (see Trainer).
	Skipped    bool
	SkipReason string
	// Forward is the forward solver's result; Backward the adjoint
	// solver's (nil unless the backward mode is implicit).
	Forward, Backward *solver.Result
	// VJPs counts the full vector–Jacobian products of the backward pass.
	VJPs int
	// FwdTermEvals and BwdTermEvals count the term evaluations (one of the
	// cell's terms on the whole batch) of the forward solve, its
	// certificate included (deq.Solution.TermEvals), and of the backward
	// pass (deq.BackwardStats.TermEvals).
	FwdTermEvals, BwdTermEvals int64
	// JacApplied reports whether the batch's step applied the Jacobian
	// regularisation (Config.Aids), and JacFrob is then its Hutchinson
	// estimate R of the mean ‖∂f/∂z‖_F² at z* (before the weight).
	JacApplied bool
	JacFrob    float64
	// CorrectionLoss is the weighted fixed-point correction loss of the
	// batch (zero without correction); Loss does not include it.
	CorrectionLoss float64
}

// EpochMetrics describe one epoch of training and the evaluation after it.
// The JSON names are those of the metrics lines of `deq train --metrics`.
type EpochMetrics struct {
	// Epoch numbers the epoch from 1.
	Epoch int `json:"epoch"`
	// Batches counts the training batches and Skipped those not used for
	// an update.
	Batches int `json:"batches"`
	Skipped int `json:"skipped"`
	// LR is the learning rate of the epoch's last step.
	LR float64 `json:"lr"`
	// TrainLoss and TrainAcc are the mean loss and accuracy over the
	// epoch's used batches, each measured before that batch's step.
	TrainLoss float64 `json:"train_loss"`
	TrainAcc  float64 `json:"train_acc"`
	// LossGrowth warns that the training loss grew by orders of magnitude
	// (a learning rate too large, say): it is the epoch's TrainLoss divided
	// by the reference loss min(L₁, ln K), L₁ the first epoch's TrainLoss
	// and ln K the cross-entropy of a uniform prediction over the K
	// classes, when that ratio exceeds LossGrowthFactor, and zero
	// otherwise (so also for an epoch whose loss is not finite, which
	// stops the run). Training continues either way.
	LossGrowth float64 `json:"loss_growth,omitempty"`
	// TestLoss and TestAcc are measured on the test set after the epoch,
	// with the evaluation solver.
	TestLoss float64 `json:"test_loss"`
	TestAcc  float64 `json:"test_acc"`
	// FwdCallsMean, FwdItersMean and FwdSamplesMean are the forward
	// solver's mean work per used training batch; BwdCallsMean and
	// BwdItersMean the adjoint solver's (zero unless implicit).
	FwdCallsMean   float64 `json:"fwd_calls_mean"`
	FwdItersMean   float64 `json:"fwd_iters_mean"`
	FwdSamplesMean float64 `json:"fwd_samples_mean"`
	BwdCallsMean   float64 `json:"bwd_calls_mean"`
	BwdItersMean   float64 `json:"bwd_iters_mean"`
	// FwdTermEvalsMean and BwdTermEvalsMean are the mean term evaluations
	// per used training batch of the forward solve (the certificate's
	// exact call included) and of the backward pass: a term evaluation is
	// one of the cell's M terms evaluated on the whole batch, so an exact
	// call or an exact VJP counts M and a sampled one its sample size (1
	// per call for a deterministic cell). They are the cost that decides
	// whether sampling pays.
	FwdTermEvalsMean float64 `json:"fwd_term_evals_mean"`
	BwdTermEvalsMean float64 `json:"bwd_term_evals_mean"`
	// TermRelVar is σ²/‖z*‖², the variance of one term sample at the fixed
	// points z* of the first evaluation batch relative to their squared
	// norm (layers.TermRelVar), measured after the epoch; zero for a
	// deterministic cell. A sampled forward needs of the order of
	// TermRelVar/ε² terms to reach a relative accuracy ε, against M per
	// exact call.
	TermRelVar float64 `json:"term_rel_var,omitempty"`
	// CertBoundMax and CertBoundMean are the largest and mean certified
	// residual bound of the training batches' forward solves; CertMetFrac
	// the fraction of batches whose bound met Forward.Tol.
	CertBoundMax  float64 `json:"cert_bound_max"`
	CertBoundMean float64 `json:"cert_bound_mean"`
	CertMetFrac   float64 `json:"cert_met_frac"`
	// Forward and Backward summarise the training solves; Test the
	// evaluation solves.
	Forward  SolveSummary `json:"forward"`
	Backward SolveSummary `json:"backward"`
	Test     SolveSummary `json:"test"`
	// JacFrobMean is the mean over the epoch's regularised batches of the
	// Hutchinson estimate of the mean ‖∂f/∂z‖_F² at z* (the Jacobian
	// regularisation's R, before its weight); zero without it.
	JacFrobMean float64 `json:"jac_frob_mean,omitempty"`
	// CorrectionLoss is the mean fixed-point correction loss over the
	// epoch's used batches; zero without correction.
	CorrectionLoss float64 `json:"correction_loss,omitempty"`
	// SpectralRadius and SpectralNorm measure ∂f/∂z at the fixed points of
	// the first SpectralBatch test images after the epoch (see
	// Model.Spectral): the largest over those images of the spectral
	// radius ρ(J_b) and of the spectral norm ‖J_b‖₂, to compare with the
	// cell's declared bound γ̄ (which bounds both in ℓ2).
	SpectralRadius float64 `json:"spectral_radius,omitempty"`
	SpectralNorm   float64 `json:"spectral_norm,omitempty"`
	// Trace is the forward residual trace of the epoch's first used batch:
	// residual against iteration.
	Trace []TracePoint `json:"-"`
	// EpochSeconds, TrainSeconds and EvalSeconds are wall times, and
	// Phases splits them by phase (omitted from JSON when zero). They are
	// the only fields that differ between runs of the same Config, and are
	// not saved in checkpoints: an epoch restored from a checkpoint has
	// them zero. An epoch resumed
	// from a checkpoint in its middle times only the batches run after
	// the resumption.
	EpochSeconds float64      `json:"epoch_seconds"`
	TrainSeconds float64      `json:"train_seconds"`
	EvalSeconds  float64      `json:"eval_seconds"`
	Phases       PhaseSeconds `json:"phases,omitzero"`
	// PhaseCPU is the processor time of the process in each phase, in
	// seconds: user and system time of all its threads (the Go runtime's
	// and OpenBLAS's), so that PhaseCPU.Solve / Phases.Solve is the number
	// of cores the forward solves kept busy on average. It is zero on a
	// platform where the processor time is not read (other than unix),
	// and like the wall times it is not saved in checkpoints.
	PhaseCPU PhaseSeconds `json:"phase_cpu,omitzero"`
}

// PhaseSeconds splits the wall time of a training epoch by phase, in
// seconds summed over the epoch's batches (skipped ones included). Each
// phase is timed once per batch, so the timing costs nothing measurable.
// The training phases sum to at most TrainSeconds; the rest (drawing the
// batch, augmentation, the epoch's bookkeeping) is not attributed.
type PhaseSeconds struct {
	// Encode is the standardisation of the batch and the encoder's
	// forward pass.
	Encode float64 `json:"encode"`
	// Solve is the DEQ layer's forward solve, its certificate included.
	Solve float64 `json:"solve"`
	// Readout is the readout, the loss and their gradients (down to the
	// gradient with respect to z*).
	Readout float64 `json:"readout"`
	// Backward is the rest of the gradient: the DEQ layer's backward pass
	// (the adjoint solve under implicit differentiation, one cell step
	// under the Jacobian-free gradient) with the cell's parameter
	// gradients, the training aids' (Jacobian regularisation, fixed-point
	// correction) and the encoder's backward pass.
	Backward float64 `json:"backward"`
	// Step is the optimiser step: the gradient's norm and clipping,
	// weight decay, Adam, the cell's projection and the checks of the
	// gradients and parameters.
	Step float64 `json:"step"`
	// Eval is the evaluation after the epoch (EvalSeconds: the test set
	// and the spectral measurement).
	Eval float64 `json:"eval"`
}

// Train returns the sum of the training phases (all but Eval).
func (p PhaseSeconds) Train() float64 { return p.Encode + p.Solve + p.Readout + p.Backward + p.Step }

// phaseClock accumulates the wall and processor times of the training
// phases of an epoch. It is kept apart from epochAcc, which checkpoints
// save, since times differ between runs.
type phaseClock struct {
	encode, solve, readout, backward, step phaseTime
	last                                   time.Time     // end of the previous phase
	lastCPU                                time.Duration // the process's processor time then
}

// phaseTime is the wall and processor time of a phase.
type phaseTime struct{ wall, cpu time.Duration }

// start marks the beginning of a batch's first phase.
func (c *phaseClock) start() { c.last, c.lastCPU = time.Now(), cputime.Process() }

// lap adds the times since the end of the previous phase (or start) to
// *phase.
func (c *phaseClock) lap(phase *phaseTime) {
	now, cpu := time.Now(), cputime.Process()
	phase.wall += now.Sub(c.last)
	phase.cpu += cpu - c.lastCPU
	c.last, c.lastCPU = now, cpu
}

// seconds returns the training phases' wall and processor seconds, with
// Eval zero.
func (c *phaseClock) seconds() (wall, cpu PhaseSeconds) {
	wall = PhaseSeconds{Encode: c.encode.wall.Seconds(), Solve: c.solve.wall.Seconds(), Readout: c.readout.wall.Seconds(),
		Backward: c.backward.wall.Seconds(), Step: c.step.wall.Seconds()}
	cpu = PhaseSeconds{Encode: c.encode.cpu.Seconds(), Solve: c.solve.cpu.Seconds(), Readout: c.readout.cpu.Seconds(),
		Backward: c.backward.cpu.Seconds(), Step: c.step.cpu.Seconds()}
	return wall, cpu
}

// clearTimes zeroes the wall times, as checkpoints store the epoch.
func (e *EpochMetrics) clearTimes() {
	e.EpochSeconds, e.TrainSeconds, e.EvalSeconds, e.Phases, e.PhaseCPU = 0, 0, 0, PhaseSeconds{}, PhaseSeconds{}
}

// LossGrowthFactor is the ratio of an epoch's mean training loss to the
// reference loss above which EpochMetrics.LossGrowth is set: two orders of
// magnitude.
const LossGrowthFactor = 100

// lossGrowth returns EpochMetrics.LossGrowth of an epoch of mean training
// loss loss, first being the first epoch's (loss itself for the first
// epoch) and classes the number of classes.
func lossGrowth(loss, first float64, classes int) float64 {
	ref := math.Log(float64(classes))
	if first > 0 && first < ref {
		ref = first
	}
	if !(ref > 0) || math.IsInf(loss, 0) || math.IsNaN(loss) {
		return 0
	}
	if g := loss / ref; g > LossGrowthFactor {
		return g
	}
	return 0
}

// TracePoint is one point of a residual trace.
type TracePoint struct {
	// Iter is the iteration (epoch for VR-GHAL), Calls the oracle calls
	// made so far and Residual the solver's residual there.
	Iter     int     `json:"iter"`
	Calls    int64   `json:"calls"`
	Residual float64 `json:"residual"`
}

// epochAcc accumulates the training part of an EpochMetrics. Its fields
// are exported for the checkpoint's encoding.
type epochAcc struct {
	Batches  int
	Skipped  int
	Examples int
	Correct  int
	LossSum  float64
	LR       float64
	Forward  solveAcc
	Backward solveAcc
	Trace    []TracePoint
	// The term evaluations of the used batches' forward and backward
	// passes.
	FwdTermEvals int64 `json:",omitempty"`
	BwdTermEvals int64 `json:",omitempty"`
	// The training aids' sums: the Jacobian estimates and the number of
	// batches that applied the regularisation, and the correction losses
	// weighted by examples.
	JacSum   float64 `json:",omitempty"`
	JacCount int     `json:",omitempty"`
	CorrSum  float64 `json:",omitempty"`
}

// finish returns the epoch's metrics without the evaluation.
func (a *epochAcc) finish(epoch int) EpochMetrics {
	e := EpochMetrics{Epoch: epoch, Batches: a.Batches, Skipped: a.Skipped, LR: a.LR, Trace: a.Trace}
	if a.Examples > 0 {
		e.TrainLoss = a.LossSum / float64(a.Examples)
		e.TrainAcc = float64(a.Correct) / float64(a.Examples)
		e.CorrectionLoss = a.CorrSum / float64(a.Examples)
	}
	if a.JacCount > 0 {
		e.JacFrobMean = a.JacSum / float64(a.JacCount)
	}
	e.Forward = a.Forward.summary()
	e.Backward = a.Backward.summary()
	e.FwdCallsMean, e.FwdItersMean, e.FwdSamplesMean = e.Forward.CallsMean, e.Forward.ItersMean, e.Forward.SamplesMean
	e.BwdCallsMean, e.BwdItersMean = e.Backward.CallsMean, e.Backward.ItersMean
	if used := a.Batches - a.Skipped; used > 0 {
		e.FwdTermEvalsMean = float64(a.FwdTermEvals) / float64(used)
		e.BwdTermEvalsMean = float64(a.BwdTermEvals) / float64(used)
	}
	e.CertBoundMax, e.CertBoundMean, e.CertMetFrac = e.Forward.CertBoundMax, e.Forward.CertBoundMean, e.Forward.CertMetFrac
	return e
}

// traceOf converts a solver trace.
func traceOf(t []solver.TracePoint) []TracePoint {
	out := make([]TracePoint, len(t))
	for i, p := range t {
		out[i] = TracePoint{Iter: p.Iter, Calls: p.Calls, Residual: p.Residual}
	}
	return out
}
