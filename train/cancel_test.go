package train

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunStopsInEpochEvaluation cancels the context from inside the
// callback of the last batch of the first epoch: Run abandons the epoch's
// evaluation and spectral measurement, returns an error wrapping
// context.Canceled with the position after that batch, and records no
// epoch; a second Run completes the epoch.
func TestRunStopsInEpochEvaluation(t *testing.T) {
	tr, te := blobData(256, 100)
	cfg := tinyConfig()
	cfg.Epochs = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var trn *Trainer
	batches := 0
	trn, err := New(cfg, tr, te, &Options{OnBatch: func(*BatchMetrics) {
		batches++
		if batches == trn.BatchesPerEpoch() {
			cancel()
		}
	}})
	require.NoError(t, err)
	res, err := trn.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, res.Interrupted)
	require.Zero(t, res.Epoch)
	require.Equal(t, trn.BatchesPerEpoch(), res.Batch)
	require.Equal(t, trn.BatchesPerEpoch(), batches, "no batch after the cancellation")
	require.Empty(t, res.Epochs)

	res, err = trn.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, res.Epochs, 1)
	require.Equal(t, trn.BatchesPerEpoch(), batches)
}
