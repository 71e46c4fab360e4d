package layers_test

import (
	"math"
	"testing"

	"github.com/deqgo/deq/deqtest"
	"github.com/deqgo/deq/layers"
)

// TestCellsPassKit runs the user-facing test kit (package deqtest) on the
// configurations of the package's own tests: unbiased oracles, stochastic
// solves within their certificates of the exact fixed point, VJPs against
// finite differences and the declared Lipschitz bounds, for every cell.
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
		{"wide-tanh", must(layers.NewWide(layers.WideConfig{Hidden: 4, Input: 3, Units: 7, Activation: layers.Tanh, Seed: 3}))},
		{"wide-relu-rows-lp4", must(layers.NewWide(layers.WideConfig{Hidden: 3, Input: 2, Units: 6, Rows: 2, Seed: 4, Lipschitz: layers.Constraint{P: 4}}))},
		{"wide-linf", must(layers.NewWide(layers.WideConfig{Hidden: 5, Input: 2, Units: 9, Activation: layers.Tanh, Lipschitz: layers.Constraint{P: math.Inf(1), Gamma: 0.7}, Seed: 5}))},
		{"mixture-tanh", must(layers.NewMixture(layers.MixtureConfig{Hidden: 4, Terms: 3, PatchLen: 2, Activation: layers.Tanh, Seed: 5}))},
		{"mixture-relu-rows", must(layers.NewMixture(layers.MixtureConfig{Hidden: 3, Terms: 4, PatchLen: 2, Rows: 2, Seed: 6}))},
		{"mixture-linf-many", must(layers.NewMixture(layers.MixtureConfig{Hidden: 3, Terms: 40, PatchLen: 1, Activation: layers.Tanh, Lipschitz: layers.Constraint{P: math.Inf(1), Gamma: 0.7}, Seed: 7}))},
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
