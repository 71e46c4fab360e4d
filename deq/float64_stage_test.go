package deq

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// float64Pair returns a Float32 conv cell without GroupNorm (its float64
// map proven in ℓ2), its Float64 twin with the same parameters, and a
// batch input of n examples.
func float64Pair(t *testing.T, n int) (c32, c64 *layers.Conv, x []float64) {
	t.Helper()
	cfg := layers.ConvConfig{Channels: 3, Height: 5, Width: 5, Gamma: 0.9, Seed: 4}
	cfg.Precision = layers.Float32
	c32 = must(layers.NewConv(cfg))
	cfg.Precision = layers.Float64
	c64 = must(layers.NewConv(cfg))
	rng := rand.New(rand.NewPCG(4, 5))
	for i, p := range c32.Params() {
		v := randVec(rng, len(p.Data()), 0.4)
		copy(p.Data(), v)
		copy(c64.Params()[i].Data(), v)
	}
	require.NoError(t, c32.Project())
	require.NoError(t, c64.Project())
	return c32, c64, randVec(rng, n*c32.Shape().InputLen(), 1)
}

// residual64 returns the largest per-example ℓ2 residual ‖f₆₄(z) − z‖ of
// the Float64 cell c at z for input x.
func residual64(t *testing.T, c layers.Cell, n int, x, z []float64) float64 {
	t.Helper()
	ev := must(c.Evaluator(n))
	require.NoError(t, ev.SetInput(x))
	fz := make([]float64, len(z))
	require.NoError(t, ev.EvalExact(fz, z))
	d := len(z) / n
	worst := 0.0
	for b := range n {
		s := 0.0
		for i := b * d; i < (b+1)*d; i++ {
			s += (fz[i] - z[i]) * (fz[i] - z[i])
		}
		worst = math.Max(worst, math.Sqrt(s))
	}
	return worst
}

// TestCertifyFloat64: with CertifyFloat64 a Float32 cell's forward solve
// is certified on the float64 map (the certificate is the residual of the
// Float64 twin at the returned point, and the solution is proven), for a
// loose tolerance the float32 stage meets (one float64 evaluation added)
// and for one below float32 rounding, which the float64 stage iterates
// to; VR-GHAL gets the cell's γ̄; both stages' work is counted.
func TestCertifyFloat64(t *testing.T) {
	const n = 3
	for _, tc := range []struct {
		name   string
		method solver.Method
		tol    float64
	}{
		{"anderson-loose", solver.Anderson{}, 1e-4},
		{"anderson-tight", solver.Anderson{}, 1e-11},
		{"vrghal-loose", solver.VRGHAL{}, 1e-3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c32, c64, x := float64Pair(t, n)
			s := &Settings{Forward: tc.method, ForwardSettings: solver.Settings{Tol: tc.tol, MaxIter: 200}, CertifyFloat64: true}
			l := must(New(c32, s))
			if v, ok := l.Settings().Forward.(solver.VRGHAL); ok {
				require.InDelta(t, c32.Gamma(), v.Gamma, 1e-15, "VR-GHAL gets the proven bound of the float64 map")
			}
			sol, err := l.Forward(context.Background(), x)
			require.NoError(t, err)
			require.True(t, sol.Proven)
			require.Equal(t, solver.Success, sol.Result.Status)
			require.NotNil(t, sol.Float32)
			require.Nil(t, sol.Float32.Certificate)
			cert := sol.Result.Certificate
			require.NotNil(t, cert)
			require.True(t, cert.Rule.Exact())
			r := residual64(t, c64, n, x, sol.Z)
			require.InDelta(t, r, cert.Bound, 1e-12*(1+r), "the certificate is the float64 map's residual")
			require.LessOrEqual(t, cert.Bound, tc.tol)
			require.Greater(t, sol.Result.Stats.Calls, sol.Float32.Stats.Calls)
			t.Logf("float32 stage: %d calls, status %v, residual %.3g; both: %d calls, certificate %.3g", sol.Float32.Stats.Calls, sol.Float32.Status, sol.Float32.Residual, sol.Result.Stats.Calls, cert.Bound)
			require.Equal(t, sol.Result.Stats.Calls, sol.TermEvals, "a deterministic cell's evaluations are its term evaluations")
			if tc.tol >= 1e-4 {
				require.Equal(t, sol.Float32.Stats.Calls+1, sol.Result.Stats.Calls, "a point meeting the tolerance costs one float64 evaluation")
			}
			// The float32 stage alone certifies the float32 map, unproven.
			l32 := must(New(c32, &Settings{Forward: tc.method, ForwardSettings: s.ForwardSettings}))
			sol32, err := l32.Forward(context.Background(), x)
			require.NoError(t, err)
			require.False(t, sol32.Proven)
			require.Nil(t, sol32.Float32)
		})
	}
}

// TestCertifyFloat64Refused: New refuses CertifyFloat64 for a cell
// without a float64 reference map.
func TestCertifyFloat64Refused(t *testing.T) {
	cell := must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 3, Input: 2, Units: 8, Seed: 1}))
	_, err := New(cell, &Settings{CertifyFloat64: true})
	require.ErrorContains(t, err, "CertifyFloat64")
}

// TestCertifyFloat64OneStageInFloat64: for a cell in float64, whose
// reference map is its own, CertifyFloat64 solves once: the same calls and
// point as without it, no first stage, the solution proven.
func TestCertifyFloat64OneStageInFloat64(t *testing.T) {
	_, c64, x := float64Pair(t, 2)
	st := solver.Settings{Tol: 1e-6, MaxIter: 200}
	plain, err := must(New(c64, &Settings{Forward: solver.Anderson{}, ForwardSettings: st})).Forward(context.Background(), x)
	require.NoError(t, err)
	sol, err := must(New(c64, &Settings{Forward: solver.Anderson{}, ForwardSettings: st, CertifyFloat64: true})).Forward(context.Background(), x)
	require.NoError(t, err)
	require.Nil(t, sol.Float32)
	require.True(t, sol.Proven)
	require.Equal(t, plain.Result.Stats.Calls, sol.Result.Stats.Calls)
	require.InDeltaSlice(t, plain.Z, sol.Z, 1e-12, "the same solve")
}
