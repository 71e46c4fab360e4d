package deq

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

func TestDropoutMaskFixedAcrossIterations(t *testing.T) {
	// Picard's iterates are z_k = f̃(z_{k−1}) = m ⊙ f(z_{k−1}): the mask read
	// off iteration 1 (entries 0 or 1/(1 − p)) must give iteration 6 too,
	// and the returned z* is a fixed point of the same masked map.
	const p = 0.4
	c := must(layers.NewDense(layers.DenseConfig{Hidden: 8, Input: 3, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.5}, Seed: 2}))
	rec := &iterates{}
	s := Settings{Dropout: p, ForwardSettings: solver.Settings{Tol: 1e-13, Seed: 9, Recorder: rec}}
	l := must(New(c, &s))
	n := 3
	x := randVec(rand.New(rand.NewPCG(1, 1)), n*c.Shape().InputLen(), 1)
	sol := must(l.Forward(context.Background(), x))
	require.True(t, sol.Dropout)
	require.Greater(t, len(rec.xs), 7)
	e := must(c.Evaluator(n))
	require.NoError(t, e.SetInput(x))
	f := func(z []float64) []float64 {
		out := make([]float64, len(z))
		require.NoError(t, e.EvalExact(out, z))
		return out
	}
	f0 := f(rec.xs[0])
	m := make([]float64, len(f0))
	dropped := 0
	for i, v := range rec.xs[1] {
		m[i] = v / f0[i]
		if v == 0 {
			dropped++
		} else {
			require.InDelta(t, 1/(1-p), m[i], 1e-12)
		}
	}
	require.Equal(t, []float64(sol.mask), roundMask(m, p))
	require.Greater(t, dropped, 0)
	require.Less(t, dropped, len(m))
	want := f(rec.xs[5])
	floats.Mul(want, roundMask(m, p))
	require.InDeltaSlice(t, want, rec.xs[6], 1e-12)
	fz := f(sol.Z)
	floats.Mul(fz, sol.mask)
	require.InDeltaSlice(t, fz, sol.Z, 1e-12)

	// Same seeds, same mask; new seeds, a new mask.
	rec.xs = nil
	again := must(l.Forward(context.Background(), x))
	require.Equal(t, sol.mask, again.mask)
	l.SetSeeds(10, 0)
	rec.xs = nil
	other := must(l.Forward(context.Background(), x))
	require.NotEqual(t, sol.mask, other.mask)
}

// roundMask returns the mask m with its entries snapped to 0 or 1/(1 − p).
func roundMask(m []float64, p float64) []float64 {
	out := make([]float64, len(m))
	for i, v := range m {
		if v > 0.5 {
			out[i] = 1 / (1 - p)
		}
	}
	return out
}

func TestDropoutOffInEvaluation(t *testing.T) {
	c := must(layers.NewDense(layers.DenseConfig{Hidden: 5, Input: 2, Activation: layers.Tanh, Seed: 3}))
	x := randVec(rand.New(rand.NewPCG(2, 2)), 2*c.Shape().InputLen(), 1)
	plain := must(must(New(c, &tight)).Forward(context.Background(), x))
	s := tight
	s.Dropout = 0.3
	l := must(New(c, &s))
	l.SetEvaluation(true)
	sol := must(l.Forward(context.Background(), x))
	require.False(t, sol.Dropout)
	require.Nil(t, sol.mask)
	require.Equal(t, plain.Z, sol.Z)
	l.SetEvaluation(false)
	sol = must(l.Forward(context.Background(), x))
	require.True(t, sol.Dropout)
	require.NotEqual(t, plain.Z, sol.Z)
	for _, p := range []float64{-0.1, 1, 1.5} {
		_, err := New(c, &Settings{Dropout: p})
		require.ErrorContains(t, err, "Dropout")
	}
}

