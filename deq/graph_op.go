package deq

import (
	"context"
	"fmt"
	"hash"
	"hash/fnv"
	"slices"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/deqgo/deq/layers"
)

// Applied is a Layer applied to a node of a gorgonia graph by Apply.
type Applied struct {
	// Z is the node of the fixed point z*, of shape n×(Rows·Hidden): row b
	// is example b's hidden state.
	Z *G.Node
	// Params are input nodes bound to the cell's parameters (their values
	// share storage with layers.Param.Data), in Params() order. Add them to
	// the model's learnables: gorgonia.Grad gives them the DEQ gradients
	// and a gorgonia solver updates them, and with them the cell.
	Params G.Nodes

	st *opState
}

// Solution returns the Solution of the last forward pass run by the graph,
// nil before the first. When the forward solve fails (the graph's run
// returns its error) it is the Solution Forward returned with the error,
// possibly nil: nil for a refused input (a NaN or ±Inf in it among
// others), Status Diverged for a cell that returned NaN or ±Inf during the
// solve (see Forward).
func (a *Applied) Solution() *Solution { return a.st.sol }

// BackwardStats returns the statistics of the last backward pass run by
// the graph, nil before the first.
func (a *Applied) BackwardStats() *BackwardStats { return a.st.back }

// Apply adds the layer to the gorgonia graph of x, an n×InputLen matrix
// node (row b is example b's input; n is fixed by the graph), and returns
// the fixed point node and the parameter nodes.
//
// The forward op runs Forward; its symbolic derivative is an op running
// Backward, which yields ∂L/∂x for the upstream graph (an encoder) and the
// parameter gradients for the Params nodes. Train as any gorgonia model:
//
//	a, _ := layer.Apply(ctx, enc)
//	// readout and loss built on a.Z ...
//	learn := append(encoderAndReadoutParams, a.Params...)
//	gorgonia.Grad(loss, learn...)
//	vm := gorgonia.NewTapeMachine(g, gorgonia.BindDualValues(learn...))
//	adam := gorgonia.NewAdamSolver()
//	// per batch: vm.Reset(); vm.RunAll(); adam.Step(gorgonia.NodesToValueGrads(learn)); layer.Cell().Project()
//
// Use either the Params nodes or layers.ValueGrads(layer.Params()) with a
// gorgonia solver, not both. The graph's backward pass leaves the
// layers.Param gradients as it found them. ctx is used by every run of the
// graph. A Layer may be applied to several graphs (say, one per batch
// size); each application keeps its own last Solution.
func (l *Layer) Apply(ctx context.Context, x *G.Node) (*Applied, error) {
	if x == nil {
		return nil, fmt.Errorf("deq: Apply: nil input node")
	}
	d := l.cell.Shape().InputLen()
	if s := x.Shape(); len(s) != 2 || s[1] != d || s[0] < 1 {
		return nil, fmt.Errorf("deq: Apply: input node has shape %v, want (n, %d)", x.Shape(), d)
	}
	if x.Dtype() != tensor.Float64 {
		return nil, fmt.Errorf("deq: Apply: input node has dtype %v, want float64", x.Dtype())
	}
	l.applied++
	st := &opState{l: l, ctx: ctx, id: l.applied}
	params := l.Params()
	nodes := make(G.Nodes, len(params))
	for i, p := range params {
		r, c := p.Dims()
		nodes[i] = G.NewMatrix(x.Graph(), tensor.Float64, G.WithShape(r, c),
			G.WithName(fmt.Sprintf("deq%d.%s", st.id, p.Name())), G.WithValue(p.Value()))
	}
	z, err := G.ApplyOp(forwardOp{pureOp{st}}, append(G.Nodes{x}, nodes...)...)
	if err != nil {
		return nil, fmt.Errorf("deq: Apply: %w", err)
	}
	return &Applied{Z: z, Params: nodes, st: st}, nil
}

// opState is shared by the ops of one application of a Layer.
type opState struct {
	l     *Layer
	ctx   context.Context
	id    int
	sol   *Solution
	back  *BackwardStats
	grads [][]float64
}

var matrixType = G.TensorType{Dims: 2, Of: tensor.Float64}

func fnType(inputs int) hm.Type {
	ts := make([]hm.Type, inputs+1)
	for i := range ts {
		ts[i] = matrixType
	}
	return hm.NewFnType(ts...)
}

func hashOf(op G.Op) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

// floatData returns the data of a float64 matrix value, materialising
// views.
func floatData(v G.Value) ([]float64, error) {
	t, ok := v.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("deq: op input is %T, want *tensor.Dense", v)
	}
	if t.IsView() {
		t = t.Materialize().(*tensor.Dense)
	}
	d, ok := t.Data().([]float64)
	if !ok {
		return nil, fmt.Errorf("deq: op input has dtype %v, want float64", t.Dtype())
	}
	return d, nil
}

// pureOp holds the Layer's op state and the gorgonia.Op methods its three
// ops share: each runs in Go, returns a fresh value and overwrites no input.
type pureOp struct{ st *opState }

