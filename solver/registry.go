package solver

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
)

// MethodSettings are the settings of the registry's methods that do not
// depend on the problem, so that a configuration can hold them beside a
// MethodSpec (train.SolverConfig embeds them; the command's flags set
// them). Each method reads only the fields its summary mentions; the zero
// value of a field selects the method's own default.
type MethodSettings struct {
	// Delta is VR-GHAL's failure probability δ (VRGHAL.Delta).
	Delta float64
	// SampleScale multiplies VR-GHAL's sample sizes (VRGHAL.SampleScale;
	// zero means 1, the paper's constants).
	SampleScale float64
	// Memory is Anderson's or Broyden's memory (Anderson.Memory,
	// Broyden.Memory).
	Memory int
}

// Or returns s with each zero field replaced by base's, as cmp.Or does
// field by field: the settings of a configuration over those it defaults
// to.
func (s MethodSettings) Or(base MethodSettings) MethodSettings {
	return MethodSettings{
		Delta:       cmp.Or(s.Delta, base.Delta),
		SampleScale: cmp.Or(s.SampleScale, base.SampleScale),
		Memory:      cmp.Or(s.Memory, base.Memory),
	}
}

// MethodOptions are what a registry entry builds its Method from (see
// MethodInfo.New): the problem's constants and the MethodSettings. Each
// entry reads only the fields its summary mentions; the zero value of a
// field selects the method's own default.
type MethodOptions struct {
	// Gamma is a bound γ̄ ∈ (0, 1] on the Lipschitz constant of T: GHAL's,
	// VR-GHAL's and GrowingBatch's Gamma, and PAGEHalpern's C2 = γ̄².
	Gamma float64
	// Sigma2 is the variance bound σ² of a unit sample: StochasticHalpern's C
	// and PAGEHalpern's C1.
	Sigma2 float64
	// MethodSettings are the settings that do not depend on the problem.
	MethodSettings
}

// MethodInfo describes a method of the registry that Methods lists.
type MethodInfo struct {
	// Name is the method's name, its Method's String().
	Name string
	// Summary is a one-line description of the method as New builds it.
	Summary string
	// Stochastic methods run on a problem's stochastic oracle; the others
	// need a deterministic one (an exact operator).
	Stochastic bool
	// Needs is the weakest oracle model the method accepts: Deterministic
	// for the deterministic methods.
	Needs Model
	// Baseline marks the stochastic baselines that VR-GHAL is compared
	// with: they need a variance bound or give no high-probability
	// guarantee, so applications that solve without knowing the noise
	// (such as a deep equilibrium model) leave them out.
	Baseline bool
	// NeedsGamma marks the methods whose schedule (and, for VR-GHAL, whose
	// guarantee) rests on MethodOptions.Gamma being a true Lipschitz bound
	// γ̄ ≤ 1 of T.
	NeedsGamma bool
	// New returns the method configured from o.
	New func(o MethodOptions) Method
}

// ErrUnknownMethod is wrapped by the error LookupMethod returns for a name
// that is not in the registry.
var ErrUnknownMethod = errors.New("solver: unknown method")

