package layers_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/deqtest"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// TestCellsPassKit runs the user-facing test kit (package deqtest) on the
// configurations of the package's own tests: unbiased oracles, stochastic
// solves within their certificates of the exact fixed point, VJPs against
// finite differences and the declared Lipschitz bounds, for the dense and
// conv cells (the mean-field cells: TestMeanFieldCellsPassKit).
func TestCellsPassKit(t *testing.T) {
	must := func(c layers.Cell, err error) layers.Cell {
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cells := []struct {
		name string
		cell layers.Cell
	}{
		{"dense-tanh", must(layers.NewDense(layers.DenseConfig{Hidden: 5, Input: 3, Activation: layers.Tanh, Seed: 1}))},
		{"dense-relu-rows-linf", must(layers.NewDense(layers.DenseConfig{Hidden: 4, Input: 3, Rows: 3, Seed: 2, Lipschitz: layers.Constraint{P: math.Inf(1), Gamma: 0.8}}))},
		{"dense-lp4", must(layers.NewDense(layers.DenseConfig{Hidden: 6, Input: 2, Rows: 2, Activation: layers.Tanh, Lipschitz: layers.Constraint{P: 4, Gamma: 0.7}, Seed: 3}))},
		{"dense-weightnorm", must(layers.NewDense(layers.DenseConfig{Hidden: 5, Input: 3, Activation: layers.Tanh, Normalization: layers.WeightNorm, Seed: 8}))}, // proves nothing: unbiasedness and VJPs only
		{"dense-spectralnorm", must(layers.NewDense(layers.DenseConfig{Hidden: 5, Input: 3, Rows: 2, Activation: layers.Tanh, Normalization: layers.SpectralNorm, Seed: 9}))},
		{"conv-tanh", must(layers.NewConv(layers.ConvConfig{Channels: 2, Height: 4, Width: 3, Activation: layers.Tanh, CertifyEvery: 1, Seed: 1}))},
		{"conv-relu-inputconv", must(layers.NewConv(layers.ConvConfig{Channels: 3, Height: 3, Width: 4, InputConv: true, CertifyEvery: 1, Seed: 2}))},
		{"conv-tanh-kernels", must(layers.NewConv(layers.ConvConfig{Channels: 2, Height: 3, Width: 3, Kernels: 3, Activation: layers.Tanh, CertifyEvery: 1, Seed: 3}))},
		{"conv-tanh-groupnorm", must(layers.NewConv(layers.ConvConfig{Channels: 4, Height: 3, Width: 3, Kernels: 2, Groups: 2, InputConv: true, Activation: layers.Tanh, Seed: 5}))},                // proves nothing: unbiasedness and VJPs only
		{"conv-tanh-weightnorm-kernels", must(layers.NewConv(layers.ConvConfig{Channels: 2, Height: 3, Width: 3, Kernels: 2, Activation: layers.Tanh, Normalization: layers.WeightNorm, Seed: 6}))}, // proves nothing: unbiasedness and VJPs only
		{"conv-tanh-inputconv-kernels", must(layers.NewConv(layers.ConvConfig{Channels: 2, Height: 2, Width: 3, Kernels: 2, InputConv: true, Activation: layers.Tanh, CertifyEvery: 1, Seed: 4}))},
	}
	for _, tc := range cells {
		t.Run(tc.name, func(t *testing.T) {
			deqtest.CheckCell(t, tc.cell, &deqtest.Options{Seed: 7})
		})
	}
}

// meanFieldKitCells returns MeanField and Experts cells in every
// constraint family (ℓ2, which also proves Schatten-p; ℓ4; ℓ∞), both
// activations and vector and matrix states, for one seed.
func meanFieldKitCells(seed uint64) []struct {
	name string
	cell layers.Cell
} {
	must := func(c layers.Cell, err error) layers.Cell {
		if err != nil {
			panic(err)
		}
		return c
	}
	return []struct {
		name string
		cell layers.Cell
	}{
		{"meanfield-tanh", must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 4, Input: 3, Units: 7, Activation: layers.Tanh, Seed: seed}))},
		{"meanfield-relu-rows-lp4", must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 3, Input: 2, Units: 6, Rows: 2, Lipschitz: layers.Constraint{P: 4}, Seed: seed}))},
		{"meanfield-tanh-linf", must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 5, Input: 2, Units: 9, Activation: layers.Tanh, Lipschitz: layers.Constraint{P: math.Inf(1), Gamma: 0.7}, Seed: seed}))},
		{"experts-tanh", must(layers.NewExperts(layers.ExpertsConfig{Hidden: 4, Input: 3, Experts: 5, Activation: layers.Tanh, Seed: seed}))},
		{"experts-relu-rows", must(layers.NewExperts(layers.ExpertsConfig{Hidden: 3, Input: 2, Experts: 4, Rows: 2, Seed: seed}))},
		{"experts-tanh-linf-many", must(layers.NewExperts(layers.ExpertsConfig{Hidden: 3, Input: 2, Experts: 40, Activation: layers.Tanh, Lipschitz: layers.Constraint{P: math.Inf(1), Gamma: 0.7}, Seed: seed}))},
	}
}

