package train

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/deqgo/deq/internal/cputime"

	"github.com/stretchr/testify/require"
)

// TestPhaseSeconds: every training phase of an epoch is timed, the phases
// lie within the epoch's training time and account for most of it, the
// evaluation phase is EvalSeconds, and the breakdown survives the JSON
// boundary under its documented names; so do the phases' processor
// times, which never exceed every core for the phase's wall time.
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

		// Processor time: some in the training phases, never more than
		// every core for the whole wall time (with getrusage's rounding).
		c := e.PhaseCPU
		if !cputime.Supported {
			require.Equal(t, PhaseSeconds{}, c)
			continue
		}
		require.Positive(t, c.Train(), "epoch %d", e.Epoch)
		cores := float64(runtime.NumCPU())
		for name, v := range map[string][2]float64{"encode": {c.Encode, p.Encode}, "solve": {c.Solve, p.Solve}, "readout": {c.Readout, p.Readout},
			"backward": {c.Backward, p.Backward}, "step": {c.Step, p.Step}, "eval": {c.Eval, p.Eval}} {
			require.GreaterOrEqual(t, v[0], 0.0, "epoch %d phase %s", e.Epoch, name)
			require.LessOrEqual(t, v[0], cores*v[1]+0.02, "epoch %d phase %s: %.4g s of processor time in %.4g s", e.Epoch, name, v[0], v[1])
		}
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
	if cputime.Supported {
		require.Contains(t, raw, "phase_cpu")
	}
	var back EpochMetrics
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, res.Epochs[0].Phases, back.Phases)
	require.Equal(t, res.Epochs[0].PhaseCPU, back.PhaseCPU)
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
	require.NotContains(t, string(b), `"phase_cpu"`, "nor on processor times")
	trn, err := Resume(path, tr, te, nil)
	require.NoError(t, err)
	h := trn.History()
	require.Len(t, h, 1)
	require.Equal(t, PhaseSeconds{}, h[0].Phases)
	require.Equal(t, PhaseSeconds{}, h[0].PhaseCPU)
}
