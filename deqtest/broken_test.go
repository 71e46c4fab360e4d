package deqtest_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/deqtest"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// wrappedCell is a cell whose evaluators are the wrapped cell's, passed
// through wrap.
type wrappedCell struct {
	layers.Cell
	wrap func(layers.Evaluator) layers.Evaluator
}

func (c wrappedCell) Evaluator(n int) (layers.Evaluator, error) {
	e, err := c.Cell.Evaluator(n)
	return c.wrap(e), err
}

// biasedCell adds bias to every sampled evaluation (Size below Terms);
// its exact map is correct.
func biasedCell(c layers.Cell, bias float64) layers.Cell {
	return wrappedCell{c, func(e layers.Evaluator) layers.Evaluator { return biasedEval{e, bias} }}
}

type biasedEval struct {
	layers.Evaluator
	bias float64
}

func (e biasedEval) Eval(dst, z []float64, s solver.Sample) (int, error) {
	k, err := e.Evaluator.Eval(dst, z, s)
	if s.Size < e.Terms() {
		for i := range dst {
			dst[i] += e.bias
		}
	}
	return k, err
}

// wrongVJPCell scales VJP's (∂f/∂z)ᵀg by factor.
func wrongVJPCell(c layers.Cell, factor float64) layers.Cell {
	return wrappedCell{c, func(e layers.Evaluator) layers.Evaluator { return wrongVJPEval{e, factor} }}
}

type wrongVJPEval struct {
	layers.Evaluator
	factor float64
}

func (e wrongVJPEval) VJP(dz, dx, z, g []float64) error {
	err := e.Evaluator.VJP(dz, dx, z, g)
	for i := range dz {
		dz[i] *= e.factor
	}
	return err
}

// wrongGraphCell adds shift to EvalGraph's output: the graph disagrees
// with the exact map.
func wrongGraphCell(c layers.Cell, shift float64) layers.Cell {
	return wrappedCell{c, func(e layers.Evaluator) layers.Evaluator {
		return wrongGraphEval{e.(layers.GraphEvaluator), shift}
	}}
}

type wrongGraphEval struct {
	layers.GraphEvaluator
	shift float64
}

func (e wrongGraphEval) EvalGraph(dst, z []float64) error {
	err := e.GraphEvaluator.EvalGraph(dst, z)
	for i := range dst {
		dst[i] += e.shift
	}
	return err
}

// understatedCell reports half the wrapped cell's Lipschitz bound.
type understatedCell struct{ layers.Cell }

func (c understatedCell) Gamma() float64 { return c.Cell.Gamma() / 2 }

var (
	_ layers.Cell      = wrappedCell{}
	_ layers.Evaluator = biasedEval{}
	_ layers.Evaluator = wrongVJPEval{}
	_ layers.Cell      = understatedCell{}

	_ layers.GraphEvaluator = wrongGraphEval{}
)

func TestBrokenCellsAreCaught(t *testing.T) {
	experts := func(seed uint64) layers.Cell {
		return must(layers.NewExperts(layers.ExpertsConfig{Hidden: 4, Input: 6, Experts: 3, Activation: layers.Tanh, Seed: seed}))
	}
	dense := func(seed uint64) layers.Cell {
		return must(layers.NewDense(layers.DenseConfig{Hidden: 5, Input: 3, Activation: layers.Tanh, Seed: seed}))
	}
	for _, seed := range []uint64{1, 2, 3} {
		o := &deqtest.Options{Seed: seed}
		t.Run("biased-oracle", func(t *testing.T) {
			// A bias of 0.01 on a sampled oracle whose draws spread by
			// about 0.3: 5 standard errors of a mean of 20000 draws.
			c := biasedCell(experts(seed), 0.01)
			caught(t, func(tb testing.TB) { deqtest.CheckUnbiased(tb, c, o) }, "CheckUnbiased", "standard errors")
			// CheckFixedPoint cannot see this bias, and need not: every
			// cell is a finite sum, so the solver certifies the stochastic
			// solve with one exact evaluation (solver.FiniteSum), and the
			// certificate is true whatever the sampled oracle does. The
			// sampled oracle's bias is CheckUnbiased's to catch.
			many := must(layers.NewExperts(layers.ExpertsConfig{Hidden: 4, Input: 2, Experts: 1024, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.5}, Seed: seed}))
			rec := &recorder{TB: t}
			deqtest.CheckFixedPoint(rec, biasedCell(many, 0.5), o)
			require.Empty(t, rec.errs, "the exact certificate holds for the biased cell too")
		})
		t.Run("wrong-vjp", func(t *testing.T) {
			c := wrongVJPCell(dense(seed), 1.001)
			caught(t, func(tb testing.TB) { deqtest.CheckVJP(tb, c, o) }, "CheckVJP", "∂⟨g, f⟩/∂z", "central difference")
		})
		t.Run("wrong-graph", func(t *testing.T) {
			c := wrongGraphCell(dense(seed), 1e-2)
			caught(t, func(tb testing.TB) { deqtest.CheckUnbiased(tb, c, o) }, "CheckUnbiased", "EvalGraph differs")
		})
		t.Run("understated-lipschitz", func(t *testing.T) {
			for _, c := range []layers.Cell{dense(seed), experts(seed)} {
				caught(t, func(tb testing.TB) { deqtest.CheckLipschitz(tb, understatedCell{c}, o) }, "CheckLipschitz", "exceeds Gamma()")
			}
		})
		t.Run("nan", func(t *testing.T) {
			caught(t, func(tb testing.TB) { deqtest.CheckUnbiased(tb, biasedCell(experts(seed), math.NaN()), o) }, "CheckUnbiased")
		})
	}
}

func TestOptionErrors(t *testing.T) {
	c := must(layers.NewDense(layers.DenseConfig{Hidden: 2, Input: 1}))
	for _, tc := range []struct {
		o    deqtest.Options
		want string
	}{
		{deqtest.Options{Batch: -1}, "Options.Batch"},
		{deqtest.Options{Draws: -1}, "Options.Draws"},
		{deqtest.Options{Alpha: 1}, "Options.Alpha"},
		{deqtest.Options{Delta: math.NaN()}, "Options.Delta"},
		{deqtest.Options{Step: -1e-6}, "Options.Step"},
		{deqtest.Options{Budget: -1}, "Options.Budget"},
		{deqtest.Options{Norms: []string{"l7"}}, "Options.Norms"},
	} {
		caught(t, func(tb testing.TB) { deqtest.CheckLipschitz(tb, c, &tc.o) }, tc.want)
	}
	caught(t, func(tb testing.TB) { deqtest.CheckCell(tb, nil, nil) }, "nil cell")
}
