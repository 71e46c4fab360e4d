package main

import (
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// methodOptions returns what the solvers of `deq solve` are built from: the
// flags (--delta is also VR-GHAL's δ, --sample-scale its multiplier on the
// paper's sample sizes) and the constants of the suite problem p (its γ and
// its noise variance σ²). The solvers themselves are solver.Methods().
func (f solveFlags) methodOptions(p *problems.Problem) solver.MethodOptions {
	return solver.MethodOptions{Gamma: p.Gamma, Delta: f.delta, SampleScale: f.sampleScale, Sigma2: p.Sigma * p.Sigma}
}
