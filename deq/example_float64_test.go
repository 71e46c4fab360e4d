package deq_test

import (
	"context"
	"fmt"
	"log"

	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// Solve a convolutional cell with float32 products by VR-GHAL, and certify
// the fixed point on the cell's float64 map, whose Lipschitz bound the cell
// proves: the float32 map alone proves nothing, so VR-GHAL would get no
// contraction constant; with CertifyFloat64 it gets the cell's γ̄, and the
// certificate is the float64 map's residual.
func Example_certifyFloat64() {
	cell, err := layers.NewConv(layers.ConvConfig{
		Channels: 4, Height: 6, Width: 6, Gamma: 0.9, Precision: layers.Float32, Seed: 1,
	})
	if err != nil {
		log.Fatal(err)
	}
	x := make([]float64, 2*cell.Shape().InputLen()) // two examples
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	norm, err := solver.NewLP(2, cell.Shape().HiddenLen())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("float32 map proven:", cell.Proven(norm), "float64 map proven:", cell.ReferenceProven(norm))

	layer, err := deq.New(cell, &deq.Settings{
		Forward:         solver.VRGHAL{},
		ForwardSettings: solver.Settings{Tol: 1e-4},
		CertifyFloat64:  true,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("VR-GHAL's γ̄:", layer.Settings().Forward.(solver.VRGHAL).Gamma)
	sol, err := layer.Forward(context.Background(), x)
	if err != nil {
		log.Fatal(err)
	}
	c := sol.Result.Certificate
	fmt.Println(sol.Result.Status, "proven:", sol.Proven, "rule:", c.Rule, "within tolerance:", c.Bound <= 1e-4)
	fmt.Println("float64 evaluations:", sol.Result.Stats.Calls-sol.Float32.Stats.Calls)
	// Output:
	// float32 map proven: false float64 map proven: true
	// VR-GHAL's γ̄: 0.9
	// Success proven: true rule: exact within tolerance: true
	// float64 evaluations: 1
}
