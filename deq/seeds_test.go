package deq

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// TestSetSeedsActsLikeSettingsSeed checks that SetSeeds gives the forward
// solve (VR-GHAL on a sampled oracle) the draws of a Layer built with that
// seed, and that another seed gives other draws.
func TestSetSeedsActsLikeSettingsSeed(t *testing.T) {
	cell := must(layers.NewMixture(layers.MixtureConfig{Hidden: 4, Terms: 6, PatchLen: 2, Lipschitz: layers.Constraint{Gamma: 0.6}, Seed: 3}))
	x := randVec(rand.New(rand.NewPCG(5, 5)), 3*cell.Shape().InputLen(), 1)
	forward := func(seed uint64, set bool) []float64 {
		s := Settings{Forward: solver.VRGHAL{SampleScale: 0.01}, ForwardOracle: Sampled, ForwardSettings: solver.Settings{Tol: 1e-3, MaxIter: 4}}
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
