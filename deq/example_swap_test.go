package deq_test

import (
	"context"
	"fmt"
	"log"

	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// Build a DEQ layer on a stochastic cell, solve it with Broyden, then swap
// VR-GHAL in place of Broyden: one field changes, and the forward solve now
// runs on minibatches of the cell's hidden units and returns a residual
// certificate that holds with probability 1 − δ.
func Example_swapSolver() {
	ctx := context.Background()
	// z ↦ xU + b + (1/M) Σ_m v_m tanh(w_mᵀz + c_m) over M = 4096 hidden
	// units, projected to be 0.8-Lipschitz (mean-square) in ℓ2.
	cell, err := layers.NewMeanField(layers.MeanFieldConfig{
		Hidden: 8, Input: 4, Units: 4096, Activation: layers.Tanh,
		Lipschitz: layers.Constraint{P: 2, Gamma: 0.8}, Seed: 1,
	})
	if err != nil {
		log.Fatal(err)
	}
	x := []float64{0.5, -1, 0.25, 2, 1, 0, -0.5, 0.75} // two examples

	// Broyden sees the exact (full-average) cell.
	// Norm nil: residuals in ℓ2, example by example.
	layer, err := deq.New(cell, &deq.Settings{
		Forward:         solver.Broyden{},
		ForwardSettings: solver.Settings{Tol: 1e-10},
	})
	if err != nil {
		log.Fatal(err)
	}
	exact, err := layer.Forward(ctx, x)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("broyden:", exact.Result.Status, exact.Result.Certificate.Rule, "certificate")

	// Swap in VR-GHAL.
	layer, err = deq.New(cell, &deq.Settings{
		Forward:         solver.VRGHAL{Gamma: 0.8, Delta: 0.05},
		ForwardSettings: solver.Settings{Tol: 1e-3, Seed: 7},
	})
	if err != nil {
		log.Fatal(err)
	}
	sol, err := layer.Forward(ctx, x)
	if err != nil {
		log.Fatal(err)
	}
	c := sol.Result.Certificate
	fmt.Println("vrghal:", sol.Result.Status, "sampled:", sol.Sampled, "δ =", c.Delta)
	// For a γ̄-contraction, ‖ẑ − z*‖ ≤ ‖T(ẑ) − ẑ‖/(1 − γ̄) ≤ Bound/(1 − γ̄),
	// example by example (the bound is the largest per-example one).
	within := true
	for b := 0; b < 2; b++ {
		d := floats.Distance(sol.Z[b*8:(b+1)*8], exact.Z[b*8:(b+1)*8], 2)
		within = within && d <= c.Bound/(1-0.8)
	}
	fmt.Println("within certificate of Broyden's fixed point:", within)
	// Output:
	// broyden: Success exact certificate
	// vrghal: Success sampled: true δ = 0
	// within certificate of Broyden's fixed point: true
}
