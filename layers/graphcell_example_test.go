package layers_test

import (
	"context"
	"fmt"
	"log"
	"math"

	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// A DEQ on a cell written as a gorgonia expression, z ↦ tanh(zW + x): no
// derivatives to write, gorgonia differentiates the graph. W is 0.5 times
// a rotation, so ‖W‖₂ = 0.5 and, tanh being 1-Lipschitz, the cell is
// 0.5-Lipschitz in ℓ2; the cell declares that bound.
func ExampleNewGraphCell() {
	cell, err := layers.NewGraphCell(layers.GraphCellConfig{
		Shape:  layers.Shape{Hidden: 2, Input: 2},
		Params: []layers.ParamSpec{{Name: "W", Rows: 2, Cols: 2, Init: []float64{0.3, -0.4, 0.4, 0.3}}},
		Build: func(_ *G.ExprGraph, z, x *G.Node, p []*G.Node) (*G.Node, error) {
			zw, err := G.Mul(z, p[0])
			if err != nil {
				return nil, err
			}
			pre, err := G.Add(zw, x)
			if err != nil {
				return nil, err
			}
			return G.Tanh(pre)
		},
		Gamma: 0.5,
	})
	if err != nil {
		log.Fatal(err)
	}
	layer, err := deq.New(cell, &deq.Settings{
		Forward:         solver.Broyden{},
		ForwardSettings: solver.Settings{Tol: 1e-10},
	})
	if err != nil {
		log.Fatal(err)
	}
	x := []float64{1, -0.5, 0.25, 2} // two examples
	ctx := context.Background()
	sol, err := layer.Forward(ctx, x)
	if err != nil {
		log.Fatal(err)
	}
	// Check the fixed point with the cell itself: ‖f(z*, x) − z*‖∞.
	ev, err := cell.Evaluator(2)
	if err != nil {
		log.Fatal(err)
	}
	if err := ev.SetInput(x); err != nil {
		log.Fatal(err)
	}
	fz := make([]float64, ev.Len())
	if err := ev.EvalExact(fz, sol.Z); err != nil {
		log.Fatal(err)
	}
	res := 0.0
	for i, v := range fz {
		res = math.Max(res, math.Abs(v-sol.Z[i]))
	}
	// The gradient of L = Σ z* with respect to W, by the implicit function
	// theorem, from the graph's vector–Jacobian products.
	gz := []float64{1, 1, 1, 1}
	if _, err := layer.Backward(ctx, sol, gz, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sol.Result.Status)
	fmt.Printf("z* = %.4f\n", sol.Z)
	fmt.Printf("residual %.9f\n", res)
	fmt.Printf("∂L/∂W = %.4f\n", cell.Params()[0].GradData())
	// Output:
	// Success
	// z* = [0.7203 -0.7694 0.6869 0.9651]
	// residual 0.000000000
	// ∂L/∂W = [0.7326 0.4535 0.2465 -0.3365]
}
