package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// checkData validates the training and test sets.
func checkData(train, test *datasets.Dataset) error {
	if train == nil || test == nil {
		return errors.New("train: nil training or test set")
	}
	for _, d := range []*datasets.Dataset{train, test} {
		if err := d.Validate(); err != nil {
			return err
		}
		if d.Len() == 0 {
			return fmt.Errorf("train: %s is empty", d.Name)
		}
	}
	if train.Dim() != test.Dim() || train.Classes != test.Classes {
		return fmt.Errorf("train: training images have %d pixels and %d classes, test images %d and %d",
			train.Dim(), train.Classes, test.Dim(), test.Classes)
	}
	return nil
}

// checkProven refuses the stochastic solver for a conv cell whose Lipschitz
// bound is not proven (with GroupNorm, weight normalisation or float32
// products, or in a norm other than ℓ2 and Schatten-2): its guarantees
// rest on that bound. The deterministic solvers
// run either way.
func checkProven(c Config, m *Model) error {
	for _, s := range []struct {
		field string
		m     solver.MethodSpec
	}{{"Forward.Method", c.Forward.Method}, {"Backward.Solver.Method", c.Backward.Solver.Method}, {"Eval.Method", c.Eval.Method}} {
		adjoint := s.field == "Backward.Solver.Method"
		if (adjoint && c.Backward.Mode != deq.Implicit) || !m.lacksProof(s.m, adjoint) {
			continue
		}
		if c.Model.Normalization == layers.WeightNorm {
			return fieldErr("Model.Normalization", c.Model.Normalization, fmt.Sprintf("proves no Lipschitz bound, which %s = %v needs (the conv cell has one only under the projection, without GroupNorm, in l2 or schatten:2)", s.field, s.m))
		}
		return fieldErr(s.field, s.m, m.unprovenReason())
	}
	return nil
}

// lacksProof reports whether meth's guarantees rest on a Lipschitz bound
// that the model's cell does not prove: meth is stochastic and the cell is
// a conv cell without a proven bound for the solve (a forward one, or with
// adjoint the adjoint solve, which runs on the cell's own map, float32
// products included). The deterministic solvers run either way.
func (m *Model) lacksProof(meth solver.MethodSpec, adjoint bool) bool {
	proven := m.Proven()
	if adjoint {
		norm, err := m.norm()
		proven = err == nil && m.cell.Proven(norm)
	}
	return (m.Config.Cell == ConvCell || m.custom) && !proven && meth.Info().Stochastic
}

// lacksGamma reports whether meth needs a Lipschitz bound γ̄ (GHAL,
// VR-GHAL) that the model's cell does not declare (weight normalisation).
func (m *Model) lacksGamma(meth solver.MethodSpec) bool {
	return needsGamma(meth) && math.IsInf(m.cell.Gamma(), 1)
}

// unprovenReason is the reason of the refusal of a stochastic method on
// the model's cell, which proves no bound: a conv cell's configuration, or
// a CellFunc's cell whose Proven method is false.
func (m *Model) unprovenReason() string {
	c := m.Config
	if m.custom {
		return fmt.Sprintf("needs a proven Lipschitz bound, and the model's cell does not prove its bound γ̄ = %g in Model.Norm = %v (its Proven method is false)", m.cell.Gamma(), c.Norm)
	}
	return fmt.Sprintf("needs a proven Lipschitz bound, which the conv cell has only in l2 (or schatten:2), without GroupNorm and under the projection, for its float64 map (a forward solve with float32 products is certified on it; an adjoint solve is not) (Model.Norm = %v, Model.Groups = %d, −1 meaning none; Model.Normalization = %v; Model.Precision = %v)", c.Norm, c.Groups, c.Normalization, c.Precision)
}

// checkAids refuses the training aids a cell or a solver cannot honour:
// Jacobian regularisation for a cell without a fused Jacobian penalty, and
// the solvers that need a Lipschitz bound γ̄ ≤ 1 (GHAL, VR-GHAL) where the
// cell declares none (weight normalisation) or, in training, dropout's
// 1/(1 − p) pushes it above one.
func checkAids(c Config, m *Model) error {
	if c.Aids.JacWeight > 0 {
		ev, err := m.cell.Evaluator(c.BatchSize)
		if err != nil {
			return err
		}
		if _, ok := ev.(layers.JacobianPenalizer); !ok {
			return fieldErr("Aids.JacWeight", c.Aids.JacWeight, fmt.Sprintf("needs a cell with an exact Jacobian-penalty gradient (the dense cell); the %s cell has none", m.cellName()))
		}
	}
	gamma := m.cell.Gamma()
	for _, s := range []struct {
		field string
		m     solver.MethodSpec
		used  bool // the solve runs
		train bool // the solve sees the dropout mask
	}{
		{"Forward.Method", c.Forward.Method, true, true},
		{"Backward.Solver.Method", c.Backward.Solver.Method, c.Backward.Mode == deq.Implicit, true},
		{"Eval.Method", c.Eval.Method, true, false},
	} {
		switch {
		case !s.used || !needsGamma(s.m):
		case m.lacksGamma(s.m):
			return fieldErr("Model.Normalization", c.Model.Normalization, fmt.Sprintf("declares no Lipschitz bound γ̄, which %s = %v needs (use the projection or another solver)", s.field, s.m))
		case s.train && gamma/(1-c.Aids.Dropout) > 1:
			return fieldErr("Aids.Dropout", c.Aids.Dropout, fmt.Sprintf("scales the cell's bound γ̄ = %g to %g > 1, and %s = %v needs a bound of at most one", gamma, gamma/(1-c.Aids.Dropout), s.field, s.m))
		}
	}
	return nil
}

// needsGamma reports whether the method's guarantees and schedule rest on
// a Lipschitz bound γ̄ (GHAL and VR-GHAL).
func needsGamma(m solver.MethodSpec) bool { return m.Info().NeedsGamma }
