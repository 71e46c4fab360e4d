package train

import (
	"cmp"
	"math"
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
