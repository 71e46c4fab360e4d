package train

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrainSplitBatches trains the dense model with each batch solved as
// two concurrent parts (Config.Split): every forward solve is certified
// within the tolerance, the model learns as one solve per batch does, and
// the run is reproducible.
func TestTrainSplitBatches(t *testing.T) {
	tr, te := blobData(512, 150)
	one := tinyConfig()
	one.Epochs = 3
	split := one
	split.Split = 2
	results := map[int]*Result{}
	for _, cfg := range []Config{one, split} {
		trn, err := New(cfg, tr, te, nil)
		require.NoError(t, err)
		res, err := trn.Run(context.Background())
		require.NoError(t, err)
		results[cfg.Split] = res
		for _, e := range res.Epochs {
			require.Zero(t, e.Skipped)
			require.Equal(t, e.Forward.Solves, e.Forward.Certified)
			require.Equal(t, 1.0, e.CertMetFrac)
			require.LessOrEqual(t, e.CertBoundMax, DefaultForwardTol)
			require.LessOrEqual(t, e.Test.CertBoundMax, DefaultForwardTol/10)
			require.Positive(t, e.BwdItersMean)
		}
	}
	bayes := bayesAccuracy(te)
	f1, f2 := results[0].Final(), results[2].Final()
	t.Logf("test accuracy: one solve %.3f, two parts %.3f, Bayes %.3f", f1.TestAcc, f2.TestAcc, bayes)
	require.GreaterOrEqual(t, f2.TestAcc, bayes-0.05)
	// The parts are solved to the same tolerance, so the forward solves
	// take about as many iterations as one solve of the batch.
	require.InDelta(t, results[0].Epochs[2].FwdItersMean, results[2].Epochs[2].FwdItersMean, 3)

	again, err := New(split, tr, te, nil)
	require.NoError(t, err)
	res, err := again.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, withoutTimes(results[2].Epochs), withoutTimes(res.Epochs), "a split run is reproducible")
}
