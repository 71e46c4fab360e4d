package solver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// TestReproducibleGivenSeed solves a stochastic problem (heavy-tailed
// Student-t noise, ℓ∞) twice with every method under the same
// Settings.Seed, each time on a freshly built problem: the results,
// certificates included, agree bit for bit. The stochastic baselines run on
// the oracle, the deterministic methods on the exact operator. A different
// Settings.Seed changes what the stochastic methods return, so the
// agreement is not that of methods that ignore the seed.
func TestReproducibleGivenSeed(t *testing.T) {
	linf, err := solver.NewLInf(12)
	require.NoError(t, err)
	cfg := problems.Config{Name: "affine-t", Dim: 12, Norm: linf, Gamma: 0.7, Noise: 0.5, Seed: 21}
	p0 := relNew(t, cfg)
	solve := func(m relMethod, seed uint64) *solver.Result {
		p := relNew(t, cfg)
		s := relSettings(m, seed)
		res, err := solver.Solve(context.Background(), m.problem(p), p.X0, s, m.method)
		require.NoError(t, err, m.name)
		require.NotNil(t, res.Certificate)
		return res
	}
	for _, m := range relMethods(p0.Gamma, p0.Sigma) {
		a, b := solve(m, 7), solve(m, 7)
		relRequireSame(t, a, b, m.name)
		if m.stochastic {
			c := solve(m, 8)
			require.NotEqual(t, a.X, c.X, "%s: another seed, another path", m.name)
			require.NotEqual(t, a.Certificate.Bound, c.Certificate.Bound, m.name)
		}
	}
}
