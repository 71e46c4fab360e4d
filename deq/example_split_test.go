package deq_test

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// Solve a batch of 100 examples as two parts on two goroutines: each part
// is its own Broyden solve, and the batch's certificate is the largest of
// the parts' bounds, which bounds every example's residual.
func ExampleSettings_split() {
	cell, err := layers.NewDense(layers.DenseConfig{Hidden: 16, Input: 4, Lipschitz: layers.Constraint{Gamma: 0.9}, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	layer, err := deq.New(cell, &deq.Settings{
		Forward:         solver.Broyden{},
		ForwardSettings: solver.Settings{Tol: 1e-6},
		Split:           2,
	})
	if err != nil {
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 100*4)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	sol, err := layer.Forward(context.Background(), x)
	if err != nil {
		log.Fatal(err)
	}
	c := sol.Result.Certificate
	largest := 0.0
	for _, p := range sol.Parts {
		largest = max(largest, p.Certificate.Bound)
	}
	fmt.Println("parts:", len(sol.Parts), "status:", sol.Result.Status)
	fmt.Println("bound is the parts' largest:", c.Bound == largest, "within tolerance:", c.Bound <= 1e-6)
	fmt.Println("per-example bounds:", len(c.PerExample))
	// Output:
	// parts: 2 status: Success
	// bound is the parts' largest: true within tolerance: true
	// per-example bounds: 100
}
