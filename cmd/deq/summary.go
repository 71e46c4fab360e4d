package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/blasimpl"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/train"
)

// trainSummary is the final report of `deq train`.
type trainSummary struct {
	Data      string `json:"data"`
	TrainSize int    `json:"train_size"`
	TestSize  int    `json:"test_size"`
	// Validation reports that the run evaluated on training images held
	// out by --val instead of the test set: TestSize and the final
	// metrics' test fields are then the validation set's.
	Validation bool   `json:"validation,omitempty"`
	BLAS       string `json:"blas"`
	Cell       string `json:"cell"`
	Hidden     int    `json:"hidden"`
	// Channels, Groups and Kernels describe the conv cell, EncoderLayers
	// the convolution blocks of its encoder (conv only).
	Channels      int `json:"channels,omitempty"`
	Groups        int `json:"groups,omitempty"`
	Kernels       int `json:"kernels,omitempty"`
	EncoderLayers int `json:"encoder_layers,omitempty"`
	// ReadoutHidden is the number of hidden units of the readout (0: a
	// linear readout).
	ReadoutHidden int `json:"readout_hidden,omitempty"`
	// Proven reports whether the cell proves its Lipschitz bound γ̄ in
	// Norm; when it does not, the certificates still bound the residuals,
	// but a contraction is not proven. Gamma is the cell's declared bound
	// (null under weight normalisation, which declares none).
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
	// Seed, Batch, LR, Schedule, WeightDecay and ClipNorm are the run's
	// seed and optimisation settings, defaults filled in (ClipNorm 0: no
	// clipping, as with the flag --clip-norm).
	Seed        uint64  `json:"seed"`
	Batch       int     `json:"batch"`
	LR          float64 `json:"lr"`
	Schedule    string  `json:"schedule"`
	WeightDecay float64 `json:"weight_decay"`
	ClipNorm    float64 `json:"clip_norm"`
	// Normalization is the dense or conv cell's normalisation; Precision
	// the precision of its matrix products; Shift the largest random
	// translation of the training images in pixels (0: none); Aids the
	// training aids of the run.
	Normalization string           `json:"normalization"`
	Precision     string           `json:"precision"`
	Shift         int              `json:"shift"`
	Aids          train.AidsConfig `json:"aids"`
	// Rotate is the largest random rotation of the training images in
	// degrees, omitted when none.
	Rotate float64 `json:"rotate,omitempty"`
	// Scale is their largest random relative change of scale, omitted
	// when none.
	Scale float64 `json:"scale,omitempty"`
	// Flip reports that the training images were mirrored left to right
	// at random, omitted when they were not.
	Flip bool `json:"flip,omitempty"`
	// Final is the last epoch's metrics line.
	Final train.EpochMetrics `json:"final"`
	// LossGrowth is the largest train.EpochMetrics.LossGrowth of the
	// run's epochs, omitted when no epoch's training loss grew by orders
	// of magnitude; Warnings are the run's warnings, one line each.
	LossGrowth float64  `json:"loss_growth,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// WallSeconds is the time of this process's training; SecondsPerEpoch
	// the mean over the epochs it ran.
	WallSeconds     float64 `json:"wall_seconds"`
	SecondsPerEpoch float64 `json:"seconds_per_epoch"`
}

// augmentPhrase describes a run's random translations, rotations and
// scalings and mirrorings of its training images (Config.Augment's Shift,
// Rotate, Scale and Flip), "" for none.
func augmentPhrase(shift int, rotate, scale float64, flip bool) string {
	var parts []string
	if flip {
		parts = append(parts, "mirrored at random")
	}
	if shift > 0 {
		parts = append(parts, "translated by up to "+plural(shift, "pixel"))
	}
	if rotate > 0 {
		parts = append(parts, fmt.Sprintf("rotated by up to %.4g°", rotate))
	}
	if scale > 0 {
		parts = append(parts, fmt.Sprintf("scaled by up to %.4g%%", 100*scale))
	}
	if len(parts) == 0 {
		return ""
	}
	return "training images " + strings.Join(parts, ", ")
}

// readoutPhrase describes a readout of n hidden units as ", a readout of
// n hidden units", and the linear readout (n = 0) as "".
func readoutPhrase(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(", a readout of %d hidden units", n)
}

// encoderPhrase describes a conv encoder of n ≥ 1 convolution blocks as
// ", a n-layer encoder", and n ≤ 0 (the other cells) as "".
func encoderPhrase(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(", a %d-layer encoder", n)
}

// kernelsPhrase describes a conv cell that averages n sampled kernels as
// ", n sampled kernels", and the deterministic cell (n ≤ 1) as "".
func kernelsPhrase(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(", %d sampled kernels", n)
}

// plural returns "n unit", with an s after unit unless n is 1.
func plural(n int, unit string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, unit)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// aids describes the training aids in use, "" for none.
func (s *trainSummary) aids() string {
	a, e := s.Aids, s.Final
	var parts []string
	if s.Normalization != layers.Projection.String() {
		parts = append(parts, "normalization "+s.Normalization)
	}
	if a.JacWeight > 0 {
		parts = append(parts, fmt.Sprintf("Jacobian regularisation %g every %d steps (‖∂f/∂z‖_F² %.4g)", a.JacWeight, a.JacFreq, e.JacFrobMean))
	}
	if a.CorrectionStates > 0 {
		parts = append(parts, fmt.Sprintf("fixed-point correction on %d states, γ %g (loss %.4f)", a.CorrectionStates, a.CorrectionGamma, e.CorrectionLoss))
	}
	if a.Dropout > 0 {
		parts = append(parts, fmt.Sprintf("dropout %g", a.Dropout))
	}
	return strings.Join(parts, "; ")
}

// besideGamma returns the declared bound γ̄ to print beside a spectral
// measurement, or why there is none.
func besideGamma(gamma float64, normalization string) string {
	if math.IsInf(gamma, 1) || gamma == 0 {
		return fmt.Sprintf("; no declared bound γ̄ (normalization %s)", normalization)
	}
	return fmt.Sprintf("; declared bound γ̄ %g", gamma)
}

func summarize(data *datasets.Data, tr *train.Trainer, res *train.Result, wall time.Duration) *trainSummary {
	c := tr.Config()
	s := &trainSummary{
		Data: data.Name, TrainSize: data.Train.Len(), TestSize: data.Test.Len(), BLAS: blasimpl.Name,
		Cell: c.Model.Cell.String(), Hidden: c.Model.Hidden, Norm: c.Model.Norm.String(), Gamma: number(tr.Model().Cell().Gamma()),
		Params: tr.Model().NumParams(), Solver: c.Forward.Method.String(), Tol: number(c.Forward.Tol),
		Backward: c.Backward.Mode.String(), EvalSolver: c.Eval.Method.String(), EvalTol: number(c.Eval.Tol),
		Epochs: len(res.Epochs), WallSeconds: wall.Seconds(), Proven: tr.Model().Proven(),
		Normalization: c.Model.Normalization.String(), Precision: c.Model.Precision.String(), Aids: c.Aids,
		Shift: max(c.Augment.Shift, 0), Rotate: c.Augment.Rotate, Scale: c.Augment.Scale, Flip: c.Augment.Flip,
		ReadoutHidden: c.Model.ReadoutHidden,
		Seed:          c.Seed, Batch: c.BatchSize, LR: c.LR, Schedule: c.Schedule.String(),
		WeightDecay: c.WeightDecay, ClipNorm: max(c.ClipNorm, 0),
	}
	if c.Model.Cell == train.ConvCell {
		s.Hidden = tr.Model().Cell().Shape().HiddenLen()
		s.Channels, s.Groups, s.Kernels = c.Model.Channels, c.Model.Groups, c.Model.Kernels
		s.EncoderLayers = c.Model.EncoderLayers
	}
	if c.Backward.Mode == deq.Implicit {
		s.Backward += " (" + c.Backward.Solver.Method.String() + ")"
	}
	if f := res.Final(); f != nil {
		s.Final = *f
	}
	for i := range res.Epochs {
		if e := &res.Epochs[i]; e.LossGrowth > s.LossGrowth {
			if s.LossGrowth == 0 {
				s.Warnings = append(s.Warnings, lossGrowthWarning(e, c.LR))
			}
			s.LossGrowth = e.LossGrowth
		}
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
	set := evalSetName(s.Validation)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s accuracy\t%.2f%% (%d %s images) after %s; train accuracy %.2f%%, loss %.4f\n",
		set, 100*e.TestAcc, s.TestSize, set, plural(s.Epochs, "epoch"), 100*e.TrainAcc, e.TrainLoss)
	fmt.Fprintf(tw, "data\t%s: %d training, %d %s images; BLAS %s\n", s.Data, s.TrainSize, s.TestSize, set, s.BLAS)
	proof := "proven"
	if s.Proven && s.Precision == layers.Float32.String() {
		proof += " (certified on the float64 map)"
	}
	if !s.Proven {
		proof = "not proven"
		var why []string
		if s.Groups > 0 {
			why = append(why, "GroupNorm")
		}
		if s.Precision == layers.Float32.String() {
			why = append(why, "float32 products")
		}
		if len(why) > 0 {
			proof += " (" + strings.Join(why, ", ") + ")"
		}
	}
	conv := ""
	if s.Channels > 0 {
		conv = fmt.Sprintf(" (%d channels, %d GroupNorm groups%s%s)", s.Channels, max(s.Groups, 0), kernelsPhrase(s.Kernels), encoderPhrase(s.EncoderLayers))
	}
	bound := fmt.Sprintf("γ̄ %g", float64(s.Gamma))
	if math.IsInf(float64(s.Gamma), 1) {
		bound = "no bound γ̄ (weight normalisation)"
	}
	// The precision is always named: its default depends on the cell (and
	// for the conv cell on the solvers).
	prec := ", " + s.Precision + " matrix products"
	shift := augmentPhrase(s.Shift, s.Rotate, s.Scale, s.Flip)
	if shift != "" {
		shift = "; " + shift
	}
	fmt.Fprintf(tw, "model\t%s cell%s, %d hidden%s%s, %s in %s, %s; %d parameters%s\n", s.Cell, conv, s.Hidden, prec, readoutPhrase(s.ReadoutHidden), bound, s.Norm, proof, s.Params, shift)
	fmt.Fprintf(tw, "forward\t%s, tol %g: %.1f calls%s, %.1f iterations per batch; %d of %d batches unconverged, %d skipped\n",
		s.Solver, float64(s.Tol), e.FwdCallsMean, float64Phrase(e.Forward), e.FwdItersMean, e.Forward.Unconverged, e.Batches, e.Skipped)
	fmt.Fprintf(tw, "certificates\ttraining (last epoch): ‖f(z) − z‖ ≤ %.3g max, %.3g mean; %.1f%% of batches ≤ tol%s\n",
		e.CertBoundMax, e.CertBoundMean, 100*e.CertMetFrac, certRules(e.Forward))
	fmt.Fprintf(tw, "\t%s (%s, tol %g%s): ‖f(z) − z‖ ≤ %.3g max, %.3g mean; %.1f%% of batches ≤ tol%s\n",
		set, s.EvalSolver, float64(s.EvalTol), float64Phrase(e.Test), e.Test.CertBoundMax, e.Test.CertBoundMean, 100*e.Test.CertMetFrac, certRules(e.Test))
	fmt.Fprintf(tw, "backward\t%s: %.1f iterations, %.1f calls per batch\n", s.Backward, e.BwdItersMean, e.BwdCallsMean)
	fmt.Fprintf(tw, "terms\t%.4g forward, %.4g backward term evaluations per batch (one term on the whole batch; certificate included)", e.FwdTermEvalsMean, e.BwdTermEvalsMean)
	if e.TermRelVar > 0 {
		fmt.Fprintf(tw, "; single-term relative variance σ²/‖z*‖² %.3g", e.TermRelVar)
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "jacobian\tspectral radius %.4g, spectral norm %.4g at z* (first %d %s images)%s\n",
		e.SpectralRadius, e.SpectralNorm, train.SpectralBatch, set, besideGamma(float64(s.Gamma), s.Normalization))
	if aids := s.aids(); aids != "" {
		fmt.Fprintf(tw, "aids\t%s\n", aids)
	}
	fmt.Fprintf(tw, "time\t%.1f s, %.1f s per epoch\n", s.WallSeconds, s.SecondsPerEpoch)
	if e.EpochSeconds > 0 {
		p, c := e.Phases, e.PhaseCPU
		fmt.Fprintf(tw, "phases\tlast epoch: encoder %s, forward solve %s, readout and loss %s, backward %s, optimiser %s, other %.3g s; evaluation %s\n",
			phaseTime(p.Encode, c.Encode), phaseTime(p.Solve, c.Solve), phaseTime(p.Readout, c.Readout), phaseTime(p.Backward, c.Backward),
			phaseTime(p.Step, c.Step), max(e.TrainSeconds-p.Train(), 0), phaseTime(p.Eval, c.Eval))
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(tw, "warning\t%s\n", strings.TrimPrefix(w, "warning: "))
	}
	return tw.Flush()
}

// phaseTime gives a phase's wall seconds and, where its processor
// seconds cpu are known (positive), the cores it kept busy on average.
func phaseTime(wall, cpu float64) string {
	if cpu <= 0 || wall <= 0 {
		return fmt.Sprintf("%.3g s", wall)
	}
	return fmt.Sprintf("%.3g s (%.1f cores)", wall, cpu/wall)
}

// float64Phrase says how many calls per solve ran on the float64 map of
// solves certified on it, or "" when none did.
func float64Phrase(s train.SolveSummary) string {
	if s.Float64CallsMean == 0 {
		return ""
	}
	return fmt.Sprintf(" (%.2g on the float64 map)", s.Float64CallsMean)
}
