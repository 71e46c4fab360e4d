package deq

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// The gorgonia Op of a Layer: its gradients against Backward, and the
// Lipschitz bound along training.

// matrixNode returns a named rows×cols input node holding data.
func matrixNode(g *G.ExprGraph, name string, rows, cols int, data []float64) *G.Node {
	t := tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(data))
	return G.NewMatrix(g, tensor.Float64, G.WithShape(rows, cols), G.WithName(name), G.WithValue(t))
}

func TestGraphGradientsMatchBackward(t *testing.T) {
	for _, tc := range gradCells() {
		t.Run(tc.name, func(t *testing.T) {
			sh := tc.cell.Shape()
			rng := rand.New(rand.NewPCG(31, 31))
			x := randVec(rng, tc.n*sh.InputLen(), 1)
			lo := loss{randVec(rng, tc.n*sh.HiddenLen(), 1)}
			l := must(New(tc.cell, &tight))
			wantX, wantTh, sol := gradients(t, l, x, lo)

			// The same loss in a gorgonia graph: L = ⟨c, z⟩ + ½‖z‖².
			g := G.NewGraph()
			xn := matrixNode(g, "x", tc.n, sh.InputLen(), slices.Clone(x))
			a, err := l.Apply(context.Background(), xn)
			require.NoError(t, err)
			c := matrixNode(g, "c", tc.n, sh.HiddenLen(), slices.Clone(lo.c))
			half := G.NewConstant(0.5)
			cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.HadamardProd(a.Z, c)))),
				G.Must(G.Mul(half, G.Must(G.Sum(G.Must(G.Square(a.Z))))))))
			learn := append(G.Nodes{xn}, a.Params...)
			_, err = G.Grad(cost, learn...)
			require.NoError(t, err)
			vm := G.NewTapeMachine(g, G.BindDualValues(learn...))
			defer vm.Close()
			layers.ZeroGrads(l.Params())
			for run := range 2 {
				vm.Reset()
				require.NoError(t, vm.RunAll())
				require.InDeltaSlice(t, sol.Z, a.Solution().Z, 1e-15)
				require.InDelta(t, lo.value(sol.Z), cost.Value().Data().(float64), 1e-12)
				gx, err := xn.Grad()
				require.NoError(t, err)
				// Gradients accumulate over runs until a solver step zeroes them.
				scale := float64(run + 1)
				require.InDeltaSlice(t, scaled(wantX, scale), gx.Data().([]float64), 1e-12)
				var gth []float64
				for _, p := range a.Params {
					gp, err := p.Grad()
					require.NoError(t, err)
					gth = append(gth, gp.Data().([]float64)...)
				}
				require.InDeltaSlice(t, scaled(wantTh, scale), gth, 1e-12)
			}
			require.Equal(t, Implicit, a.BackwardStats().Mode)
			require.Equal(t, solver.Success, a.BackwardStats().Adjoint.Status)
			for _, p := range l.Params() {
				require.Equal(t, 0.0, floats.Norm(p.GradData(), 1), "the graph leaves Param gradients alone")
			}
		})
	}
}

func scaled(x []float64, f float64) []float64 {
	y := slices.Clone(x)
	floats.Scale(f, y)
	return y
}

// model is a tiny encoder → DEQ → readout regression model in a gorgonia
// graph: loss = mean((tanh(X·We)·… → z*)·Wr − Y)².
type model struct {
	vm    G.VM
	layer *Layer
	learn G.Nodes
	loss  G.Value
	cell  layers.Cell
}

