package train

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestCertDeltaSampledCertificates trains one epoch of a meanfield cell of
// M = 2¹⁴ units with the growing batch forward and adjoint and CertDelta
// 0.05: the training and test forward solves are certified from samples
// of the cell's terms, and the summaries report the rule and its δ (also
// in JSON); with CertDelta zero every certificate is exact.
func TestCertDeltaSampledCertificates(t *testing.T) {
	for _, certDelta := range []float64{0, 0.05} {
		cfg := tinyConfig()
		cfg.Epochs = 1
		cfg.Model = ModelConfig{Cell: MeanFieldCell, Hidden: 6, Encoder: 5, Units: 1 << 14}
		gb := methodNamed("growing-batch")
		cfg.Forward = SolverConfig{Method: gb, Tol: 0.2, CertDelta: certDelta}
		cfg.Backward.Solver = SolverConfig{Method: gb, CertDelta: certDelta}
		cfg.Eval = SolverConfig{Tol: 0.2}
		tr, te := blobData(64, 50)
		trn, err := New(cfg, tr, te, nil)
		require.NoError(t, err)
		res, err := trn.Run(context.Background())
		require.NoError(t, err)
		e := res.Epochs[0]
		for name, s := range map[string]SolveSummary{"training": e.Forward, "test": e.Test} {
			require.Positive(t, s.Certified, name)
			if certDelta == 0 {
				require.Zero(t, s.CertDeltaMax, name)
				for r := range s.CertRules {
					require.True(t, r.Exact(), "%s: rule %v", name, r)
				}
				continue
			}
			require.Positive(t, s.CertRules[solver.RuleSampledBernstein], "%s: %v", name, s.CertRules)
			require.Equal(t, certDelta, s.CertDeltaMax, name)
			b, err := json.Marshal(s)
			require.NoError(t, err)
			require.Contains(t, string(b), `"sampled-bernstein":`)
			t.Logf("%s: %s", name, b)
		}
	}
}
