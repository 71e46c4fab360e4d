package main

import (
	"github.com/spf13/pflag"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// bindMethod registers the flags of `deq solve` that choose the method and
// the norm, each bound to the library's value: --solver to a
// solver.MethodSpec, --norm to a solver.NormSpec, --delta (also the
// certificate's δ) and --sample-scale to the solver.MethodSettings fields.
// The solvers themselves are solver.Methods().
func (f *solveFlags) bindMethod(fl *pflag.FlagSet) {
	fl.Var(&textValue{&f.method}, "solver", "solver (see --list)")
	fl.Var(&textValue{&f.norm}, "norm", "norm: l2, lp:P, linf or schatten:P (default: the problem's)")
	fl.Float64Var(&f.settings.Delta, "delta", solver.DefaultCertDelta, "failure probability δ ∈ (0, 1) of the certificate")
	fl.Float64Var(&f.settings.SampleScale, "sample-scale", 1, "vrghal: multiplier on the paper's sample sizes (> 0; 1 = the paper's constants)")
}

// methodOptions returns what the method of `deq solve` is built from: the
// settings of the flags and the constants of the suite problem p (its γ and
// its noise variance σ²).
func (f solveFlags) methodOptions(p *problems.Problem) solver.MethodOptions {
	return solver.MethodOptions{Gamma: p.Gamma, Sigma2: p.Sigma * p.Sigma, MethodSettings: f.settings}
}

// normFlag is the value of --norm: a solver.NormSpec, unset (the
// problem's default norm) until the flag is given.
type normFlag struct {
	spec solver.NormSpec
	set  bool
}

// UnmarshalText implements encoding.TextUnmarshaler with
// solver.ParseNormSpec; on error it leaves n alone.
func (n *normFlag) UnmarshalText(text []byte) error {
	if err := n.spec.UnmarshalText(text); err != nil {
		return err
	}
	n.set = true
	return nil
}

// String returns the canonical name of the norm, or "" if it is unset.
func (n *normFlag) String() string {
	if !n.set {
		return ""
	}
	return n.spec.String()
}
