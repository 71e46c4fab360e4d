package train

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
)

// TestPredictMatchesEvaluate checks that Predict, image by image, scores as
// Evaluate does with batches of one image, with a probability vector and
// a certificate within the tolerance per image.
func TestPredictMatchesEvaluate(t *testing.T) {
	ctx := context.Background()
	data, err := datasets.Open(ctx, datasets.SyntheticName, &datasets.Options{Seed: 2, Synthetic: datasets.SyntheticOptions{Train: 256, Test: 60}})
	require.NoError(t, err)
	tr, err := New(Config{Epochs: 1, BatchSize: 64, LR: 3e-3, Seed: 2, Model: ModelConfig{Hidden: 16}}, data.Train, data.Test, nil)
	require.NoError(t, err)
	_, err = tr.Run(ctx)
	require.NoError(t, err)
	m := tr.Model()
	em, err := m.Evaluate(ctx, data.Test, SolverConfig{}, 1)
	require.NoError(t, err)
	correct := 0
	for i := range data.Test.Len() {
		p, err := m.Predict(ctx, data.Test.Image(i), SolverConfig{})
		require.NoError(t, err)
		if p.Class == data.Test.Y[i] {
			correct++
		}
		sum := 0.0
		for k, q := range p.Probabilities {
			require.True(t, q >= 0 && q <= 1, "probability %v", q)
			require.LessOrEqual(t, q, p.Probabilities[p.Class], "class %d is more probable than the prediction", k)
			sum += q
		}
		require.InDelta(t, 1, sum, 1e-12)
		require.NotNil(t, p.Solve.Certificate)
		require.LessOrEqual(t, p.Solve.Certificate.Bound, p.Solve.Tol)
		require.Len(t, p.Solve.X, m.Cell().Shape().HiddenLen())
	}
	require.Equal(t, em.Correct, correct)

	_, err = m.Predict(ctx, make([]float64, 5), SolverConfig{})
	require.ErrorContains(t, err, "5 pixels")
	bad := make([]float64, m.InputDim)
	bad[3] = math.NaN()
	_, err = m.Predict(ctx, bad, SolverConfig{})
	require.ErrorContains(t, err, "pixel 3")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = m.Predict(cctx, data.Test.Image(0), SolverConfig{})
	require.ErrorIs(t, err, context.Canceled)
}
