package solver

import (
	"cmp"
	"fmt"
	"math"
)

// VRGHAL is the variance-reduced gradual Halpern algorithm of the reference
// paper, for fixed points of a γ-Lipschitz operator T, γ ≤ 1, known only
// through a stochastic oracle, everything measured in the problem's norm.
//
// It runs epochs k = 1, 2, … (Settings.MaxIter of them at most) from x0. Epoch
// k makes up to J_k anchored steps y_{j+1} = λ_k y₀ + (1 − λ_k)T̃_j from the
// last epoch's point, where T̃_0 estimates T at the epoch start and each later
// T̃_j adds the mean of n_k minibatch differences τ(y_j; ξ) − τ(y_{j−1}; ξ'),
// each clipped to norm γ̄‖y_j − y_{j−1}‖.
// The accuracy ε_k, anchoring λ̄_k and failure share δ_k shrink by β each
// epoch; n_k and the minibatch sizes follow the oracle's Model.
//
// The method is anytime: Result.X is the last completed epoch's point. The
// run stops at Settings.Tol, MaxIter, MaxSamples (before an epoch that would
// not fit), MaxTime or cancellation. Success means a proven bound: with a
// VarianceBound or NoiseBound declared, each epoch's estimate at its point
// bounds the residual with probability at least 1 − δ over the whole run;
// otherwise a rigorous Certificate must confirm it (ToleranceEstimated if
// none does).
//
// Constants selects the schedules: TunedConstants (the default) keeps the
// algorithm and its guarantee with rigorous, cheaper estimators, a δ
// allocation, restarts and balanced sample sizes; PaperConstants are the
// paper's, for reproducing its Master Theorem. The page docs/vrghal.md
// describes the schedules, the regimes, the tuning constants and their
// proofs, with references to the paper.
type VRGHAL struct {
	// Beta is the factor β ∈ (0, 1) by which ε_k, λ̄_k and δ_k shrink each
	// epoch. Zero means DefaultVRGHALBeta.
	Beta float64
	// Delta is the failure probability δ ∈ (0, 1) of the whole run. Zero
	// means DefaultVRGHALDelta.
	Delta float64
	// Gamma is the Lipschitz bound γ̄ ∈ (0, 1] of T used for the inner
	// steps and the clipping. It must be at least T's Lipschitz constant in
	// the problem's norm. Zero means DefaultVRGHALGamma (nonexpansive T).
	Gamma float64
	// Eps0 is the initial accuracy scale ε₀ > 0 (DefaultVRGHALEps0 if zero).
	Eps0 float64
	// Lambda0 is the initial anchoring λ̄₀ > 0 (DefaultVRGHALLambda0 if zero).
	Lambda0 float64
	// Model is the oracle model to assume. Zero (UnspecifiedModel) means
	// Problem.Oracle's own Model(); assuming a stronger model than the
	// oracle declares is an error, a weaker one is allowed.
	Model Model
	// SampleScale multiplies every unit-sample size (bucket sizes and
	// minibatches m_{k,j}) under PaperConstants, and only the inner
	// minibatches m_{k,j} under TunedConstants. Zero means
	// DefaultVRGHALSampleScale, the paper's constants.
	SampleScale float64
	// Constants selects the schedules; zero means TunedConstants.
	Constants VRConstants
}

// VRConstants selects the constants of VR-GHAL's schedules.
type VRConstants int

const (
	// TunedConstants is the default: the estimators, δ allocation, ε₀,
	// restarts and balanced sizes described in docs/vrghal.md.
	TunedConstants VRConstants = iota
	// PaperConstants are the reference paper's constants of VR-GHAL,
	// exactly as its Master Theorem states them.
	PaperConstants
)

// String returns "tuned" or "paper".
func (c VRConstants) String() string {
	switch c {
	case TunedConstants:
		return "tuned"
	case PaperConstants:
		return "paper"
	}
	return fmt.Sprintf("VRConstants(%d)", int(c))
}

var (
	_ Method    = VRGHAL{}
	_ Validator = VRGHAL{}
)

// Defaults of VRGHAL, used where its fields are zero.
const (
	DefaultVRGHALBeta        = 0.5
	DefaultVRGHALDelta       = 0.05
	DefaultVRGHALGamma       = 1
	DefaultVRGHALEps0        = 1
	DefaultVRGHALLambda0     = 1
	DefaultVRGHALSampleScale = 1
)

// String implements Method.
func (VRGHAL) String() string { return "vrghal" }

// Validate implements Validator. It checks the settings and that Model is
// not stronger than the oracle's.
func (v VRGHAL) Validate(p Problem) error {
	if err := p.check(); err != nil {
		return err
	}
	_, err := v.config(p.Oracle.Model())
	return err
}

// vrConfig holds the settings of a VRGHAL with defaults filled in and the
// model resolved against the oracle's.
type vrConfig struct {
	beta, delta, gamma, eps0, lambda0, scale float64
	model                                    Model
	constants                                VRConstants
}

// config validates v and resolves it against an oracle of model om.
func (v VRGHAL) config(om Model) (vrConfig, error) {
	c := vrConfig{
		beta: cmp.Or(v.Beta, DefaultVRGHALBeta), delta: cmp.Or(v.Delta, DefaultVRGHALDelta),
		gamma: cmp.Or(v.Gamma, DefaultVRGHALGamma), eps0: cmp.Or(v.Eps0, DefaultVRGHALEps0),
		lambda0: cmp.Or(v.Lambda0, DefaultVRGHALLambda0), scale: cmp.Or(v.SampleScale, DefaultVRGHALSampleScale),
		model: om, constants: v.Constants,
	}
	if v.Constants != TunedConstants && v.Constants != PaperConstants {
		return c, fmt.Errorf("solver: VRGHAL.Constants = %v is not TunedConstants or PaperConstants", v.Constants)
	}
	if err := checkRange("VRGHAL.Beta", c.beta, 0, 1, true); err != nil {
		return c, err
	}
	if err := checkRange("VRGHAL.Delta", c.delta, 0, 1, true); err != nil {
		return c, err
	}
	if err := checkRange("VRGHAL.Gamma", c.gamma, 0, 1, false); err != nil {
		return c, err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Eps0", c.eps0}, {"Lambda0", c.lambda0}, {"SampleScale", c.scale}} {
		if !(f.v > 0) || math.IsInf(f.v, 1) {
			return c, fmt.Errorf("solver: VRGHAL.%s = %v must be positive and finite", f.name, f.v)
		}
	}
	if m := v.Model; m != UnspecifiedModel {
		switch {
		case !m.isOracleModel():
			return c, fmt.Errorf("solver: VRGHAL.Model = %v is not an oracle model", m)
		case m > om:
			return c, fmt.Errorf("solver: VRGHAL.Model = %v assumes more than Problem.Oracle declares (%v)", m, om)
		}
		c.model = m
	}
	return c, nil
}

// Run implements Method. It runs the tuned schedule (newTunedRun) or the
// paper's (newVRRun), as Constants selects.
func (v VRGHAL) Run(e *Env) error {
	c, err := v.config(e.Oracle().Model())
	if err != nil {
		return err
	}
	if c.constants == TunedConstants {
		return newTunedRun(e, c).run()
	}
	return newVRRun(e, c).run()
}
