package train

import (
	"cmp"
	"fmt"
	"math"

	"github.com/deqgo/deq/deq"
)

// DefaultCorrectionGamma is the decay γ of fixed-point correction where
// AidsConfig.CorrectionGamma is zero (TorchDEQ's default).
const DefaultCorrectionGamma = 0.8

// AidsConfig configures the training aids of the DEQ literature that the
// training step composes with the main loss (see Trainer, "Training
// aids"). The zero value of every field turns its aid off; a checkpoint
// written before these fields existed loads as a run without aids.
type AidsConfig struct {
	// JacWeight is the weight w of the Jacobian regularisation of
	// "Stabilizing Equilibrium Models by Jacobian Regularization" by
	// Shaojie Bai, Vladlen Koltun and J. Zico Kolter (ICML 2021): every
	// JacFreq-th step adds w·R to the loss, R the one-probe Hutchinson
	// estimate of the mean over examples of ‖∂f/∂z‖_F² at z*
	// (deq.Layer.JacobianRegularize), with its exact gradient. Zero means
	// none. Only cells with a fused Jacobian penalty support it (dense);
	// the others are refused with a *FieldError naming this field.
	JacWeight float64 `json:",omitempty"`
	// JacFreq applies the Jacobian regularisation at every JacFreq-th
	// optimiser step (steps 0, JacFreq, 2·JacFreq, …). Zero means 1 when
	// JacWeight is positive; it must be zero otherwise.
	JacFreq int `json:",omitempty"`
	// CorrectionStates is the number K of states z_k of the forward
	// solver's trajectory (the last being z*) at which fixed-point
	// correction, from "Deep Equilibrium Optical Flow Estimation" by
	// Shaojie Bai, Zhengyang Geng, Yash Savani and J. Zico Kolter (CVPR
	// 2022), applies the readout's loss to f(z_k, x), with weights
	// γ^(K−1−k) normalised to sum to one, and passes its gradient through
	// the one-step path (each z_k held constant). Zero means none.
	CorrectionStates int `json:",omitempty"`
	// CorrectionGamma is the decay γ ∈ (0, 1] of the correction weights.
	// Zero means DefaultCorrectionGamma when CorrectionStates is positive;
	// it must be zero otherwise.
	CorrectionGamma float64 `json:",omitempty"`
	// Dropout is the probability p ∈ [0, 1) of DEQ dropout
	// (deq.Settings.Dropout), the variational dropout of "Deep Equilibrium
	// Models" by Shaojie Bai, J. Zico Kolter and Vladlen Koltun (NeurIPS
	// 2019): one mask per training batch, drawn from the batch's forward
	// seed (redrawn for every batch), fixed across the solver's iterations
	// so that the fixed point is defined, off in evaluation. A fixed mask
	// is a deterministic map with its own fixed point, unlike the sampled
	// oracle of a stochastic cell, which redraws its terms at every call
	// and is unbiased for the exact operator. The mask scales γ̄ by
	// 1/(1 − p); GHAL and VR-GHAL are refused in training, naming this
	// field, when that exceeds one. Zero means none.
	Dropout float64 `json:",omitempty"`
}

// defaults validates a and fills its defaults.
func (a AidsConfig) defaults() (AidsConfig, error) {
	d := a
	switch {
	case a.JacWeight < 0 || notFinite(a.JacWeight):
		return d, fieldErr("Aids.JacWeight", a.JacWeight, "must be non-negative and finite")
	case a.JacFreq < 0:
		return d, fieldErr("Aids.JacFreq", a.JacFreq, "must not be negative")
	case a.JacFreq > 0 && a.JacWeight == 0:
		return d, fieldErr("Aids.JacFreq", a.JacFreq, "applies only with a positive Aids.JacWeight")
	case a.CorrectionStates < 0:
		return d, fieldErr("Aids.CorrectionStates", a.CorrectionStates, "must not be negative")
	case a.CorrectionGamma < 0 || a.CorrectionGamma > 1 || math.IsNaN(a.CorrectionGamma):
		return d, fieldErr("Aids.CorrectionGamma", a.CorrectionGamma, "must lie in (0, 1]")
	case a.CorrectionGamma > 0 && a.CorrectionStates == 0:
		return d, fieldErr("Aids.CorrectionGamma", a.CorrectionGamma, "applies only with a positive Aids.CorrectionStates")
	case a.Dropout < 0 || a.Dropout >= 1 || math.IsNaN(a.Dropout):
		return d, fieldErr("Aids.Dropout", a.Dropout, "must lie in [0, 1)")
	}
	if a.JacWeight > 0 {
		d.JacFreq = cmp.Or(a.JacFreq, 1)
	}
	if a.CorrectionStates > 0 {
		d.CorrectionGamma = cmp.Or(a.CorrectionGamma, DefaultCorrectionGamma)
	}
	return d, nil
}

