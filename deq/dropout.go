package deq

import (
	"math/rand/v2"

	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/solver"
)

// dropoutSalt separates the dropout mask's stream from the solver's draws
// under the same forward seed.
const dropoutSalt = 0x8cb92ba72f3d8dd7

// dropMask is a DEQ dropout mask: each entry is 0 (dropped) or 1/(1 − p)
// (kept); nil means no mask.
type dropMask []float64

// apply multiplies v by the mask entrywise; a nil mask leaves v alone.
func (m dropMask) apply(v []float64) {
	if m == nil {
		return
	}
	for i, s := range m {
		v[i] *= s
	}
}

// draw fills m with a fresh mask of drop probability p from seed.
func (m dropMask) draw(p float64, seed uint64) {
	rng := rand.New(rand.NewPCG(numeric.Mix(seed, dropoutSalt), dropoutSalt))
	keep := 1 / (1 - p)
	for i := range m {
		if rng.Float64() < p {
			m[i] = 0
		} else {
			m[i] = keep
		}
	}
}

// maskedOracle is z ↦ m ⊙ τ(z) for the forward oracle τ (the exact or the
// sampled one) and the mask of the current forward solve (nil: τ itself).
type maskedOracle struct {
	o    solver.Oracle
	mask dropMask
}

var (
	_ solver.Oracle = (*maskedOracle)(nil)
	_ solver.Exact  = (*maskedOracle)(nil)
)

func (m *maskedOracle) Len() int            { return m.o.Len() }
func (m *maskedOracle) Model() solver.Model { return m.o.Model() }

func (m *maskedOracle) Eval(dst, z []float64, s solver.Sample) (int, error) {
	k, err := m.o.Eval(dst, z, s)
	m.mask.apply(dst)
	return k, err
}

func (m *maskedOracle) EvalExact(dst, z []float64) error {
	err := m.o.(solver.Exact).EvalExact(dst, z)
	m.mask.apply(dst)
	return err
}

// SetEvaluation switches the layer between training (false, the default)
// and evaluation (true). It only matters under Settings.Dropout: in
// evaluation Forward applies no dropout mask, so the layer solves the
// cell's own fixed point.
func (l *Layer) SetEvaluation(on bool) { l.evaluation = on }
