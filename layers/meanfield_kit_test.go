package layers_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/deqgo/deq/deqtest"
	"github.com/deqgo/deq/layers"
)

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
