package main

import (
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// solverOptions are what a solver constructor may read: the flags of
// `deq solve` and the problem being solved.
type solverOptions struct {
	// Eps is --eps, the residual tolerance (also Settings.Tol).
	Eps float64
	// Delta is --delta, the certificate's failure probability (also VR-GHAL's δ).
	Delta float64
	// SampleScale is --sample-scale, VR-GHAL's multiplier on the paper's
	// sample sizes.
	SampleScale float64
	// Problem is the suite problem: its Gamma, Sigma and Model.
	Problem *problems.Problem
}

// solverEntry describes one solver of the command line.
type solverEntry struct {
	// name is the value of --solver.
	name string
	// summary is the one-line description --list prints.
	summary string
	// stochastic solvers run on the problem's stochastic oracle; the others
	// run on its exact operator (the JSON says "oracle": "exact").
	stochastic bool
	// needs is the weakest oracle model a stochastic solver accepts.
	needs solver.Model
	// tolScale multiplies --eps to give Settings.Tol (zero means 1).
	// VR-GHAL stops when its estimated residual is at most ε/2, leaving the
	// other half of ε for the estimate's error.
	tolScale float64
	// build returns the configured method.
	build func(o solverOptions) (solver.Method, error)
}

// solverRegistry returns the solvers of `deq solve`, in the order --list
// prints them.
func solverRegistry() []solverEntry {
	return []solverEntry{
		{
			name:    "picard",
			summary: "Banach–Picard iteration x ← T(x) (exact operator)",
			needs:   solver.Deterministic,
			build:   func(solverOptions) (solver.Method, error) { return solver.Picard{}, nil },
		},
		{
			name:    "km",
			summary: "Krasnoselskii–Mann x ← (1−α)x + αT(x), α = 1/2 (exact operator)",
			needs:   solver.Deterministic,
			build:   func(solverOptions) (solver.Method, error) { return solver.KrasnoselskiiMann{}, nil },
		},
		{
			name:    "halpern",
			summary: "Halpern iteration, λ_k = 1/(k+2) (exact operator)",
			needs:   solver.Deterministic,
			build:   func(solverOptions) (solver.Method, error) { return solver.Halpern{}, nil },
		},
		{
			name:    "ghal",
			summary: "gradual Halpern (GHAL) with γ̄ = the problem's γ, β = 1/2 (exact operator)",
			needs:   solver.Deterministic,
			build: func(o solverOptions) (solver.Method, error) {
				return solver.GHAL{Gamma: o.Problem.Gamma}, nil
			},
		},
		{
			name:    "anderson",
			summary: "Anderson acceleration, memory 5, ridge 1e-4 (exact operator)",
			needs:   solver.Deterministic,
			build:   func(solverOptions) (solver.Method, error) { return solver.Anderson{}, nil },
		},
		{
			name:    "broyden",
			summary: "limited-memory Broyden, memory 30 (exact operator)",
			needs:   solver.Deterministic,
			build:   func(solverOptions) (solver.Method, error) { return solver.Broyden{}, nil },
		},
		{
			name:       "vrghal",
			summary:    "VR-GHAL (variance-reduced gradual Halpern), γ̄ = the problem's γ, δ = --delta, β = 1/2; stops at estimated residual ε/2",
			stochastic: true,
			needs:      solver.BoundedVariance,
			tolScale:   0.5,
			build: func(o solverOptions) (solver.Method, error) {
				return solver.VRGHAL{Gamma: o.Problem.Gamma, Delta: o.Delta, SampleScale: o.SampleScale}, nil
			},
		},
		{
			name:       "minibatch-km",
			summary:    "minibatch stochastic Krasnoselskii–Mann, α = 0.5, batch (k+1)²",
			stochastic: true,
			needs:      solver.BoundedVariance,
			build:      func(solverOptions) (solver.Method, error) { return solver.MinibatchKM{}, nil },
		},
		{
			name:       "stochastic-halpern",
			summary:    "stochastic Halpern, batch ⌈σ²(k+1)/ε²⌉ (Bravo–Contreras 2024)",
			stochastic: true,
			needs:      solver.BoundedVariance,
			build: func(o solverOptions) (solver.Method, error) {
				return solver.StochasticHalpern{C: o.Problem.Sigma * o.Problem.Sigma}, nil
			},
		},
		{
			name:       "page-halpern",
			summary:    "Halpern with PAGE variance reduction, C1 = σ², C2 = γ² (Cai et al. 2022)",
			stochastic: true,
			needs:      solver.LipschitzInExpectation,
			build: func(o solverOptions) (solver.Method, error) {
				return solver.PAGEHalpern{C1: o.Problem.Sigma * o.Problem.Sigma, C2: o.Problem.Gamma * o.Problem.Gamma}, nil
			},
		},
	}
}

// lookupSolver returns the registry entry named name.
func lookupSolver(name string) (solverEntry, bool) {
	for _, s := range solverRegistry() {
		if s.name == name {
			return s, true
		}
	}
	return solverEntry{}, false
}

func solverNames() []string {
	var out []string
	for _, s := range solverRegistry() {
		out = append(out, s.name)
	}
	return out
}