func (pureOp) ReturnsPtr() bool     { return false }
func (pureOp) CallsExtern() bool    { return false }
func (pureOp) OverwritesInput() int { return -1 }

// forwardOp maps (x, θ₁, …, θ_k) to z*.
type forwardOp struct{ pureOp }

var (
	_ G.Op   = forwardOp{}
	_ G.SDOp = forwardOp{}
)

func (op forwardOp) Arity() int { return 1 + len(op.st.l.Params()) }
func (op forwardOp) Type() hm.Type {
	return fnType(op.Arity())
}
func (op forwardOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	n, err := in[0].DimSize(0)
	if err != nil {
		return nil, err
	}
	return tensor.Shape{n, op.st.l.cell.Shape().HiddenLen()}, nil
}
func (op forwardOp) Do(vals ...G.Value) (G.Value, error) {
	x, err := floatData(vals[0])
	if err != nil {
		return nil, err
	}
	sol, err := op.st.l.Forward(op.st.ctx, x)
	// Keep the Solution of a failed solve too (it may be nil), so that the
	// caller can tell a diverged solve from other failures.
	op.st.sol = sol
	if err != nil {
		return nil, err
	}
	return tensor.New(tensor.WithShape(sol.Examples, op.st.l.cell.Shape().HiddenLen()), tensor.WithBacking(slices.Clone(sol.Z))), nil
}
func (op forwardOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "deq.forward(%p)", op.st) }
func (op forwardOp) Hashcode() uint32      { return hashOf(op) }
func (op forwardOp) String() string        { return fmt.Sprintf("DEQ%d", op.st.id) }
func (op forwardOp) DiffWRT(n int) []bool  { return slices.Repeat([]bool{true}, n) }
func (op forwardOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	bw, err := G.ApplyOp(backwardOp{op.pureOp}, inputs[0], output, grad)
	if err != nil {
		return nil, err
	}
	out := G.Nodes{bw}
	for i := range op.st.l.Params() {
		pg, err := G.ApplyOp(paramGradOp{op.pureOp, i}, bw)
		if err != nil {
			return nil, err
		}
		out = append(out, pg)
	}
	return out, nil
}

// backwardOp maps (x, z*, ∂L/∂z*) to ∂L/∂x, keeping ∂L/∂θ for the
// paramGradOps.
type backwardOp struct{ pureOp }

var _ G.Op = backwardOp{}

func (op backwardOp) Arity() int    { return 3 }
func (op backwardOp) Type() hm.Type { return fnType(3) }
func (op backwardOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op backwardOp) Do(vals ...G.Value) (G.Value, error) {
	st := op.st
	if st.sol == nil {
		return nil, fmt.Errorf("deq: backward op ran before the forward op")
	}
	gz, err := floatData(vals[2])
	if err != nil {
		return nil, err
	}
	params := st.l.Params()
	saved := make([][]float64, len(params))
	for i, p := range params {
		saved[i] = slices.Clone(p.GradData())
		p.ZeroGrad()
	}
	dx := make([]float64, len(st.sol.X))
	back, err := st.l.Backward(st.ctx, st.sol, gz, dx)
	st.back = back
	if st.grads == nil {
		st.grads = make([][]float64, len(params))
	}
	for i, p := range params {
		st.grads[i] = slices.Clone(p.GradData())
		copy(p.GradData(), saved[i])
	}
	if err != nil {
		return nil, err
	}
	return tensor.New(tensor.WithShape(st.sol.Examples, st.l.cell.Shape().InputLen()), tensor.WithBacking(dx)), nil
}
func (op backwardOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "deq.backward(%p)", op.st) }
func (op backwardOp) Hashcode() uint32      { return hashOf(op) }
func (op backwardOp) String() string        { return fmt.Sprintf("DEQ%dBackward", op.st.id) }

// paramGradOp returns ∂L/∂θ_i computed by the backward op it takes as
// input.
type paramGradOp struct {
	pureOp
	i int
}

var _ G.Op = paramGradOp{}

func (op paramGradOp) param() *layers.Param { return op.st.l.Params()[op.i] }
func (op paramGradOp) Arity() int           { return 1 }
func (op paramGradOp) Type() hm.Type        { return fnType(1) }
func (op paramGradOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	r, c := op.param().Dims()
	return tensor.Shape{r, c}, nil
}
func (op paramGradOp) Do(...G.Value) (G.Value, error) {
	r, c := op.param().Dims()
	return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(slices.Clone(op.st.grads[op.i]))), nil
}
func (op paramGradOp) WriteHash(h hash.Hash) {
	fmt.Fprintf(h, "deq.paramgrad(%p,%d)", op.st, op.i)
}
func (op paramGradOp) Hashcode() uint32 { return hashOf(op) }
func (op paramGradOp) String() string {
	return fmt.Sprintf("DEQ%dGrad(%s)", op.st.id, op.param().Name())
}