// jacobian adds the Jacobian regularisation term JacWeight·R at the fixed
// point of sol to the step: R's gradient through the cell's parameters
// directly, through z* by adding ∂R/∂z* to the cotangent w.gz of the
// backward pass that follows, and through the encoder by w.jdx (added to
// the encoder's cotangent after that pass). It returns the reason to skip
// the batch, or an error.
func (t *Trainer) jacobian(sol *deq.Solution, w *work, bm *BatchMetrics) (string, error) {
	if w.jdz == nil {
		w.jdz, w.jdx = make([]float64, len(w.gz)), make([]float64, len(w.de))
	}
	est, err := t.layer.JacobianRegularize(sol, t.cfg.Aids.JacWeight, &deq.JacobianRegOptions{Seed: streamJacobian}, w.jdz, w.jdx)
	if err != nil {
		return "", fmt.Errorf("train: epoch %d batch %d: Config.Aids.JacWeight: %w", t.epoch+1, t.batch, err)
	}
	if notFinite(est.Value) {
		return "", t.nonFiniteValue(fmt.Sprintf("the Jacobian penalty %v", est.Value))
	}
	addTo(w.gz, w.jdz)
	bm.JacApplied, bm.JacFrob = true, est.Value
	return "", nil
}

// correction adds fixed-point correction to the step: the readout's mean
// cross-entropy at f(z_k, x) for the K collected states z_k of sol,
// weighted by γ^(K−1−k)/Σ_j γ^(K−1−j), with the one-step gradient (each z_k
// held constant) into the readout's and the cell's parameters and into the
// encoder's cotangent w.de. It returns the reason to skip the batch, or an
// error.
func (t *Trainer) correction(sol *deq.Solution, w *work, labels []int, bm *BatchMetrics) (string, error) {
	m := t.model
	n := len(labels)
	fs, err := t.layer.CorrectionForward(sol)
	if err != nil {
		return "", fmt.Errorf("train: epoch %d batch %d: Config.Aids.CorrectionStates: %w", t.epoch+1, t.batch, err)
	}
	k := len(fs)
	for len(w.gs) < k {
		w.gs = append(w.gs, make([]float64, len(w.gz)))
	}
	if w.cdx == nil {
		w.cdx = make([]float64, len(w.de))
	}
	weights := correctionWeights(w.cw[:0], k, t.cfg.Aids.CorrectionGamma)
	w.cw = weights
	loss := 0.0
	for i, f := range fs {
		m.readout(w, f, n)
		l, _ := crossEntropy(w.dlogits, w.logits, labels, m.Classes)
		loss += weights[i] * l / float64(n)
		for j := range w.dlogits {
			w.dlogits[j] *= weights[i]
		}
		m.readoutBackward(w, f, n)
		copy(w.gs[i], w.gz)
	}
	bm.CorrectionLoss = loss
	if notFinite(loss) {
		return "", t.nonFiniteValue(fmt.Sprintf("the correction loss %v", loss))
	}
	if _, err := t.layer.CorrectionBackward(sol, w.gs[:k], w.cdx); err != nil {
		return "", fmt.Errorf("train: epoch %d batch %d: Config.Aids.CorrectionStates: %w", t.epoch+1, t.batch, err)
	}
	addTo(w.de, w.cdx)
	return "", nil
}

// correctionWeights appends to dst the k weights γ^(k−1−i)/Σ_j γ^(k−1−j),
// i = 0, …, k−1, of fixed-point correction: decaying geometrically from
// the last state (the fixed point) back, normalised to sum to one.
func correctionWeights(dst []float64, k int, gamma float64) []float64 {
	sum := 0.0
	for i := range k {
		v := math.Pow(gamma, float64(k-1-i))
		dst = append(dst, v)
		sum += v
	}
	for i := range dst {
		dst[i] /= sum
	}
	return dst
}