func TestDropoutGradientsMatchFiniteDifferences(t *testing.T) {
	// With the mask fixed (the same seeds for every solve), the implicit
	// gradient of L(z*) is that of the masked map's fixed point, for every
	// cell kind; the Jacobian penalty and the correction gradients see the
	// mask too.
	for _, tc := range gradCells() {
		t.Run(tc.name, func(t *testing.T) {
			s := tight
			s.Dropout = 0.25
			s.ForwardSettings.Seed = 5
			s.CorrectionStates = 2
			l := must(New(tc.cell, &s))
			rng := rand.New(rand.NewPCG(8, 8))
			x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
			lo := loss{randVec(rng, tc.n*tc.cell.Shape().HiddenLen(), 1)}
			dx, dth, sol := gradients(t, l, x, lo)
			require.True(t, sol.Dropout)
			fx, fth := fdGradients(t, l, x, lo)
			requireClose(t, fx, dx, 1e-6, "dx")
			requireClose(t, fth, dth, 1e-6, "dθ")

			gs := [][]float64{randVec(rng, len(sol.Z), 1), randVec(rng, len(sol.Z), 1)}
			ps := l.Params()
			layers.ZeroGrads(ps)
			_, err := l.CorrectionBackward(sol, gs, nil)
			require.NoError(t, err)
			got := paramGrads(ps)
			value := func() float64 {
				fs, err := l.CorrectionForward(sol)
				require.NoError(t, err)
				return floats.Dot(gs[0], fs[0]) + floats.Dot(gs[1], fs[1])
			}
			requireClose(t, fdParams(value, ps), got, 1e-7, "correction dθ")

			if _, ok := tc.cell.(*layers.Dense); !ok {
				return
			}
			opts := &JacobianRegOptions{Probes: 2, Seed: 3}
			layers.ZeroGrads(ps)
			_, err = l.JacobianRegularize(sol, 1, opts, nil, nil)
			require.NoError(t, err)
			got = paramGrads(ps)
			pen := func() float64 { return must(l.JacobianRegularize(sol, 0, opts, nil, nil)).Value }
			requireClose(t, fdParams(pen, ps), got, 1e-6, "Jacobian dθ")
			// The masked penalty is that of the masked Jacobian: dropped
			// rows of J contribute nothing.
			plain := *sol
			plain.mask = nil
			require.NotEqual(t, pen(), must(l.JacobianRegularize(&plain, 0, opts, nil, nil)).Value)
		})
	}
}

func TestDropoutCheapBackwardModes(t *testing.T) {
	// Jacobian-free and phantom differentiate the masked map: phantom with
	// many steps approaches the implicit gradient of the masked fixed point.
	c := gradCells()[0]
	s := tight
	s.Dropout = 0.3
	s.ForwardSettings.Seed = 4
	rng := rand.New(rand.NewPCG(3, 3))
	x := randVec(rng, c.n*c.cell.Shape().InputLen(), 1)
	lo := loss{randVec(rng, c.n*c.cell.Shape().HiddenLen(), 1)}
	idx, ith, _ := gradients(t, must(New(c.cell, &s)), x, lo)
	s.Backward, s.PhantomSteps = Phantom, 80
	pdx, pth, _ := gradients(t, must(New(c.cell, &s)), x, lo)
	requireClose(t, idx, pdx, 1e-8, "phantom dx")
	requireClose(t, ith, pth, 1e-8, "phantom dθ")
	s.Backward = JacobianFree
	l := must(New(c.cell, &s))
	jdx, _, sol := gradients(t, l, x, lo)
	// JFB: dx = (∂f/∂x)ᵀ(m ⊙ ∂L/∂z*).
	e := must(c.cell.Evaluator(c.n))
	require.NoError(t, e.SetInput(x))
	g := lo.grad(sol.Z)
	floats.Mul(g, sol.mask)
	want := make([]float64, len(x))
	require.NoError(t, e.VJP(nil, want, sol.Z, g))
	layers.ZeroGrads(c.cell.Params())
	require.Equal(t, want, jdx)
}
