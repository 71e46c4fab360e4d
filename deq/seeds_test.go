package deq

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// TestSetSeedsActsLikeSettingsSeed checks that SetSeeds gives the forward
// solve (VR-GHAL on a sampled oracle) the draws of a Layer built with that
// seed, and that another seed gives other draws.
func TestSetSeedsActsLikeSettingsSeed(t *testing.T) {
	cell := must(layers.NewExperts(layers.ExpertsConfig{Hidden: 4, Input: 12, Experts: 6, Lipschitz: layers.Constraint{Gamma: 0.6}, Seed: 3}))
	x := randVec(rand.New(rand.NewPCG(5, 5)), 3*cell.Shape().InputLen(), 1)
	forward := func(seed uint64, set bool) []float64 {
		// The paper's constants, which sample this 6-term cell (the tuned
		// ones evaluate it exactly, and no seed would show).
		s := Settings{Forward: solver.VRGHAL{SampleScale: 0.01, Constants: solver.PaperConstants}, ForwardOracle: Sampled, ForwardSettings: solver.Settings{Tol: 1e-3, MaxIter: 4}}
		if !set {
			s.ForwardSettings.Seed = seed
		}
		l := must(New(cell, &s))
		if set {
			l.SetSeeds(seed, 0)
			require.Equal(t, seed, l.Settings().ForwardSettings.Seed)
		}
		sol, err := l.Forward(context.Background(), x)
		require.NoError(t, err)
		require.True(t, sol.Sampled)
		return sol.Z
	}
	require.Equal(t, forward(11, false), forward(11, true))
	require.NotEqual(t, forward(11, true), forward(12, true))
}

// TestAppliedSolutionOfDivergedSolve runs graphs whose forward pass meets
// a non-finite value. A NaN input is refused: the run fails with an error
// naming solver.ErrNonFinite and Applied.Solution is nil. A cell that
// returns NaN during the solve (on its third evaluation) fails the run
// the same way, and Applied.Solution reports Status Diverged with a finite
// Z, both for a deterministic cell and for a stochastic cell under VR-GHAL.
func TestAppliedSolutionOfDivergedSolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		cell layers.Cell
		s    *Settings
	}{
		{"dense", must(layers.NewDense(layers.DenseConfig{Hidden: 3, Input: 2, Lipschitz: layers.Constraint{Gamma: 0.5}, Seed: 1})), nil},
		{"experts/vrghal", must(layers.NewExperts(layers.ExpertsConfig{Hidden: 3, Input: 2, Experts: 2, Lipschitz: layers.Constraint{Gamma: 0.5}, Seed: 1})),
			&Settings{Forward: solver.VRGHAL{SampleScale: 0.01}, ForwardOracle: Sampled, ForwardSettings: solver.Settings{Tol: 1e-2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &faultyCell{Cell: tc.cell, value: math.NaN()}
			l := must(New(fc, tc.s))
			g := G.NewGraph()
			xs := []float64{1, 2, 3, 4}
			x := matrixNode(g, "x", 2, 2, xs)
			a, err := l.Apply(context.Background(), x)
			require.NoError(t, err)
			vm := G.NewTapeMachine(g)
			defer vm.Close()
			require.NoError(t, vm.RunAll())
			require.Equal(t, solver.Success, a.Solution().Result.Status)

			// The tape machine's error keeps the op's message but not its
			// chain.
			xs[1] = math.NaN()
			vm.Reset()
			err = vm.RunAll()
			require.ErrorContains(t, err, solver.ErrNonFinite.Error())
			require.Nil(t, a.Solution(), "a non-finite input is refused")

			xs[1] = 2
			fc.evals = map[int]bool{fc.nEval + 3: true}
			vm.Reset()
			err = vm.RunAll()
			require.ErrorContains(t, err, solver.ErrNonFinite.Error())
			require.NotNil(t, a.Solution())
			require.Equal(t, solver.Diverged, a.Solution().Result.Status)
			require.True(t, numeric.AllFinite(a.Solution().Z))
		})
	}
}