func newModel(cell layers.Cell, n int, seed uint64) (*model, error) {
	const in, out = 4, 2
	rng := rand.New(rand.NewPCG(seed, 1))
	xs := randVec(rng, n*in, 1)
	ys := make([]float64, n*out)
	for i := 0; i < n; i++ {
		ys[i*out] = math.Sin(xs[i*in] + xs[i*in+1])
		ys[i*out+1] = math.Cos(xs[i*in+2] - xs[i*in+3])
	}
	l, err := New(cell, &Settings{ForwardSettings: solver.Settings{Tol: 1e-8}, AdjointSettings: solver.Settings{Tol: 1e-8}})
	if err != nil {
		return nil, err
	}
	d, h := cell.Shape().InputLen(), cell.Shape().HiddenLen()
	g := G.NewGraph()
	x := matrixNode(g, "X", n, in, xs)
	y := matrixNode(g, "Y", n, out, ys)
	we := matrixNode(g, "We", in, d, randVec(rng, in*d, 0.5))
	wr := matrixNode(g, "Wr", h, out, randVec(rng, h*out, 0.5))
	enc := G.Must(G.Tanh(G.Must(G.Mul(x, we))))
	a, err := l.Apply(context.Background(), enc)
	if err != nil {
		return nil, err
	}
	pred := G.Must(G.Mul(a.Z, wr))
	cost := G.Must(G.Mean(G.Must(G.Square(G.Must(G.Sub(pred, y))))))
	m := &model{layer: l, cell: cell, learn: append(G.Nodes{we, wr}, a.Params...)}
	G.Read(cost, &m.loss)
	if _, err := G.Grad(cost, m.learn...); err != nil {
		return nil, err
	}
	m.vm = G.NewTapeMachine(g, G.BindDualValues(m.learn...))
	return m, nil
}

// step runs one forward/backward pass and returns the loss.
func (m *model) step() (float64, error) {
	m.vm.Reset()
	if err := m.vm.RunAll(); err != nil {
		return 0, err
	}
	return m.loss.Data().(float64), nil
}

// spectral returns ‖W‖₂, the largest singular value of W.
func spectral(w []float64, h int) float64 {
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(h, h, slices.Clone(w)), mat.SVDNone) {
		panic("singular value decomposition failed")
	}
	return svd.Values(nil)[0]
}

// rowSumT returns ‖Wᵀ‖_∞, the largest absolute row sum of Wᵀ.
func rowSumT(w []float64, h int) float64 {
	return mat.Norm(mat.DenseCopyOf(mat.NewDense(h, h, slices.Clone(w)).T()), math.Inf(1))
}

func TestLipschitzHoldsAfterEveryAdamUpdate(t *testing.T) {
	const h, gamma, steps = 6, 0.7, 25
	for _, norm := range []string{"l2", "linf"} {
		t.Run(norm, func(t *testing.T) {
			cell := must(layers.NewDense(layers.DenseConfig{Hidden: h, Input: 3, Activation: layers.Tanh, Lipschitz: constraint(norm, gamma), Seed: 5}))
			m := must(newModel(cell, 16, 3))
			// A large learning rate pushes W off the constraint at every step.
			adam := G.NewAdamSolver(G.WithLearnRate(0.1))
			measure := map[string]func([]float64, int) float64{"l2": spectral, "linf": rowSumT}[norm]
			violated := 0
			first, last := 0.0, 0.0
			for s := range steps {
				loss, err := m.step()
				require.NoError(t, err)
				if s == 0 {
					first = loss
				}
				last = loss
				require.NoError(t, adam.Step(G.NodesToValueGrads(m.learn)))
				if measure(cell.W().Data(), h) > gamma*(1+1e-9) {
					violated++
				}
				require.NoError(t, cell.Project())
				require.LessOrEqual(t, measure(cell.W().Data(), h), gamma*(1+1e-9), "step %d", s)
			}
			require.Positive(t, violated, "the optimiser must have left the constraint set")
			require.Less(t, last, first, "training must make progress")
		})
	}
}

// Example_training trains an encoder → DEQ → readout model in one gorgonia
// graph with gorgonia's Adam solver, projecting the DEQ cell back onto its
// Lipschitz constraint after every step.
func Example_training() {
	cell, err := layers.NewDense(layers.DenseConfig{
		Hidden: 8, Input: 3, Activation: layers.Tanh,
		Lipschitz: layers.Constraint{P: 2, Gamma: 0.8}, Seed: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := newModel(cell, 32, 7)
	if err != nil {
		fmt.Println(err)
		return
	}
	adam := G.NewAdamSolver(G.WithLearnRate(0.05))
	var losses []float64
	for range 40 {
		loss, err := m.step()
		if err != nil {
			fmt.Println(err)
			return
		}
		losses = append(losses, loss)
		if err := adam.Step(G.NodesToValueGrads(m.learn)); err != nil {
			fmt.Println(err)
			return
		}
		if err := cell.Project(); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Printf("loss fell below a tenth: %v\n", losses[len(losses)-1] < losses[0]/10)
	fmt.Printf("‖W‖₂ ≤ 0.8: %v\n", cell.Bound() <= 0.8*(1+1e-9))
	// Output:
	// loss fell below a tenth: true
	// ‖W‖₂ ≤ 0.8: true
}
