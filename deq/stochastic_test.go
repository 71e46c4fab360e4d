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

// normCase is a stochastic cell and a forward norm in which it is defined.
type normCase struct {
	name   string
	norm   string
	cell   layers.Cell
	proven bool
}

// normCases covers every norm offered, with both stochastic cells; matrix
// states (Rows = 2) for the Schatten norms. The experts cell under
// Schatten-4 is not provably Lipschitz and is monitored.
func normCases() []normCase {
	const gamma = 0.6
	meanField := func(norm string, rows int) layers.Cell {
		return must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 4, Input: 3, Units: 8, Rows: rows, Lipschitz: constraint(norm, gamma), Seed: 11}))
	}
	experts := func(norm string, rows int) layers.Cell {
		return must(layers.NewExperts(layers.ExpertsConfig{Hidden: 4, Input: 10, Experts: 5, Rows: rows, Lipschitz: constraint(norm, gamma), Seed: 12}))
	}
	return []normCase{
		{"meanfield", "l2", meanField("l2", 1), true},
		{"experts", "l2", experts("l2", 1), true},
		{"meanfield", "linf", meanField("linf", 1), true},
		{"experts", "linf", experts("linf", 1), true},
		{"meanfield", "lp:4", meanField("lp:4", 1), true},
		{"experts", "lp:4", experts("lp:4", 1), true},
		{"meanfield", "schatten:2", meanField("l2", 2), true},
		{"experts", "schatten:2", experts("l2", 2), true},
		{"meanfield", "schatten:4", meanField("l2", 2), true},
		{"experts", "schatten:4", experts("l2", 2), false},
	}
}

// referenceFixedPoint iterates the exact operator until successive iterates
// differ by at most 1e-12 in every coordinate, independently of package
// solver.
func referenceFixedPoint(t *testing.T, cell layers.Cell, n int, x []float64) []float64 {
	t.Helper()
	e := must(cell.Evaluator(n))
	require.NoError(t, e.SetInput(x))
	z := make([]float64, e.Len())
	fz := make([]float64, e.Len())
	for range 10000 {
		require.NoError(t, e.EvalExact(fz, z))
		floats.Sub(z, fz)
		done := floats.Norm(z, 1) <= 1e-12
		copy(z, fz)
		if done {
			return z
		}
	}
	t.Fatal("reference iteration did not converge")
	return nil
}

// testForwardNearExact checks that a forward solve of every normCase lands
// within tol of the exact fixed point (in the forward norm, for every
// example) and returns the solutions.
func testForwardNearExact(t *testing.T, s Settings, tol func(sol *Solution, gamma float64) float64) {
	const n = 3
	for _, tc := range normCases() {
		t.Run(tc.name+"/"+tc.norm, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 21))
			x := randVec(rng, n*tc.cell.Shape().InputLen(), 1)
			ref := referenceFixedPoint(t, tc.cell, n, x)
			ss := s
			ss.Norm = normFor(tc.norm, tc.cell)
			l := must(New(tc.cell, &ss))
			sol, err := l.Forward(context.Background(), x)
			require.NoError(t, err)
			require.Equal(t, solver.Success, sol.Result.Status)
			require.Equal(t, tc.proven, sol.Proven)
			if !tc.proven {
				require.NotNil(t, sol.Lipschitz)
				require.Positive(t, sol.Lipschitz.Pairs)
			}
			sh := tc.cell.Shape()
			ex := must(solver.ParseNorm(tc.norm, sh.Rows, sh.Hidden))
			d := make([]float64, len(ref))
			floats.SubTo(d, sol.Z, ref)
			bound := tol(sol, tc.cell.Gamma())
			for b := 0; b < n; b++ {
				k := sh.HiddenLen()
				require.LessOrEqual(t, ex.Norm(d[b*k:(b+1)*k]), bound, "example %d", b)
			}
			require.Greater(t, floats.Norm(ref, 2), 0.1, "the fixed point must not be trivially zero")
		})
	}
}

func TestStochasticCellForwardPicardOnExactMap(t *testing.T) {
	// ‖z − z*‖ ≤ ‖T(z) − z‖/(1 − γ̄) for a γ̄-contraction; the reference
	// itself is within 1e-12/(1 − γ̄) of z* in ℓ1, hence in every norm here.
	const tol = 1e-10
	s := Settings{ForwardSettings: solver.Settings{Tol: tol}}
	testForwardNearExact(t, s, func(sol *Solution, gamma float64) float64 {
		require.False(t, sol.Sampled)
		return (tol + 1e-12) / (1 - gamma)
	})
}
