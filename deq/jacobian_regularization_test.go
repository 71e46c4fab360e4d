package deq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers"
)

// jacRegCells are Dense cells, the one cell with an exact Jacobian
// regularisation gradient: tanh (σ″ terms) and ReLU with matrix states.
func jacRegCells() []gradCase {
	return []gradCase{
		{"dense-tanh", must(layers.NewDense(layers.DenseConfig{Hidden: 4, Input: 3, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.6}, Seed: 11})), 2},
		{"dense-relu-rows", must(layers.NewDense(layers.DenseConfig{Hidden: 3, Input: 2, Rows: 2, Lipschitz: layers.Constraint{Gamma: 0.6}, Seed: 12})), 2},
	}
}

func TestJacobianRegularizeGradientsMatchFiniteDifferences(t *testing.T) {
	const weight = 0.7
	for _, tc := range jacRegCells() {
		for _, opts := range []JacobianRegOptions{
			{Probes: 3, Seed: 1},
			{Probes: 2, Gaussian: true, PerDimension: true, Seed: 2},
		} {
			t.Run(fmt.Sprintf("%s/%+v", tc.name, opts), func(t *testing.T) {
				l := must(New(tc.cell, &tight))
				rng := rand.New(rand.NewPCG(3, 3))
				x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
				sol := must(l.Forward(context.Background(), x))
				ps := l.Params()
				layers.ZeroGrads(ps)
				dz := make([]float64, len(sol.Z))
				dx := make([]float64, len(sol.X))
				est, err := l.JacobianRegularize(sol, weight, &opts, dz, dx)
				require.NoError(t, err)
				require.Greater(t, est.Value, 0.0)
				got := paramGrads(ps)
				// w·R with the same probes (the seeds are unchanged), z*
				// held fixed.
				value := func() float64 {
					e, err := l.JacobianRegularize(sol, 0, &opts, nil, nil)
					require.NoError(t, err)
					return weight * e.Value
				}
				require.InDelta(t, weight*est.Value, value(), 1e-14)
				requireClose(t, fdParams(value, ps), got, 1e-6, "dθ")
				requireClose(t, fdOf(value, sol.X), dx, 1e-6, "dx")
				requireClose(t, fdOf(value, sol.Z), dz, 1e-6, "dz")
			})
		}
	}
}

func TestJacobianRegularizeEstimate(t *testing.T) {
	// Over K probes R is unbiased for the mean of ‖J_b‖_F², within 5 of
	// its standard deviations computed from the explicit Jacobians; under
	// PerDimension it is the same estimate divided by Rows·Hidden.
	const K = 400
	c := must(layers.NewDense(layers.DenseConfig{Hidden: 6, Input: 3, Activation: layers.Tanh, Seed: 1}))
	l := must(New(c, &tight))
	rng := rand.New(rand.NewPCG(5, 5))
	x := randVec(rng, 3*c.Shape().InputLen(), 1)
	sol := must(l.Forward(context.Background(), x))
	e := must(c.Evaluator(3))
	require.NoError(t, e.SetInput(x))
	exact, variance := hutchinsonMoments(explicitJacobians(t, e, sol.Z), false)
	est, err := l.JacobianRegularize(sol, 0, &JacobianRegOptions{Probes: K, Seed: 4}, nil, nil)
	require.NoError(t, err)
	sd := math.Sqrt(variance / K)
	require.InDelta(t, exact, est.Value, 5*sd, "exact %.6g, sd %.3g", exact, sd)
	per, err := l.JacobianRegularize(sol, 0, &JacobianRegOptions{Probes: K, Seed: 4, PerDimension: true}, nil, nil)
	require.NoError(t, err)
	require.InDelta(t, est.Value/6, per.Value, 1e-12*est.Value)
	require.InDelta(t, est.StdErr/6, per.StdErr, 1e-12*est.Value)
}

func TestJacobianRegularizeRefusesOtherCells(t *testing.T) {
	c := must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 3, Input: 2, Units: 4, Activation: layers.Tanh, Seed: 3}))
	l := must(New(c, nil))
	x := randVec(rand.New(rand.NewPCG(1, 1)), 2*c.Shape().InputLen(), 1)
	sol := must(l.Forward(context.Background(), x))
	_, err := l.JacobianRegularize(sol, 0.5, nil, nil, nil)
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrJacobianUnsupported))
	require.Contains(t, err.Error(), "MeanField")
	// A zero weight measures R for every cell.
	est, err := l.JacobianRegularize(sol, 0, nil, nil, nil)
	require.NoError(t, err)
	require.Greater(t, est.Value, 0.0)
	_, err = l.JacobianRegularize(sol, -1, nil, nil, nil)
	require.ErrorContains(t, err, "weight")
	_, err = l.JacobianRegularize(sol, 0, nil, nil, make([]float64, 1))
	require.ErrorContains(t, err, "dx")
}