// Methods returns the registry of the package's methods, in a fixed order:
// the deterministic methods, then VR-GHAL and GrowingBatch, then the
// stochastic baselines.
// The slice is new at every call.
func Methods() []MethodInfo {
	return []MethodInfo{
		{
			Name:    "picard",
			Summary: "Banach–Picard iteration x ← T(x) (exact operator)",
			Needs:   Deterministic,
			New:     func(MethodOptions) Method { return Picard{} },
		},
		{
			Name:    "km",
			Summary: "Krasnoselskii–Mann x ← (1−α)x + αT(x), α = 1/2 (exact operator)",
			Needs:   Deterministic,
			New:     func(MethodOptions) Method { return KrasnoselskiiMann{} },
		},
		{
			Name:    "halpern",
			Summary: "Halpern iteration, λ_k = 1/(k+2) (exact operator)",
			Needs:   Deterministic,
			New:     func(MethodOptions) Method { return Halpern{} },
		},
		{
			Name:       "ghal",
			Summary:    "gradual Halpern (GHAL) with γ̄ = the problem's γ, β = 1/2 (exact operator)",
			Needs:      Deterministic,
			NeedsGamma: true,
			New:        func(o MethodOptions) Method { return GHAL{Gamma: o.Gamma} },
		},
		{
			Name:    "anderson",
			Summary: fmt.Sprintf("Anderson acceleration, memory %d, ridge 1e-4 (exact operator)", DefaultAndersonMemory),
			Needs:   Deterministic,
			New:     func(o MethodOptions) Method { return Anderson{Memory: o.Memory} },
		},
		{
			Name:    "broyden",
			Summary: fmt.Sprintf("limited-memory Broyden, memory %d (exact operator)", DefaultBroydenMemory),
			Needs:   Deterministic,
			New:     func(o MethodOptions) Method { return Broyden{Memory: o.Memory} },
		},
		{
			Name:       "vrghal",
			Summary:    "VR-GHAL (variance-reduced gradual Halpern), γ̄ = the problem's γ, δ = --delta, β = 1/2; Success only on a residual bound ≤ ε",
			Stochastic: true,
			Needs:      BoundedVariance,
			NeedsGamma: true,
			New: func(o MethodOptions) Method {
				return VRGHAL{Gamma: o.Gamma, Delta: o.Delta, SampleScale: o.SampleScale}
			},
		},
		{
			Name:       "growing-batch",
			Summary:    fmt.Sprintf("minibatch Picard, batch %d growing ×%d per step, γ̄ = the problem's γ (1 if above); stops on a sampled bound, certified by one exact evaluation of a finite sum", DefaultGrowingBatch, DefaultGrowingGrowth),
			Stochastic: true,
			Needs:      BoundedVariance,
			New: func(o MethodOptions) Method {
				// Gamma only seeds the sampled bound; a γ̄ above one (or
				// none) is replaced by the default, 1.
				if !(o.Gamma <= 1) {
					o.Gamma = 0
				}
				return GrowingBatch{Gamma: o.Gamma}
			},
		},
		{
			Name:       "minibatch-km",
			Summary:    "minibatch stochastic Krasnoselskii–Mann, α = 0.5, batch (k+1)²",
			Stochastic: true,
			Needs:      BoundedVariance,
			Baseline:   true,
			New:        func(MethodOptions) Method { return MinibatchKM{} },
		},
		{
			Name:       "stochastic-halpern",
			Summary:    "stochastic Halpern, batch ⌈σ²(k+1)/ε²⌉ (Bravo–Contreras 2024)",
			Stochastic: true,
			Needs:      BoundedVariance,
			Baseline:   true,
			New:        func(o MethodOptions) Method { return StochasticHalpern{C: o.Sigma2} },
		},
		{
			Name:       "page-halpern",
			Summary:    "Halpern with PAGE variance reduction, C1 = σ², C2 = γ² (Cai et al. 2022)",
			Stochastic: true,
			Needs:      LipschitzInExpectation,
			Baseline:   true,
			New: func(o MethodOptions) Method {
				return PAGEHalpern{C1: o.Sigma2, C2: o.Gamma * o.Gamma}
			},
		},
	}
}

// MethodNames returns the names of the registry in the order of Methods.
func MethodNames() []string {
	var out []string
	for _, m := range Methods() {
		out = append(out, m.Name)
	}
	return out
}

// LookupMethod returns the registry entry named name. For a name not in the
// registry its error wraps ErrUnknownMethod and lists the accepted names.
func LookupMethod(name string) (MethodInfo, error) {
	for _, m := range Methods() {
		if m.Name == name {
			return m, nil
		}
	}
	return MethodInfo{}, fmt.Errorf("%w %q (want %s)", ErrUnknownMethod, name, strings.Join(MethodNames(), ", "))
}