// TestMeanFieldCellsPassKit runs the cell test kit on the mean-field cells
// across seeds: unbiased oracles, stochastic solves within their
// certificates of the exact fixed point, VJPs (exact and sampled) against
// central finite differences and the declared Lipschitz bounds.
func TestMeanFieldCellsPassKit(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		for _, tc := range meanFieldKitCells(seed) {
			t.Run(fmt.Sprintf("%s-seed%d", tc.name, seed), func(t *testing.T) {
				deqtest.CheckCell(t, tc.cell, &deqtest.Options{Seed: 7 + seed})
			})
		}
	}
}

// TestMeanFieldSolversWithinCertificate solves each mean-field cell with
// the growing-batch baseline and with VR-GHAL on its sampled oracle and
// checks that each lands within its certificate of Broyden's fixed point
// of the exact cell (residual 1e-10), ‖ẑ_b − z*_b‖ ≤ (B_b + r*)/(1 − γ̄)
// for every example, in every norm among ℓ2, ℓ∞, ℓ3, ℓ4 and Schatten-2,
// -4, -∞ in which the cell proves its bound; and that the growing-batch
// solve stops with Success, its sample count that of its oracle calls.
func TestMeanFieldSolversWithinCertificate(t *testing.T) {
	const batch = 3
	ctx := context.Background()
	for _, tc := range meanFieldKitCells(4) {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := tc.cell.Evaluator(batch)
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(5, 6))
			sh := tc.cell.Shape()
			x := make([]float64, batch*sh.InputLen())
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			require.NoError(t, ev.SetInput(x))
			// Every solver starts from the same point, the injection.
			z0 := make([]float64, ev.Len())
			require.NoError(t, ev.(layers.Injector).Injection(z0))
			gamma := tc.cell.Gamma()
			checked := 0
			for _, name := range deqtest.DefaultNorms {
				ex, err := solver.ParseNorm(name, sh.Rows, sh.Hidden)
				require.NoError(t, err)
				norm, err := solver.NewBatched(ex, batch)
				require.NoError(t, err)
				if !tc.cell.Proven(norm) {
					continue
				}
				checked++
				ref, err := solver.Solve(ctx, solver.Problem{Oracle: layers.ExactOracle(ev), Norm: norm}, z0,
					&solver.Settings{Tol: deqtest.FixedPointTol, MaxIter: 1000}, solver.Broyden{})
				require.NoError(t, err)
				require.Equal(t, solver.Success, ref.Status, "norm %s: Broyden", name)
				p := solver.Problem{Oracle: ev, Norm: norm}
				for _, m := range []solver.Method{
					solver.GrowingBatch{Gamma: gamma},
					solver.VRGHAL{Gamma: gamma, SampleScale: 0.1},
				} {
					st := &solver.Settings{Tol: 1e-2, MaxIter: 60, MaxSamples: 1 << 22, Seed: 3}
					res, err := solver.Solve(ctx, p, z0, st, m)
					require.NoError(t, err, "norm %s, %v", name, m)
					require.NotNil(t, res.Certificate)
					require.Equal(t, solver.RuleFiniteSum, res.Certificate.Rule)
					if _, ok := m.(solver.GrowingBatch); ok {
						require.Equal(t, solver.Success, res.Status, "norm %s: growing batch", name)
						require.LessOrEqual(t, res.Certificate.Bound, 1e-2)
					}
					per := sh.HiddenLen()
					for b := range batch {
						d := make([]float64, per)
						for i := range d {
							d[i] = res.X[b*per+i] - ref.X[b*per+i]
						}
						lim := (res.Certificate.PerExample[b] + ref.Residual) / (1 - gamma) * (1 + 1e-9)
						require.LessOrEqual(t, ex.Norm(d), lim, "norm %s, %v, example %d", name, m, b)
					}
				}
			}
			require.Positive(t, checked, "the cell proves its bound in some norm")
		})
	}
}
