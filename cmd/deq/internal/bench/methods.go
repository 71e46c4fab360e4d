package bench

import (
	"fmt"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/solver"
)

// methodSpec describes a stochastic method of the stochastic section.
type methodSpec struct {
	// name identifies the method in the report: the registry name, for VR-GHAL
	// with its oracle model (report.VRGHALName).
	name string
	// vr marks the VR-GHAL variants; the others are baselines.
	vr bool
	// perEps marks methods whose schedule depends on the target ε: they run
	// once per ε. The others are anytime and run once to the smallest ε.
	perEps bool
	// needs is the weakest oracle model the method accepts.
	needs solver.Model
	// make returns the method for a problem and target ε.
	make func(c *calibration, s *settings, eps float64) solver.Method
}

// settings describes the method's constants on a problem, for the report.
func (ms methodSpec) settings(c *calibration, s *settings) string {
	return describe(ms.make(c, s, s.epsMin()))
}

// baselineC returns the constant σ²κ that the Halpern baselines scale their
// minibatches by (the variance of a unit sample in the problem's norm, times
// κ as solver.StochasticHalpern advises for non-Euclidean norms).
func baselineC(c *calibration) float64 {
	s := c.sigma()
	return s * s * c.kappa
}

// methodOptions returns the registry options of a problem's methods.
func methodOptions(c *calibration, s *settings) solver.MethodOptions {
	return solver.MethodOptions{Gamma: c.gamma, Sigma2: baselineC(c), MethodSettings: solver.MethodSettings{Delta: s.Delta, SampleScale: s.SampleScale}}
}

// methodSpecs returns the methods of the stochastic section, the solver
// registry's stochastic methods in its order: VR-GHAL under each oracle
// model, then the baselines. GrowingBatch, whose certified stop needs a
// finite sum that the section's problems do not declare, is measured in
// the regime section instead.
func methodSpecs() []methodSpec {
	var out []methodSpec
	for _, info := range solver.Methods() {
		_, growing := info.New(solver.MethodOptions{}).(solver.GrowingBatch)
		switch {
		case !info.Stochastic || growing:
		case info.Baseline:
			_, perEps := withEps(info.New(solver.MethodOptions{}), 0)
			out = append(out, methodSpec{
				name: info.Name, perEps: perEps, needs: info.Needs,
				make: func(c *calibration, s *settings, eps float64) solver.Method {
					m, _ := withEps(info.New(methodOptions(c, s)), eps)
					return m
				},
			})
		default:
			for _, m := range []solver.Model{solver.BoundedVariance, solver.LipschitzInExpectation, solver.SamplewiseLipschitz} {
				out = append(out, methodSpec{
					// VR-GHAL runs once per ε, with Tol = ε, so that
					// its own rigorous bound can stop it (see runTask).
					name: report.VRGHALName(m), vr: true, perEps: true, needs: m,
					make: func(c *calibration, s *settings, _ float64) solver.Method {
						return withModel(info.New(methodOptions(c, s)), m)
					},
				})
			}
		}
	}
	return out
}

// withEps returns m aimed at the accuracy eps when its schedule depends on
// a target accuracy, and whether it does.
func withEps(m solver.Method, eps float64) (solver.Method, bool) {
	switch m := m.(type) {
	case solver.StochasticHalpern:
		m.Eps = eps
		return m, true
	case solver.PAGEHalpern:
		m.Eps = eps
		return m, true
	}
	return m, false
}

// withModel returns VR-GHAL m run under the oracle model model.
func withModel(m solver.Method, model solver.Model) solver.Method {
	if v, ok := m.(solver.VRGHAL); ok {
		v.Model = model
		return v
	}
	return m
}

// describe states a stochastic method's constants for the report.
func describe(m solver.Method) string {
	switch m := m.(type) {
	case solver.VRGHAL:
		if m.Constants == solver.PaperConstants {
			return fmt.Sprintf("paper constants, γ̄ = %g, δ = %g, β = 1/2, ε₀ = 1, λ̄₀ = 1, SampleScale = %g, model %v", m.Gamma, m.Delta, m.SampleScale, m.Model)
		}
		return fmt.Sprintf("tuned constants, γ̄ = %g, δ = %g, β = 1/2, ε₀ from a pilot estimate, Tol = ε, inner SampleScale = %g, model %v", m.Gamma, m.Delta, m.SampleScale, m.Model)
	case solver.MinibatchKM:
		return "α = 0.5, batch (k+1)²"
	case solver.StochasticHalpern:
		return fmt.Sprintf("batch ⌈C(k+1)/ε²⌉, C = σ²κ = %.3g", m.C)
	case solver.PAGEHalpern:
		return fmt.Sprintf("C1 = σ²κ = %.3g, C2 = γ² = %.3g", m.C1, m.C2)
	}
	return m.String()
}
