package deq

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"

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

// TestAppliedSolutionOfDivergedSolve feeds a NaN input through graphs: the
// forward solve diverges, and Applied.Solution reports it; the run
// succeeds both for a deterministic cell and for a stochastic cell under
// VR-GHAL, whose certificates are exact (the latter's a finite-sum one)
// and NaN.
func TestAppliedSolutionOfDivergedSolve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cell    layers.Cell
		s       *Settings
		failing bool
	}{
		{"dense", must(layers.NewDense(layers.DenseConfig{Hidden: 3, Input: 2, Lipschitz: layers.Constraint{Gamma: 0.5}, Seed: 1})), nil, false},
		{"experts/vrghal", must(layers.NewExperts(layers.ExpertsConfig{Hidden: 3, Input: 2, Experts: 2, Lipschitz: layers.Constraint{Gamma: 0.5}, Seed: 1})),
			&Settings{Forward: solver.VRGHAL{SampleScale: 0.01}, ForwardOracle: Sampled, ForwardSettings: solver.Settings{Tol: 1e-2}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := must(New(tc.cell, tc.s))
			g := G.NewGraph()
			xs := []float64{1, 2, 3, 4}
			x := matrixNode(g, "x", 2, 2, xs)
			a, err := l.Apply(context.Background(), x)
			require.NoError(t, err)
			vm := G.NewTapeMachine(g)
			defer vm.Close()
			require.NoError(t, vm.RunAll())
			require.Equal(t, solver.Success, a.Solution().Result.Status)
			xs[1] = math.NaN()
			vm.Reset()
			err = vm.RunAll()
			if tc.failing {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			require.NotNil(t, a.Solution())
			require.Equal(t, solver.Diverged, a.Solution().Result.Status)
		})
	}
}
