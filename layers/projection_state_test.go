package layers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProjectionStateResumesExactly projects perturbed weights in one cell,
// moves its parameters and projection state into a fresh cell, and checks
// that both then project every further perturbation to the same bits.
func TestProjectionStateResumesExactly(t *testing.T) {
	type cell interface {
		Cell
		ProjectionStater
	}
	build := map[string]func() cell{
		"dense/l2": func() cell {
			return mustCell(NewDense(DenseConfig{Hidden: 6, Input: 2, Lipschitz: Constraint{Gamma: 0.7, ExactEvery: 3}, Seed: 4}))
		},
		"dense/linf": func() cell {
			return mustCell(NewDense(DenseConfig{Hidden: 6, Input: 2, Lipschitz: Constraint{P: math.Inf(1), Gamma: 0.7}, Seed: 4}))
		},
		"experts/l2": func() cell {
			return mustCell(NewExperts(ExpertsConfig{Hidden: 5, Input: 6, Experts: 3, Lipschitz: Constraint{Gamma: 0.7, ExactEvery: 2}, Seed: 4}))
		},
	}
	for name, mk := range build {
		t.Run(name, func(t *testing.T) {
			a := mk()
			rng := rand.New(rand.NewPCG(8, 8))
			perturb := func(c Cell, r *rand.Rand) {
				for _, p := range c.Params() {
					for i := range p.Data() {
						p.Data()[i] += 0.3 * r.NormFloat64()
					}
				}
			}
			for range 4 {
				perturb(a, rng)
				require.NoError(t, a.Project())
			}
			b := mk()
			for i, p := range a.Params() {
				copy(b.Params()[i].Data(), p.Data())
			}
			require.NoError(t, b.SetProjectionState(a.ProjectionState()))
			require.Equal(t, a.ProjectionState(), b.ProjectionState())
			ra, rb := rand.New(rand.NewPCG(9, 9)), rand.New(rand.NewPCG(9, 9))
			for step := range 5 {
				perturb(a, ra)
				perturb(b, rb)
				require.NoError(t, a.Project())
				require.NoError(t, b.Project())
				for i, p := range a.Params() {
					require.True(t, slices.Equal(p.Data(), b.Params()[i].Data()), "step %d, %s", step, p.Name())
				}
			}
		})
	}
}

func TestSetProjectionStateRejectsMismatch(t *testing.T) {
	c := mustCell(NewDense(DenseConfig{Hidden: 4, Input: 2, Seed: 1}))
	s := c.ProjectionState()
	require.Len(t, s.Vector, 4)
	require.ErrorContains(t, c.SetProjectionState(ProjectionState{Calls: 1, Vector: make([]float64, 3)}), "length 3, want 4")
	require.ErrorContains(t, c.SetProjectionState(ProjectionState{Calls: -1, Vector: s.Vector}), "negative")
	bad := slices.Clone(s.Vector)
	bad[0] = math.NaN()
	require.ErrorContains(t, c.SetProjectionState(ProjectionState{Calls: 1, Vector: bad}), "NaN")
	// A rejected state leaves the cell's own alone.
	require.Equal(t, s, c.ProjectionState())
}
