package train

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// valueGrad is a ValueGrad over two tensors.
type valueGrad struct{ v, g *tensor.Dense }

func (p valueGrad) Value() G.Value         { return p.v }
func (p valueGrad) Grad() (G.Value, error) { return p.g, nil }
func newVG(rng *rand.Rand, r, c int) valueGrad {
	w := make([]float64, r*c)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	return valueGrad{tensor.New(tensor.WithShape(r, c), tensor.WithBacking(w)), tensor.New(tensor.WithShape(r, c), tensor.Of(tensor.Float64))}
}

func data(v G.Value) []float64 { return v.Data().([]float64) }

// TestAdamMatchesGorgonia runs gorgonia's AdamSolver and Adam side by side
// on the same gradients and requires the same bits after every step.
func TestAdamMatchesGorgonia(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a := []G.ValueGrad{newVG(rng, 3, 4), newVG(rng, 1, 5)}
	b := make([]G.ValueGrad, len(a))
	for i, p := range a {
		q := p.(valueGrad)
		b[i] = valueGrad{q.v.Clone().(*tensor.Dense), q.g.Clone().(*tensor.Dense)}
	}
	ref := G.NewAdamSolver(G.WithLearnRate(0.01))
	ours := NewAdam(0.01)
	for step := range 20 {
		for i := range a {
			ga, _ := a[i].Grad()
			gb, _ := b[i].Grad()
			for j := range data(ga) {
				g := rng.NormFloat64() * float64(step+1)
				data(ga)[j], data(gb)[j] = g, g
			}
		}
		require.NoError(t, ref.Step(a))
		require.NoError(t, ours.Step(b))
		for i := range a {
			require.True(t, slices.Equal(data(a[i].Value()), data(b[i].Value())), "step %d parameter %d", step, i)
			g, _ := b[i].Grad()
			require.Equal(t, make([]float64, len(data(g))), data(g), "Step zeroes the gradient")
		}
	}
}

// TestAdamStateRoundTrip checks that an optimiser restored from State
// continues exactly like the original, and that bad states are refused.
func TestAdamStateRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := []G.ValueGrad{newVG(rng, 2, 3)}
	q := []G.ValueGrad{valueGrad{p[0].(valueGrad).v.Clone().(*tensor.Dense), p[0].(valueGrad).g.Clone().(*tensor.Dense)}}
	setGrad := func(ps []G.ValueGrad, g []float64) {
		gv, _ := ps[0].Grad()
		copy(data(gv), g)
	}
	a := NewAdam(0.05)
	for range 3 {
		g := []float64{rng.NormFloat64(), 1, -2, 0.5, 3, -1}
		setGrad(p, g)
		setGrad(q, g)
		require.NoError(t, a.Step(p))
	}
	copy(data(q[0].Value()), data(p[0].Value()))
	b := NewAdam(0.05)
	require.NoError(t, b.SetState(a.State()))
	require.Equal(t, a.State(), b.State())
	for range 3 {
		g := []float64{rng.NormFloat64(), 2, 1, -0.5, 0, 4}
		setGrad(p, g)
		setGrad(q, g)
		require.NoError(t, a.Step(p))
		require.NoError(t, b.Step(q))
		require.True(t, slices.Equal(data(p[0].Value()), data(q[0].Value())))
	}
	// The state is a copy.
	s := a.State()
	s.M[0][0] = 99
	require.NotEqual(t, 99.0, a.State().M[0][0])

	nan := a.State()
	nan.V[0][1] = nan.V[0][1] / 0 * 0
	for name, bad := range map[string]AdamState{
		"negative step": {Step: -1},
		"unpaired":      {Step: 1, M: [][]float64{{1}}, V: nil},
		"lengths":       {Step: 1, M: [][]float64{{1}}, V: [][]float64{{1, 2}}},
		"no moments":    {Step: 2},
		"non-finite":    nan,
	} {
		require.Error(t, NewAdam(1).SetState(bad), name)
	}
}
