package deq

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// TestSampledCertificatesForwardAndAdjoint: with Certify.Sampled in
// ForwardSettings and AdjointSettings, a MeanField cell of M = 2¹⁵ units
// solved by the growing batch on its sampled oracle stops on sampled
// certificates (the method's own, at the settings' δ) in both solves,
// with fewer term evaluations than one exact pass per solve, its terms
// drawn in blocks (fewer oracle calls than terms), and the
// forward certificate bounds the exact residual of every example. Without
// the setting the certificates are exact.
func TestSampledCertificatesForwardAndAdjoint(t *testing.T) {
	const n, m, tol, delta = 3, 1 << 15, 0.3, 0.05
	ctx := context.Background()
	cell := must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 4, Input: 3, Units: m, Activation: layers.Tanh, Seed: 5}))
	rng := rand.New(rand.NewPCG(8, 8))
	x := randVec(rng, n*cell.Shape().InputLen(), 1)
	for _, sampled := range []bool{false, true} {
		cs := solver.CertifySettings{Sampled: sampled, Delta: delta}
		s := Settings{
			Forward: solver.GrowingBatch{}, ForwardOracle: Sampled, ForwardSettings: solver.Settings{Tol: tol, Seed: 1, Certify: cs},
			Adjoint: solver.GrowingBatch{}, AdjointOracle: Sampled, AdjointSettings: solver.Settings{Tol: tol, Seed: 2, Certify: cs},
		}
		l := must(New(cell, &s))
		sol, err := l.Forward(ctx, x)
		require.NoError(t, err)
		gz := loss{randVec(rng, n*cell.Shape().HiddenLen(), 1)}.grad(sol.Z)
		st, err := l.Backward(ctx, sol, gz, nil)
		require.NoError(t, err)
		for name, r := range map[string]*solver.Result{"forward": sol.Result, "adjoint": st.Adjoint} {
			c := r.Certificate
			require.NotNil(t, c, name)
			require.Equal(t, solver.Success, r.Status, name)
			if !sampled {
				require.True(t, c.Rule.Exact(), "%s: %v", name, c.Rule)
				continue
			}
			require.Equal(t, solver.RuleSampledBernstein, c.Rule, name)
			require.True(t, c.Own, name)
			require.Equal(t, delta, c.Delta, name)
			require.Len(t, c.PerExample, n, name)
			require.Less(t, c.Calls, c.Samples, "%s: the certificate's terms are drawn in blocks", name)
			require.Less(t, r.Stats.Samples, int64(m), "%s: the sampled solve and its certificate cost less than one exact pass", name)
		}
		// The forward certificate bounds the exact residual per example.
		ev := must(cell.Evaluator(n))
		require.NoError(t, ev.SetInput(x))
		fz := make([]float64, ev.Len())
		require.NoError(t, ev.EvalExact(fz, sol.Z))
		for i := range fz {
			fz[i] -= sol.Z[i]
		}
		k := cell.Shape().HiddenLen()
		for i := range n {
			l2, _ := solver.NewLP(2, k)
			require.LessOrEqual(t, l2.Norm(fz[i*k:(i+1)*k]), sol.Result.Certificate.PerExample[i], "example %d", i)
		}
	}
}

// TestSampledCertificateRefusedNorm: New refuses sampled certificates in
// a norm where no sampled rule is proven, naming the setting and the norm.
func TestSampledCertificateRefusedNorm(t *testing.T) {
	cell := must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 4, Input: 3, Units: 8, Seed: 5}))
	l4 := must(solver.NewLP(4, 4))
	_, err := New(cell, &Settings{Norm: l4, ForwardSettings: solver.Settings{Certify: solver.CertifySettings{Sampled: true}}})
	require.ErrorContains(t, err, "Settings.ForwardSettings.Certify.Sampled")
	require.ErrorContains(t, err, "lp:4")
	_, err = New(cell, &Settings{AdjointNorm: l4, AdjointSettings: solver.Settings{Certify: solver.CertifySettings{Sampled: true}}})
	require.ErrorContains(t, err, "Settings.AdjointSettings.Certify.Sampled")
}
