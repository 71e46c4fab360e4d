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

// A stochastic cell written as a gorgonia expression: the average of M = 64
// terms tanh(zW_j + x), each with its own W_j (a PerTerm parameter).
// VR-GHAL solves the DEQ on minibatches of sampled terms. Every W_j is a
// diagonal matrix with entries of magnitude at most 0.5, so every term,
// hence every sampled average, is 0.5-Lipschitz in ℓ∞: the oracle is
// samplewise Lipschitz and the cell proves its bound in ℓ∞.
func ExampleNewGraphCell_terms() {
	const h, m = 2, 64
	w := make([]float64, m*h*h)
	for j := range m {
		w[j*h*h], w[j*h*h+3] = 0.5*math.Cos(float64(j)), 0.5*math.Sin(float64(j))
	}
	cell, err := layers.NewGraphCell(layers.GraphCellConfig{
		Shape:  layers.Shape{Hidden: h, Input: h},
		Params: []layers.ParamSpec{{Name: "W", Rows: h, Cols: h, PerTerm: true, Init: w}},
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
		Terms: m,
		Model: solver.SamplewiseLipschitz,
		Gamma: 0.5,
		Proven: func(n solver.Norm) bool {
			if b, ok := n.(*solver.Batched); ok {
				n = b.Example
			}
			_, ok := n.(solver.LInf)
			return ok
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	norm, err := solver.NewLInf(h)
	if err != nil {
		log.Fatal(err)
	}
	layer, err := deq.New(cell, &deq.Settings{
		Norm:            norm,
		Forward:         solver.VRGHAL{},
		ForwardOracle:   deq.Sampled,
		ForwardSettings: solver.Settings{Tol: 1e-2, Seed: 1},
	})
	if err != nil {
		log.Fatal(err)
	}
	sol, err := layer.Forward(context.Background(), []float64{1, -0.5})
	if err != nil {
		log.Fatal(err)
	}
	st := sol.Result.Stats
	fmt.Println("sampled:", sol.Sampled, "proven:", sol.Proven)
	fmt.Println("fewer unit samples per call than terms:", st.Samples < int64(m)*int64(st.Calls))
	fmt.Println("certified residual within tolerance:", sol.Result.Certificate.Bound <= 1e-2)
	// Output:
	// sampled: true proven: true
	// fewer unit samples per call than terms: true
	// certified residual within tolerance: true
}
