package bench

import (
	"fmt"

	"github.com/deqgo/deq/solver"
)

// methodSpec describes a stochastic method of the stochastic section.
type methodSpec struct {
	// name identifies the method in the report ("vrghal/samplewise-lipschitz").
	name string
	// vr marks the VR-GHAL variants; the others are baselines.
	vr bool
	// perEps marks methods whose schedule depends on the target ε: they run
	// once per ε. The others are anytime and run once to the smallest ε.
	perEps bool
	// needs is the weakest oracle model the method accepts.
	needs solver.Model
	// settings describes the constants, for the report.
	settings func(c *calibration, s *settings) string
	// make returns the method for a problem and target ε.
	make func(c *calibration, s *settings, eps float64) solver.Method
}

// baselineC returns the constant σ²κ that the Halpern baselines scale their
// minibatches by (the variance of a unit sample in the problem's norm, times
// κ as solver.StochasticHalpern advises for non-Euclidean norms).
func baselineC(c *calibration) float64 {
	s := c.sigma()
	return s * s * c.kappa
}

// methodSpecs returns the methods of the stochastic section: VR-GHAL under
// each oracle model, then the baselines.
func methodSpecs() []methodSpec {
	var out []methodSpec
	for _, m := range []solver.Model{solver.BoundedVariance, solver.LipschitzInExpectation, solver.SamplewiseLipschitz} {
		out = append(out, methodSpec{
			name: "vrghal/" + m.String(), vr: true, needs: m,
			settings: func(c *calibration, s *settings) string {
				return fmt.Sprintf("γ̄ = %g, δ = %g, β = 1/2, ε₀ = 1, λ̄₀ = 1, SampleScale = %g, model %v", c.gamma, s.Delta, s.SampleScale, m)
			},
			make: func(c *calibration, s *settings, _ float64) solver.Method {
				return solver.VRGHAL{Gamma: c.gamma, Delta: s.Delta, SampleScale: s.SampleScale, Model: m}
			},
		})
	}
	out = append(out,
		methodSpec{
			name: "minibatch-km", needs: solver.BoundedVariance,
			settings: func(*calibration, *settings) string { return "α = 0.5, batch (k+1)²" },
			make:     func(*calibration, *settings, float64) solver.Method { return solver.MinibatchKM{} },
		},
		methodSpec{
			name: "stochastic-halpern", perEps: true, needs: solver.BoundedVariance,
			settings: func(c *calibration, _ *settings) string {
				return fmt.Sprintf("batch ⌈C(k+1)/ε²⌉, C = σ²κ = %.3g", baselineC(c))
			},
			make: func(c *calibration, _ *settings, eps float64) solver.Method {
				return solver.StochasticHalpern{Eps: eps, C: baselineC(c)}
			},
		},
		methodSpec{
			name: "page-halpern", perEps: true, needs: solver.LipschitzInExpectation,
			settings: func(c *calibration, _ *settings) string {
				return fmt.Sprintf("C1 = σ²κ = %.3g, C2 = γ² = %.3g", baselineC(c), c.gamma*c.gamma)
			},
			make: func(c *calibration, _ *settings, eps float64) solver.Method {
				return solver.PAGEHalpern{Eps: eps, C1: baselineC(c), C2: c.gamma * c.gamma}
			},
		},
	)
	return out
}
