package solver

import "fmt"

// Picard is the Banach–Picard iteration x_{k+1} = T(x_k): KrasnoselskiiMann
// with α = 1, under its own name. It converges linearly for contractions and
// may cycle for nonexpansive maps. It needs a deterministic oracle.
type Picard struct{}

var (
	_ Method    = Picard{}
	_ Validator = Picard{}
)

// String implements Method.
func (Picard) String() string { return "picard" }

// Validate implements Validator.
func (Picard) Validate(p Problem) error { return requireDeterministic("Picard", p) }

// Run implements Method: it runs KrasnoselskiiMann{Alpha: 1}.
func (Picard) Run(e *Env) error { return KrasnoselskiiMann{Alpha: 1}.Run(e) }

// requireDeterministic returns an error naming the method if p is malformed
// (see Problem.check) or its oracle is stochastic.
func requireDeterministic(method string, p Problem) error {
	if err := p.check(); err != nil {
		return err
	}
	if m := p.Oracle.Model(); m != Deterministic {
		return fmt.Errorf("solver: %s needs a deterministic oracle, Problem.Oracle has model %v (use VRGHAL or a stochastic baseline, or the oracle's exact operator)", method, m)
	}
	return nil
}
