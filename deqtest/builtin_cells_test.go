package deqtest_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/deqgo/deq/deqtest"
	"github.com/deqgo/deq/layers"
)

func must[C any](c C, err error) C {
	if err != nil {
		panic(err)
	}
	return c
}

// builtin returns the correct built-in cells the kit must pass, seeded by
// seed: every cell type, both activations, vector and matrix states, and
// the ℓ2, ℓ∞ and ℓ4 constraints.
func builtin(seed uint64) []struct {
	name string
	cell layers.Cell
} {
	return []struct {
		name string
		cell layers.Cell
	}{
		{"dense-tanh", must(layers.NewDense(layers.DenseConfig{Hidden: 5, Input: 3, Activation: layers.Tanh, Seed: seed}))},
		{"dense-relu-rows-linf", must(layers.NewDense(layers.DenseConfig{Hidden: 4, Input: 3, Rows: 2, Lipschitz: layers.Constraint{P: math.Inf(1), Gamma: 0.8}, Seed: seed}))},
		{"meanfield-tanh", must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 4, Input: 3, Units: 7, Activation: layers.Tanh, Seed: seed}))},
		{"meanfield-relu-rows-lp4", must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 3, Input: 2, Units: 6, Rows: 2, Lipschitz: layers.Constraint{P: 4}, Seed: seed}))},
		{"experts-tanh", must(layers.NewExperts(layers.ExpertsConfig{Hidden: 4, Input: 6, Experts: 3, Activation: layers.Tanh, Seed: seed}))},
		{"experts-relu-rows", must(layers.NewExperts(layers.ExpertsConfig{Hidden: 3, Input: 8, Experts: 4, Rows: 2, Seed: seed}))},
		{"conv-tanh-kernels", must(layers.NewConv(layers.ConvConfig{Channels: 2, Height: 3, Width: 3, Kernels: 3, Activation: layers.Tanh, CertifyEvery: 1, Seed: seed}))},
		{"conv-relu-inputconv", must(layers.NewConv(layers.ConvConfig{Channels: 2, Height: 3, Width: 2, InputConv: true, CertifyEvery: 1, Seed: seed}))},
	}
}

func TestBuiltinCellsPass(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		for _, tc := range builtin(seed) {
			t.Run(fmt.Sprintf("%s/seed%d", tc.name, seed), func(t *testing.T) {
				deqtest.CheckCell(t, tc.cell, &deqtest.Options{Seed: seed})
			})
		}
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Error(args ...any)               { r.errs = append(r.errs, fmt.Sprint(args...)) }
func (r *recorder) Logf(format string, args ...any) { r.TB.Logf(format, args...) }
func (r *recorder) Failed() bool                    { return len(r.errs) > 0 }
func (r *recorder) Fatalf(format string, args ...any) {
	panic("deqtest must not call Fatalf: " + fmt.Sprintf(format, args...))
}

// caught runs check on a recorder and requires a failure whose message
// contains every one of want.
func caught(t *testing.T, check func(testing.TB), want ...string) {
	t.Helper()
	r := &recorder{TB: t}
	check(r)
	if len(r.errs) == 0 {
		t.Fatalf("the broken cell was not caught")
	}
	for _, e := range r.errs {
		t.Logf("caught: %s", e)
	}
	all := strings.Join(r.errs, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no failure message mentions %q", w)
		}
	}
}
