package solver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// countingMDP counts the unit samples drawn from an mdp oracle while
// keeping its declarations (NoiseBound, CoordinateNoiseBound).
type countingMDP struct {
	problems.Oracle
	solver.NoiseBound
	solver.CoordinateNoiseBound
	samples int64
}

func (c *countingMDP) Eval(dst, x []float64, s solver.Sample) (int, error) {
	n, err := c.Oracle.Eval(dst, x, s)
	c.samples += int64(n)
	return n, err
}

func newCountingMDP(t *testing.T, seed uint64) (*problems.Problem, *countingMDP) {
	t.Helper()
	p, err := problems.New(problems.Config{Name: "mdp", Dim: 8, Gamma: 0.9, Seed: seed})
	require.NoError(t, err)
	nb, ok := p.Oracle.(solver.NoiseBound)
	require.True(t, ok)
	cn, ok := p.Oracle.(solver.CoordinateNoiseBound)
	require.True(t, ok)
	return p, &countingMDP{Oracle: p.Oracle, NoiseBound: nb, CoordinateNoiseBound: cn}
}

// TestVRGHALOwnCertificate checks that when VR-GHAL stops on its own
// rigorous bound, Solve reports that bound as the certificate, marked as
// the method's own, with the estimate's samples (already counted in
// Stats) and the estimates' share of δ, and draws no sample of its own;
// and that the bound holds at the returned point on every seed (the
// failure probability is at most 0.045 per seed; 40 seeds fail more than
// 7 times with probability below 1e-3, by the binomial tail).
func TestVRGHALOwnCertificate(t *testing.T) {
	const seeds, tol = 40, 0.05
	own, fails := 0, 0
	for seed := range uint64(seeds) {
		p, o := newCountingMDP(t, 1+seed%4)
		s := &solver.Settings{Tol: tol, Seed: seed}
		res, err := solver.Solve(context.Background(), solver.Problem{Oracle: o, Norm: p.Norm}, p.X0, s, solver.VRGHAL{Gamma: 0.9, SampleScale: 0.1})
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, solver.Success, res.Status, "seed %d", seed)
		c := res.Certificate
		require.NotNil(t, c, "seed %d", seed)
		require.Equal(t, o.samples, res.Stats.Samples, "seed %d: the certificate drew samples of its own", seed)
		require.True(t, c.Own, "seed %d", seed)
		require.Equal(t, solver.RuleBoundedNoise, c.Rule, "seed %d", seed)
		require.InDelta(t, 0.9*solver.DefaultVRGHALDelta, c.Delta, 1e-15, "seed %d", seed)
		require.LessOrEqual(t, c.Bound, tol, "seed %d", seed)
		require.Positive(t, c.Samples, "seed %d", seed)
		require.Less(t, c.Samples, res.Stats.Samples, "seed %d", seed)
		require.Contains(t, c.Guarantee(), "the method's own estimate")
		own++
		r, err := p.Residual(res.X)
		require.NoError(t, err)
		if r > c.Bound {
			fails++
		}
	}
	require.Equal(t, seeds, own)
	t.Logf("%d of %d own certificates below the true residual", fails, seeds)
	require.LessOrEqual(t, fails, 7, "own certificates below the true residual")
}

// TestOwnCertificateOnlyWhenItApplies checks that a method without a bound
// of its own (minibatch KM) still gets a fresh certificate, and that an
// explicitly sized certificate or a certificate δ below the method's is
// drawn fresh even when VR-GHAL offers its own.
func TestOwnCertificateOnlyWhenItApplies(t *testing.T) {
	p, o := newCountingMDP(t, 1)
	prob := solver.Problem{Oracle: o, Norm: p.Norm}
	res, err := solver.Solve(context.Background(), prob, p.X0, &solver.Settings{Tol: 0.05, MaxIter: 200, Seed: 3}, solver.MinibatchKM{})
	require.NoError(t, err)
	c := res.Certificate
	require.NotNil(t, c)
	require.False(t, c.Own)
	require.Equal(t, solver.RuleBoundedNoise, c.Rule)
	require.Equal(t, o.samples, res.Stats.Samples+c.Samples, "a fresh certificate draws its own samples")
	require.Positive(t, c.Samples)

	for _, cs := range []solver.CertifySettings{{Samples: 500}, {Calls: 2}, {Delta: 0.01}} {
		o.samples = 0
		s := &solver.Settings{Tol: 0.05, Seed: 3, Certify: cs}
		res, err := solver.Solve(context.Background(), prob, p.X0, s, solver.VRGHAL{Gamma: 0.9, SampleScale: 0.1})
		require.NoError(t, err, "%+v", cs)
		c := res.Certificate
		require.NotNil(t, c, "%+v", cs)
		require.False(t, c.Own, "%+v", cs)
		require.Positive(t, c.Samples, "%+v", cs)
		require.Equal(t, o.samples, res.Stats.Samples+c.Samples, "%+v", cs)
	}
}

// TestVRGHALOwnTruncatedCertificate checks the same on affine-t (ℓ2,
// Student-t noise with 2.5 degrees of freedom, a variance bound its only
// declaration), where VR-GHAL's estimates are truncated means
// (RuleVarianceTruncated): Solve reports the last one as the method's own
// certificate, and its bound holds at the returned point on all but a few
// seeds (at most 0.045 per seed, so more than 7 of 40 with probability
// below 1e-3).
func TestVRGHALOwnTruncatedCertificate(t *testing.T) {
	const seeds, tol = 40, 0.1
	fails := 0
	for seed := range uint64(seeds) {
		p, err := problems.New(problems.Config{Name: "affine-t", Dim: 8, Gamma: 0.9, Noise: 0.3, Seed: 1 + seed%4})
		require.NoError(t, err)
		res, err := solver.Solve(context.Background(), solver.Problem{Oracle: p.Oracle, Norm: p.Norm}, p.X0, &solver.Settings{Tol: tol, Seed: seed}, solver.VRGHAL{Gamma: 0.9, SampleScale: 0.1})
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, solver.Success, res.Status, "seed %d", seed)
		c := res.Certificate
		require.NotNil(t, c, "seed %d", seed)
		require.True(t, c.Own, "seed %d", seed)
		require.Equal(t, solver.RuleVarianceTruncated, c.Rule, "seed %d", seed)
		require.InDelta(t, 0.9*solver.DefaultVRGHALDelta, c.Delta, 1e-15, "seed %d", seed)
		require.LessOrEqual(t, c.Bound, tol, "seed %d", seed)
		r, err := p.Residual(res.X)
		require.NoError(t, err)
		if r > c.Bound {
			fails++
		}
	}
	t.Logf("%d of %d own certificates below the true residual", fails, seeds)
	require.LessOrEqual(t, fails, 7, "own certificates below the true residual")
}
