package train

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestTermEvalMetricsAddUp trains the dense and the mean-field cell with
// the exact forward and adjoint solvers and checks the term-evaluation
// metrics against the solves' own counts: every exact oracle call, the
// exact certificates' calls and every full VJP count the cell's M terms
// (1 for the dense cell), the epoch means are the batch counts' means, and
// the single-term relative variance is positive for the stochastic cell
// only.
func TestTermEvalMetricsAddUp(t *testing.T) {
	calls := func(r *solver.Result) int64 {
		if r == nil {
			return 0
		}
		n := r.Stats.Calls
		if c := r.Certificate; c != nil {
			n += c.Calls
		}
		return n
	}
	for _, tc := range []struct {
		name  string
		model ModelConfig
		m     int64
	}{
		{"dense", ModelConfig{Hidden: 6, Encoder: 5}, 1},
		{"meanfield", ModelConfig{Cell: MeanFieldCell, Hidden: 6, Encoder: 5, Units: 24}, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.Epochs = 1
			cfg.Model = tc.model
			tr, te := blobData(128, 50)
			var fwd, bwd int64
			used := 0
			trn, err := New(cfg, tr, te, &Options{OnBatch: func(bm *BatchMetrics) {
				if bm.Skipped {
					return
				}
				used++
				require.Equal(t, tc.m*calls(bm.Forward), bm.FwdTermEvals)
				require.Equal(t, tc.m*(calls(bm.Backward)+int64(bm.VJPs)), bm.BwdTermEvals)
				fwd += bm.FwdTermEvals
				bwd += bm.BwdTermEvals
			}})
			require.NoError(t, err)
			res, err := trn.Run(context.Background())
			require.NoError(t, err)
			e := res.Epochs[0]
			require.Positive(t, used)
			require.InDelta(t, float64(fwd)/float64(used), e.FwdTermEvalsMean, 1e-12*e.FwdTermEvalsMean)
			require.InDelta(t, float64(bwd)/float64(used), e.BwdTermEvalsMean, 1e-12*e.BwdTermEvalsMean)
			require.Greater(t, e.FwdTermEvalsMean, float64(tc.m), "at least one call and the certificate's")
			if tc.m > 1 {
				require.Positive(t, e.TermRelVar)
			} else {
				require.Zero(t, e.TermRelVar)
			}
		})
	}
}
