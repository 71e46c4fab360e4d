//go:build aftermerge

// Tests that need the solver methods added on other branches (Broyden,
// Anderson, Halpern, GHAL, Krasnoselskii–Mann, VR-GHAL). After merging them,
// run
//
//	go test -tags aftermerge ./deq/
//
// adapt the constructors in afterMergeMethods and vrghal if the merged types
// need fields or pointers, and then delete the build tag to make these tests
// part of the suite.

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

// afterMergeMethods are the deterministic methods to swap in for Picard.
func afterMergeMethods() map[string]solver.Method {
	return map[string]solver.Method{
		"broyden":  solver.Broyden{},
		"anderson": solver.Anderson{},
		"halpern":  solver.Halpern{},
		"ghal":     solver.GHAL{},
		"km":       solver.KrasnoselskiiMann{},
	}
}

// vrghal returns the stochastic method.
func vrghal() solver.Method { return solver.VRGHAL{} }

func TestAfterMergeDeterministicMethodsGiveTheImplicitGradient(t *testing.T) {
	for name, m := range afterMergeMethods() {
		t.Run(name, func(t *testing.T) {
			for _, tc := range gradCells() {
				s := tight
				s.Forward, s.Adjoint = m, m
				s.ForwardSettings.MaxIter, s.AdjointSettings.MaxIter = 100000, 100000
				l := must(New(tc.cell, &s))
				rng := rand.New(rand.NewPCG(7, 7))
				x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
				lo := loss{randVec(rng, tc.n*tc.cell.Shape().HiddenLen(), 1)}
				dx, dth, sol := gradients(t, l, x, lo)
				require.Equal(t, solver.Success, sol.Result.Status, tc.name)
				// Compare with Picard's (itself checked against finite differences).
				px, pth, _ := gradients(t, must(New(tc.cell, &tight)), x, lo)
				require.InDeltaSlice(t, px, dx, 1e-9, tc.name)
				require.InDeltaSlice(t, pth, dth, 1e-9, tc.name)
			}
		})
	}
}

func TestAfterMergeVRGHALForwardNearExact(t *testing.T) {
	// VR-GHAL on the sampled oracle, in every norm offered: the distance to
	// the exact fixed point is at most the certified residual bound over
	// 1 − γ̄ (with probability 1 − δ; fixed seeds make the test
	// deterministic).
	s := Settings{
		Forward:         vrghal(),
		ForwardOracle:   Sampled,
		ForwardSettings: solver.Settings{Tol: 1e-3, Seed: 1},
	}
	testForwardNearExact(t, s, func(sol *Solution, gamma float64) float64 {
		require.True(t, sol.Sampled)
		require.NotNil(t, sol.Result.Certificate)
		require.LessOrEqual(t, sol.Result.Certificate.Bound, 1e-2)
		return sol.Result.Certificate.Bound/(1-gamma) + 1e-10
	})
}

func TestAfterMergeVRGHALAdjoint(t *testing.T) {
	// The stochastic adjoint (minibatched VJPs under VR-GHAL) gives the
	// implicit gradient to within its tolerance.
	for _, tc := range gradCells()[2:] { // the stochastic cells
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
			lo := loss{randVec(rng, tc.n*tc.cell.Shape().HiddenLen(), 1)}
			wx, wth, _ := gradients(t, must(New(tc.cell, &tight)), x, lo)
			s := tight
			s.Adjoint, s.AdjointOracle = vrghal(), Sampled
			s.AdjointSettings = solver.Settings{Tol: 1e-4, Seed: 2}
			l := must(New(tc.cell, &s))
			sol, err := l.Forward(context.Background(), x)
			require.NoError(t, err)
			dx := make([]float64, len(x))
			layers.ZeroGrads(l.Params())
			st, err := l.Backward(context.Background(), sol, lo.grad(sol.Z), dx)
			require.NoError(t, err)
			require.NotEqual(t, "exact", st.Adjoint.Certificate.Rule, "the adjoint must be solved on the sampled oracle")
			var dth []float64
			for _, p := range l.Params() {
				dth = append(dth, p.GradData()...)
			}
			layers.ZeroGrads(l.Params())
			// ‖∂L/∂x − exact‖ is bounded by the VJP operator norm times the
			// adjoint error; allow 100× the adjoint tolerance.
			floats.Sub(dx, wx)
			floats.Sub(dth, wth)
			require.Less(t, floats.Norm(dx, 2), 1e-2)
			require.Less(t, floats.Norm(dth, 2), 1e-2)
		})
	}
}
