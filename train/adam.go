package train

import (
	"fmt"
	"math"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/deqgo/deq/internal/numeric"
)

// Adam is the Adam optimiser (Kingma and Ba, 2015) as a gorgonia.Solver.
// For each parameter w with gradient g, step t = 1, 2, … computes
//
//	m ← β₁m + (1 − β₁)g,   v ← β₂v + (1 − β₂)g²,
//	w ← w − LR·(m/(1 − β₁ᵗ)) / (√(v/(1 − β₂ᵗ)) + ε)
//
// and zeroes g, with the operations in the order of gorgonia's
// AdamSolver, so that with a constant LR it follows gorgonia.NewAdamSolver's
// trajectory bit for bit (TestAdamMatchesGorgonia). It exists because
// gorgonia's AdamSolver keeps its step count and moments in unexported
// fields and its learning rate fixed: a training run could neither follow a
// schedule nor save and resume the optimiser. Here LR may change between
// steps and State/SetState expose the moments.
//
// Step takes the parameters in the same order every time; the first Step
// fixes their number and shapes.
type Adam struct {
	// LR is the learning rate of the next Step.
	LR float64
	// Beta1, Beta2 and Eps are β₁, β₂ and ε.
	Beta1, Beta2, Eps float64

	t    int
	m, v [][]float64
	// split divides Update's elements between goroutines (nil: one
	// goroutine); a Trainer sets it.
	split *adamSplit
}

var _ G.Solver = (*Adam)(nil)

// AdamState is the state of an Adam optimiser after Step steps.
type AdamState struct {
	// Step is the number of steps taken.
	Step int
	// M and V are the first and second moment estimates, one slice per
	// parameter (nil before the first step).
	M, V [][]float64
}

// NewAdam returns an Adam optimiser with the given learning rate and
// Config's defaults for β₁, β₂ and ε.
func NewAdam(lr float64) *Adam {
	return &Adam{LR: lr, Beta1: DefaultBeta1, Beta2: DefaultBeta2, Eps: DefaultAdamEps}
}

// floats returns the float64 backing slice of a tensor value.
func floats(v G.Value) ([]float64, error) {
	t, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("train: parameter value is %T, want *tensor.Dense", v)
	}
	d, ok := t.Data().([]float64)
	if !ok {
		return nil, fmt.Errorf("train: parameter has dtype %v, want float64", t.Dtype())
	}
	return d, nil
}

// Step implements gorgonia.Solver: it updates every parameter's value in
// place from its gradient and zeroes the gradient (see Update).
func (a *Adam) Step(model []G.ValueGrad) error {
	ws := make([][]float64, len(model))
	gs := make([][]float64, len(model))
	for i, n := range model {
		var err error
		if ws[i], err = floats(n.Value()); err != nil {
			return err
		}
		g, err := n.Grad()
		if err != nil {
			return fmt.Errorf("train: Adam: parameter %d has no gradient: %w", i, err)
		}
		if gs[i], err = floats(g); err != nil {
			return err
		}
	}
	return a.Update(ws, gs)
}

// State returns a copy of the optimiser's state.
func (a *Adam) State() AdamState {
	return AdamState{Step: a.t, M: clone2(a.m), V: clone2(a.v)}
}

// SetState restores a state returned by State. It returns an error if the
// state is inconsistent or holds non-finite moments.
func (a *Adam) SetState(s AdamState) error {
	switch {
	case s.Step < 0:
		return fmt.Errorf("train: AdamState.Step = %d is negative", s.Step)
	case len(s.M) != len(s.V):
		return fmt.Errorf("train: AdamState has %d first and %d second moments", len(s.M), len(s.V))
	case s.Step > 0 && len(s.M) == 0:
		return fmt.Errorf("train: AdamState after %d steps has no moments", s.Step)
	}
	for i := range s.M {
		if len(s.M[i]) != len(s.V[i]) {
			return fmt.Errorf("train: AdamState moment %d has lengths %d and %d", i, len(s.M[i]), len(s.V[i]))
		}
		if !numeric.AllFinite(s.M[i]) || !numeric.AllFinite(s.V[i]) {
			return fmt.Errorf("train: AdamState moment %d is not finite", i)
		}
	}
	a.t = s.Step
	a.m, a.v = clone2(s.M), clone2(s.V)
	return nil
}

// clone2 returns a deep copy of x (nil for an empty x).
func clone2(x [][]float64) [][]float64 {
	if len(x) == 0 {
		return nil
	}
	c := make([][]float64, len(x))
	for i := range x {
		c[i] = slices.Clone(x[i])
	}
	return c
}

