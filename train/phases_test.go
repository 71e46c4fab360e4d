package train

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPhaseSeconds: every training phase of an epoch is timed, the phases
// lie within the epoch's training time and account for most of it, the
// evaluation phase is EvalSeconds, and the breakdown survives the JSON
// boundary under its documented names.
func TestPhaseSeconds(t *testing.T) {
	tr, te := blobData(512, 150)
	cfg := tinyConfig()
	cfg.Epochs = 2
	trn, err := New(cfg, tr, te, nil)
	require.NoError(t, err)
	res, err := trn.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, res.Epochs, 2)
	const slack = 1e-6 // the sum of the phases' conversions to seconds
	for _, e := range res.Epochs {
		p := e.Phases
		for name, v := range map[string]float64{"encode": p.Encode, "solve": p.Solve, "readout": p.Readout, "backward": p.Backward, "step": p.Step} {
			require.Positive(t, v, "epoch %d phase %s", e.Epoch, name)
		}
		require.Equal(t, e.EvalSeconds, p.Eval)
		require.LessOrEqual(t, p.Train(), e.TrainSeconds+slack, "the phases are disjoint parts of the training time")
		require.LessOrEqual(t, p.Train()+p.Eval, e.EpochSeconds+slack)
		// What the phases leave out is drawing the batch and the epoch's
		// bookkeeping: a small part, whatever the load.
		require.GreaterOrEqual(t, p.Train(), e.TrainSeconds/2, "phases %+v of %.4g s", p, e.TrainSeconds)
	}

	b, err := json.Marshal(res.Epochs[0])
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(b, &raw))
	phases, ok := raw["phases"].(map[string]any)
	require.True(t, ok, "%s", b)
	for _, k := range []string{"encode", "solve", "readout", "backward", "step", "eval"} {
		require.Contains(t, phases, k)
	}
	var back EpochMetrics
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, res.Epochs[0].Phases, back.Phases)
}

// TestPhaseSecondsNotCheckpointed: a checkpoint does not keep the wall
// times, so its bytes hold no breakdown and the restored epochs have none.
func TestPhaseSecondsNotCheckpointed(t *testing.T) {
	tr, te := blobData(256, 64)
	cfg := tinyConfig()
	cfg.Epochs = 1
	path := tempPath(t, "ck.json")
	res, b := run(t, cfg, tr, te, path)
	require.Positive(t, res.Epochs[0].Phases.Solve)
	require.NotContains(t, string(b), `"phases"`, "the checkpoint's bytes do not depend on wall times")
	trn, err := Resume(path, tr, te, nil)
	require.NoError(t, err)
	h := trn.History()
	require.Len(t, h, 1)
	require.Equal(t, PhaseSeconds{}, h[0].Phases)
}
