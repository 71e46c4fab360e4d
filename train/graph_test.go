package train

import (
	"context"
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/deqgo/deq/deq"
)

// trainGraph is the gorgonia graph of one training batch of fixed size:
// the mean softmax cross-entropy of the model's logits, with gradients for
// every parameter. It was the training step of the vector models before
// the hand-written step (step.go) replaced it, and stays here as the
// reference that step is checked against.
type trainGraph struct {
	n       int
	vm      G.VM
	x, y    []float64 // backing of the input and one-hot label nodes
	applied *deq.Applied
	learn   G.Nodes
	decay   []bool // weight decay applies to learn[i]
	loss    G.Value
	logits  G.Value
}

// buildGraph builds the training graph of m for batches of n images with
// DEQ layer l; ctx is the context of every run.
func buildGraph(ctx context.Context, m *Model, l *deq.Layer, n int) (tg *trainGraph, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("train: building the training graph: %v", r)
		}
	}()
	g := G.NewGraph()
	tg = &trainGraph{n: n, x: make([]float64, n*m.InputDim), y: make([]float64, n*m.Classes)}
	matrix := func(name string, rows, cols int, t *tensor.Dense) *G.Node {
		return G.NewMatrix(g, tensor.Float64, G.WithShape(rows, cols), G.WithName(name), G.WithValue(t))
	}
	bind := func(p *param) *G.Node {
		node := matrix(p.name, p.rows, p.cols, tensor.New(tensor.WithShape(p.rows, p.cols), tensor.WithBacking(p.data)))
		tg.learn = append(tg.learn, node)
		tg.decay = append(tg.decay, p.decay)
		return node
	}
	x := matrix("x", n, m.InputDim, tensor.New(tensor.WithShape(n, m.InputDim), tensor.WithBacking(tg.x)))
	y := matrix("y", n, m.Classes, tensor.New(tensor.WithShape(n, m.Classes), tensor.WithBacking(tg.y)))
	encW, encB, outW, outB := bind(m.encW), bind(m.encB), bind(m.outW), bind(m.outB)
	enc := G.Must(G.Rectify(G.Must(G.BroadcastAdd(G.Must(G.Mul(x, encW)), encB, nil, []byte{0}))))
	if tg.applied, err = l.Apply(ctx, enc); err != nil {
		return nil, err
	}
	for i, p := range tg.applied.Params {
		tg.learn = append(tg.learn, p)
		tg.decay = append(tg.decay, m.cell.Params()[i].Name() != "b")
	}
	logits := G.Must(G.BroadcastAdd(G.Must(G.Mul(tg.applied.Z, outW)), outB, nil, []byte{0}))
	logp := G.Must(G.LogSoftMax(logits))
	cost := G.Must(G.Mul(G.Must(G.Sum(G.Must(G.HadamardProd(y, logp)))), G.NewConstant(-1/float64(n))))
	G.Read(cost, &tg.loss)
	G.Read(logits, &tg.logits)
	if _, err := G.Grad(cost, tg.learn...); err != nil {
		return nil, fmt.Errorf("train: differentiating the training graph: %w", err)
	}
	tg.vm = G.NewTapeMachine(g, G.BindDualValues(tg.learn...))
	return tg, nil
}

// grads returns the gradient slices of the learnable nodes after a run.
func (tg *trainGraph) grads() ([][]float64, error) {
	out := make([][]float64, len(tg.learn))
	for i, n := range tg.learn {
		g, err := n.Grad()
		if err != nil {
			return nil, fmt.Errorf("train: no gradient for %s: %w", n.Name(), err)
		}
		if out[i], err = floats(g); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// values returns the value slices of the learnable nodes.
func (tg *trainGraph) values() ([][]float64, error) {
	out := make([][]float64, len(tg.learn))
	for i, n := range tg.learn {
		var err error
		if out[i], err = floats(n.Value()); err != nil {
			return nil, err
		}
	}
	return out, nil
}