// Update is Step over plain slices: for every i it updates the values
// ws[i] in place from the gradients gs[i] and zeroes gs[i]. It allocates
// nothing after the first call.
func (a *Adam) Update(ws, gs [][]float64) error {
	c, total, err := a.begin(ws, gs)
	if err != nil {
		return err
	}
	a.update(&c, total)
	return nil
}

// update updates the total elements of c's parameters, split between
// goroutines from adamSplitMin elements on a split Adam.
func (a *Adam) update(c *adamCall, total int) {
	if a.split == nil || total < adamSplitMin {
		a.updateRange(c, 0, total)
		return
	}
	a.split.call = *c
	a.split.team.Run(total, a.split.part)
	a.split.call = adamCall{}
}

// begin checks the parameters and gradients of an Update, allocates the
// moments on the first call, counts the step and returns the step's
// operands and the number of elements.
func (a *Adam) begin(ws, gs [][]float64) (adamCall, int, error) {
	if len(ws) != len(gs) {
		return adamCall{}, 0, fmt.Errorf("train: Adam: %d parameters and %d gradients", len(ws), len(gs))
	}
	for i := range ws {
		if len(gs[i]) != len(ws[i]) {
			return adamCall{}, 0, fmt.Errorf("train: Adam: parameter %d has %d values and %d gradients", i, len(ws[i]), len(gs[i]))
		}
	}
	if a.m == nil {
		a.m = make([][]float64, len(ws))
		a.v = make([][]float64, len(ws))
		for i, w := range ws {
			a.m[i] = make([]float64, len(w))
			a.v[i] = make([]float64, len(w))
		}
	}
	if len(a.m) != len(ws) {
		return adamCall{}, 0, fmt.Errorf("train: Adam: %d parameters, want %d", len(ws), len(a.m))
	}
	total := 0
	for i, w := range ws {
		if len(w) != len(a.m[i]) {
			return adamCall{}, 0, fmt.Errorf("train: Adam: parameter %d has %d values, want %d", i, len(w), len(a.m[i]))
		}
		total += len(w)
	}
	a.t++
	return adamCall{
		ws: ws, gs: gs,
		c1: 1 / (1 - math.Pow(a.Beta1, float64(a.t))),
		c2: 1 / (1 - math.Pow(a.Beta2, float64(a.t))),
	}, total, nil
}

// adamCall holds the operands of an Update: the values and gradients and
// the bias corrections 1/(1 − β₁ᵗ) and 1/(1 − β₂ᵗ).
type adamCall struct {
	ws, gs [][]float64
	c1, c2 float64
}

// updateRange updates the elements [lo, hi) of the parameters taken one
// after the other. Each element's update reads and writes that element
// only, so a split Update computes what one goroutine does, bit for bit.
func (a *Adam) updateRange(c *adamCall, lo, hi int) {
	om1, om2 := 1-a.Beta1, 1-a.Beta2
	negLR := -a.LR
	off := 0
	for i, w := range c.ws {
		s, e := max(lo-off, 0), min(hi-off, len(w))
		off += len(w)
		if s >= e {
			continue
		}
		g, m, v := c.gs[i][s:e], a.m[i][s:e], a.v[i][s:e]
		w = w[s:e]
		for j, gj := range g {
			m[j] = gj*om1 + m[j]*a.Beta1
			v[j] = gj*gj*om2 + v[j]*a.Beta2
			w[j] += m[j] * c.c1 * negLR / (math.Sqrt(v[j]*c.c2) + a.Eps)
			g[j] = 0
		}
	}
}

// globalNorm returns the Euclidean norm of all of grads together.
func globalNorm(grads [][]float64) float64 {
	sq := 0.0
	for _, g := range grads {
		for _, v := range g {
			sq += v * v
		}
	}
	return math.Sqrt(sq)
}

// clipTo scales grads, whose global norm is norm, down to global norm c
// when norm exceeds c > 0.
func clipTo(grads [][]float64, norm, c float64) {
	if c <= 0 || norm <= c {
		return
	}
	f := c / norm
	for _, g := range grads {
		for i := range g {
			g[i] *= f
		}
	}
}

// decay multiplies the values selected by mask by f.
func decay(vals [][]float64, mask []bool, f float64) {
	for i, v := range vals {
		if mask[i] {
			for j := range v {
				v[j] *= f
			}
		}
	}
}
