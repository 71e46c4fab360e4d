package problems_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// Solve an ℓ∞ affine contraction with Picard iteration on the exact operator
// and compare with the independently computed fixed point.
func Example() {
	linf, err := solver.NewLInf(16)
	if err != nil {
		log.Fatal(err)
	}
	p, err := problems.New(problems.Config{Name: "affine", Dim: 16, Norm: linf, Gamma: 0.5, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	res, err := solver.Solve(context.Background(), p.ExactProblem(), p.X0, &solver.Settings{Tol: 1e-10}, solver.Picard{})
	if err != nil {
		log.Fatal(err)
	}
	e, _ := p.FixedPointError(res.X)
	fmt.Printf("%s in %v: %v after %d iterations, ‖x − x*‖ ≤ 2e-10: %v\n", p.Name, p.Norm, res.Status, res.Stats.Iterations, e <= 2e-10)
	// Output:
	// affine in linf: Success after 13 iterations, ‖x − x*‖ ≤ 2e-10: true
}

func ExampleList() {
	for _, info := range problems.List() {
		fmt.Printf("%-13s %-21s %s\n", info.Name, info.Model, strings.Join(info.Norms, " "))
	}
	// Output:
	// affine        samplewise-lipschitz  l2 lp:P linf
	// affine-t      samplewise-lipschitz  l2 lp:P linf
	// affine-switch bounded-variance      l2 lp:P linf
	// matrix        samplewise-lipschitz  schatten:P l2
	// averaged      samplewise-lipschitz  l2 lp:P linf
	// shift         samplewise-lipschitz  l2 lp:P linf
	// mdp           samplewise-lipschitz  linf
	// mdp-large     samplewise-lipschitz  linf
}
