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

func TestForwardMethodsGiveTheImplicitGradient(t *testing.T) {
	// Swapping the forward and adjoint solvers must not change the implicit
	// gradient: each method is compared with Picard's (itself checked against
	// finite differences in layer_test.go). Halpern converges at rate O(1/k)
	// even on contractions, so it gets a reachable tolerance and a tolerance
	// on the gradient that follows from it (‖Δg‖ ≲ tol/(1−γ̄) times the VJP
	// norm); the others are held to the tight settings.
	cases := []struct {
		name    string
		m       solver.Method
		tol     float64
		gradTol float64
	}{
		{"broyden", solver.Broyden{}, 0, 1e-9},
		{"anderson", solver.Anderson{}, 0, 1e-9},
		{"ghal", solver.GHAL{Gamma: 0.5}, 0, 1e-9},
		{"km", solver.KrasnoselskiiMann{}, 0, 1e-9},
		{"halpern", solver.Halpern{}, 1e-4, 1e-3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range gradCells() {
				s := tight
				s.Forward, s.Adjoint = c.m, c.m
				s.ForwardSettings.MaxIter, s.AdjointSettings.MaxIter = 100000, 100000
				if c.tol > 0 {
					s.ForwardSettings.Tol, s.AdjointSettings.Tol = c.tol, c.tol
				}
				l := must(New(tc.cell, &s))
				rng := rand.New(rand.NewPCG(7, 7))
				x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
				lo := loss{randVec(rng, tc.n*tc.cell.Shape().HiddenLen(), 1)}
				dx, dth, sol := gradients(t, l, x, lo)
				require.Equal(t, solver.Success, sol.Result.Status, tc.name)
				px, pth, _ := gradients(t, must(New(tc.cell, &tight)), x, lo)
				require.InDeltaSlice(t, px, dx, c.gradTol, tc.name)
				require.InDeltaSlice(t, pth, dth, c.gradTol, tc.name)
			}
		})
	}
}

// manyTermCells are stochastic cells with enough terms that VR-GHAL's
// minibatches stay below the full average, so the sampled oracle is really
// sampled.
func manyTermCells(norm string, rows int) map[string]layers.Cell {
	con := constraint(norm, 0.6)
	return map[string]layers.Cell{
		"meanfield": must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 4, Input: 3, Units: 4000, Rows: rows, Lipschitz: con, Seed: 31})),
		"experts":   must(layers.NewExperts(layers.ExpertsConfig{Hidden: 4, Input: 3, Experts: 4000, Rows: rows, Lipschitz: con, Seed: 32})),
	}
}

// broydenFixedPoint solves the exact (full-average) cell with Broyden to a
// residual of 1e-10 in ℓ∞.
func broydenFixedPoint(t *testing.T, cell layers.Cell, n int, x []float64) []float64 {
	t.Helper()
	e := must(cell.Evaluator(n))
	require.NoError(t, e.SetInput(x))
	norm := must(solver.NewLInf(e.Len()))
	res, err := solver.Solve(context.Background(), solver.Problem{Oracle: layers.ExactOracle(e), Norm: norm},
		make([]float64, e.Len()), &solver.Settings{Tol: 1e-10}, solver.Broyden{})
	require.NoError(t, err)
	require.Equal(t, solver.Success, res.Status)
	return res.X
}

func TestVRGHALForwardOnSampledCellNearExactFixedPoint(t *testing.T) {
	// VR-GHAL on the minibatch oracle of a stochastic cell, in every norm
	// offered, lands within its certificate of the exact cell's fixed point:
	// for a γ̄-contraction ‖z − z*‖ ≤ ‖T(z) − z‖/(1 − γ̄) ≤ Bound/(1 − γ̄),
	// with probability 1 − δ (fixed seeds make the run deterministic), plus the
	// reference's own 1e-10/(1 − γ̄) in ℓ∞ (hence ≤ √d·that in the others).
	const n = 3
	for _, nc := range []struct {
		norm, cellNorm string
		rows           int
	}{
		{"l2", "l2", 1}, {"linf", "linf", 1}, {"lp:4", "lp:4", 1}, {"schatten:2", "l2", 2}, {"schatten:4", "l2", 2},
	} {
		for name, cell := range manyTermCells(nc.cellNorm, nc.rows) {
			sh := cell.Shape()
			t.Run(nc.norm+"/"+name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(21, 21))
				x := randVec(rng, n*sh.InputLen(), 1)
				ref := broydenFixedPoint(t, cell, n, x)
				s := Settings{
					Norm:            normFor(nc.norm, cell),
					Forward:         solver.VRGHAL{Gamma: cell.Gamma()},
					ForwardOracle:   Sampled,
					ForwardSettings: solver.Settings{Tol: 5e-3, Seed: 1},
				}
				l := must(New(cell, &s))
				sol, err := l.Forward(context.Background(), x)
				require.NoError(t, err)
				res := sol.Result
				require.True(t, sol.Sampled)
				// The cell is a finite sum: its certificate is exact (also
				// where the forward oracle is a LipschitzMonitor, which passes
				// the finite sum on), and Success means it meets Tol; a stop
				// on VR-GHAL's estimate that the exact residual does not
				// confirm is ToleranceEstimated.
				require.Equal(t, solver.RuleFiniteSum, res.Certificate.Rule)
				require.Contains(t, []solver.Status{solver.Success, solver.ToleranceEstimated}, res.Status)
				require.Equal(t, res.Certificate.Bound <= 5e-3, res.Status == solver.Success)
				terms := int64(4000)
				require.Less(t, res.Stats.Samples, res.Stats.Calls*terms, "some evaluations must be minibatches smaller than the full average")
				require.NotNil(t, res.Certificate)
				gamma := cell.Gamma()
				bound := res.Certificate.Bound/(1-gamma) + 2*1e-10/(1-gamma)
				ex := must(solver.ParseNorm(nc.norm, sh.Rows, sh.Hidden))
				d := make([]float64, len(ref))
				floats.SubTo(d, sol.Z, ref)
				k := sh.HiddenLen()
				for b := 0; b < n; b++ {
					require.LessOrEqual(t, ex.Norm(d[b*k:(b+1)*k]), bound, "example %d", b)
				}
				require.Less(t, res.Certificate.Bound, 0.05, "the certificate must not be vacuous")
			})
		}
	}
}

func TestVRGHALAdjointOnSampledCell(t *testing.T) {
	// The stochastic adjoint (minibatched VJPs under VR-GHAL) gives the
	// implicit gradient of the exact cell to within its tolerance: the
	// gradient error is at most the VJP operator norm times the adjoint
	// error, and the VJPs of these cells have norm below 10.
	for name, cell := range manyTermCells("l2", 1) {
		t.Run(name, func(t *testing.T) {
			const n = 2
			rng := rand.New(rand.NewPCG(7, 7))
			x := randVec(rng, n*cell.Shape().InputLen(), 1)
			lo := loss{randVec(rng, n*cell.Shape().HiddenLen(), 1)}
			wx, wth, _ := gradients(t, must(New(cell, &tight)), x, lo)
			s := tight
			s.Adjoint, s.AdjointOracle = solver.VRGHAL{Gamma: cell.Gamma()}, Sampled
			s.AdjointSettings = solver.Settings{Tol: 1e-3, Seed: 2}
			l := must(New(cell, &s))
			sol, err := l.Forward(context.Background(), x)
			require.NoError(t, err)
			dx := make([]float64, len(x))
			layers.ZeroGrads(l.Params())
			st, err := l.Backward(context.Background(), sol, lo.grad(sol.Z), dx)
			require.NoError(t, err)
			// The adjoint is a finite sum too: exact certificate, and
			// Success exactly when it meets Tol.
			require.Equal(t, solver.RuleFiniteSum, st.Adjoint.Certificate.Rule)
			require.Contains(t, []solver.Status{solver.Success, solver.ToleranceEstimated}, st.Adjoint.Status)
			require.Equal(t, st.Adjoint.Certificate.Bound <= 1e-3, st.Adjoint.Status == solver.Success)
			require.Less(t, st.Adjoint.Stats.Samples, st.Adjoint.Stats.Calls*4000, "the adjoint must use minibatched VJPs")
			var dth []float64
			for _, p := range l.Params() {
				dth = append(dth, p.GradData()...)
			}
			layers.ZeroGrads(l.Params())
			floats.Sub(dx, wx)
			floats.Sub(dth, wth)
			require.Less(t, floats.Norm(dx, 2), 1e-2)
			require.Less(t, floats.Norm(dth, 2), 1e-2)
		})
	}
}
