package layers

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/solver"
)

// evalBase is the part of an evaluator that the cells share: the batch, a
// copy of the input, the term sampler of a stochastic cell and the forward
// machine of the full graph. The graph runs of EvalGraph, VJPHidden and VJP
// are those of runner, parameterised by the parts in which the cells'
// graphs differ (graphEval); runner's VJPHidden and VJP call the cell's
// fused gonum code instead when it has some (fusedVJP), unless useGraph
// (set by tests and benchmarks) selects the graphs.
type evalBase struct {
	kind     string // the cell's name, for errors
	n, rows  int    // examples, and rows of the batch matrix
	hidden   int    // Hidden
	m        int    // Terms(): M, or 1 for a deterministic cell
	x        []float64
	hasX     bool
	inputs   uint64   // number of SetInput calls, which invalidate caches
	sp       *sampler // nil for a deterministic cell
	fwd      *machine // forward pass of the full graph, once it is built
	useGraph bool     // VJPHidden and VJP run the gorgonia graphs
}

// newEvalBase returns the base of an evaluator of kind for n examples of
// shape s averaging m terms, with a term sampler when the cell is
// stochastic (a deterministic cell has m = 1).
func newEvalBase(kind string, s Shape, n, m int, stochastic bool) evalBase {
	b := evalBase{
		kind: kind, n: n, rows: n * s.Rows, hidden: s.Hidden, m: m,
		x: make([]float64, n*s.InputLen()),
	}
	if stochastic {
		b.sp = newSampler()
	}
	return b
}

func (b *evalBase) base() *evalBase { return b }

// Len implements solver.Oracle.
func (b *evalBase) Len() int { return b.rows * b.hidden }

// Examples implements Evaluator.
func (b *evalBase) Examples() int { return b.n }

// Terms implements Evaluator.
func (b *evalBase) Terms() int { return b.m }

// setInput checks and copies the input; the cell computes its input terms
// from b.x and then sets hasX.
func (b *evalBase) setInput(x []float64) {
	checkLen("input", len(x), len(b.x))
	copy(b.x, x)
	b.inputs++
}

// ready returns an error unless SetInput has been called.
func (b *evalBase) ready() error {
	if !b.hasX {
		return fmt.Errorf("layers: %s evaluator: SetInput has not been called", b.kind)
	}
	return nil
}

// checkEval checks the arguments of a forward evaluation.
func (b *evalBase) checkEval(dst, z []float64) error {
	checkLen("dst", len(dst), b.Len())
	checkLen("z", len(z), b.Len())
	return b.ready()
}

// checkHidden checks the arguments of VJPHidden.
func (b *evalBase) checkHidden(dst, z, g []float64) error {
	checkLen("g", len(g), b.Len())
	return b.checkEval(dst, z)
}

// checkFull checks the arguments of VJP.
func (b *evalBase) checkFull(dz, dx, z, g []float64) error {
	checkVJP(b.Len(), len(b.x), dz, dx, z, g)
	return b.ready()
}

// terms draws the terms of s (see sampler.terms); a deterministic cell uses
// its one term whatever s is.
func (b *evalBase) terms(s solver.Sample) (idx []int, k int, err error) {
	if b.sp == nil {
		return nil, 1, nil
	}
	return b.sp.terms(s, b.m)
}

// tape is a cell graph built once: the output f (or the minibatch average
// τ), the gradient nodes of ⟨g, out⟩ for a cotangent input g (with respect
// to the state first; in a full graph then the input and the cell's
// parameters) and the machine that computes them. A TapeMachine is reset
// before every run (machine.run) and belongs to its evaluator, which is not
// safe for concurrent use.
type tape struct {
	full  bool
	out   *G.Node
	grads G.Nodes
	m     *machine
	z, g  []float64 // backings of the inputs z and g (rows×Hidden)
}

// buildVJP builds a cell's graph into t (errors named by kind): it
// declares the rows×hidden inputs z and g, keeps their backings in t, and
// lets body add the rest and call finish.
func buildVJP(kind string, t *tape, rows, hidden int, body func(gr graph, z, g *G.Node)) error {
	gr := graph{G.NewGraph()}
	return build(kind, func() {
		var z, g *G.Node
		z, t.z = gr.input("z", rows, hidden)
		g, t.g = gr.input("g", rows, hidden)
		body(gr, z, g)
	})
}

func (t *tape) tp() *tape { return t }

// taped is a cell's graph type, which embeds a tape.
type taped interface{ tp() *tape }

// finish completes a graph being built inside build: it adds the gradient
// nodes of ⟨g, out⟩ with respect to wrt and the machine computing them,
// and for a full graph the evaluator's forward machine.
func (b *evalBase) finish(t *tape, gr graph, full bool, out, g *G.Node, wrt G.Nodes) {
	t.full, t.out = full, out
	t.grads = backprop(out, g, wrt)
	t.m = newMachine(gr.g, t.grads...)
	if full {
		b.fwd = newMachine(gr.g, out)
	}
}

// graphEval is what an evaluator supplies to the shared graph runs: the
// parts in which the cells' graphs differ (their layout and the way data
// moves in and out of them).
type graphEval[T taped] interface {
	base() *evalBase
	// graph returns the full graph (full, with k = M) or the hidden-state
	// graph of a k-term minibatch, building it on first use.
	graph(full bool, k int) (T, error)
	// load fills the inputs of t for the state z, the cotangent g (nil for
	// a forward run) and, in a hidden graph, the terms idx (nil: all M).
	load(t T, z, g []float64, idx []int)
	// readState writes the value of a state-shaped node (the output or the
	// gradient with respect to z) into dst, laid out as Shape describes.
	readState(dst []float64, n *G.Node)
	// readGrads writes the gradient with respect to the input into dx
	// unless it is nil and adds the parameter gradients, from the gradient
	// nodes of a full graph.
	readGrads(dx []float64, grads G.Nodes)
}

// fusedVJP is implemented by the evaluators with fused gonum VJPs, which
// runner calls unless useGraph is set, after checking the arguments and
// drawing the terms: fusedHidden computes VJPHidden for the terms idx (nil:
// all) of a k-term estimate, fusedFull computes VJP.
type fusedVJP interface {
	fusedHidden(dst, z, g []float64, idx []int, k int)
	fusedFull(dz, dx, z, g []float64)
}

// runner runs a cell's graphs: every evaluator embeds one, pointing at
// itself, for its EvalGraph, VJPHidden and VJP. Each run checks the
// arguments, checks that SetInput has been called and draws the terms;
// then it calls the fused code (see fusedVJP), or picks the graph, copies
// the arguments in, runs the graph's TapeMachine (reset first) and copies
// the results out, adding parameter gradients for VJP.
type runner[T taped] struct{ e graphEval[T] }

// EvalGraph implements Evaluator with the full graph's forward machine.
func (r runner[T]) EvalGraph(dst, z []float64) error {
	e := r.e
	b := e.base()
	if err := b.checkEval(dst, z); err != nil {
		return err
	}
	t, err := e.graph(true, b.m)
	if err != nil {
		return err
	}
	e.load(t, z, nil, nil)
	if err := b.fwd.run(); err != nil {
		return err
	}
	e.readState(dst, t.tp().out)
	return nil
}

// VJPHidden implements Evaluator with the evaluator's fused code, or with
// the hidden graph of the minibatch size that s draws when the evaluator
// has none or useGraph is set.
func (r runner[T]) VJPHidden(dst, z, g []float64, s solver.Sample) (int, error) {
	e := r.e
	b := e.base()
	if err := b.checkHidden(dst, z, g); err != nil {
		return 0, err
	}
	idx, k, err := b.terms(s)
	if err != nil {
		return 0, err
	}
	if f, ok := e.(fusedVJP); ok && !b.useGraph {
		f.fusedHidden(dst, z, g, idx, k)
		return k, nil
	}
	t, err := e.graph(false, k)
	if err != nil {
		return 0, err
	}
	e.load(t, z, g, idx)
	tp := t.tp()
	if err := tp.m.run(); err != nil {
		return 0, err
	}
	e.readState(dst, tp.grads[0])
	return k, nil
}

// VJP implements Evaluator with the evaluator's fused code, or with the
// full graph when the evaluator has none or useGraph is set.
func (r runner[T]) VJP(dz, dx, z, g []float64) error {
	e := r.e
	b := e.base()
	if err := b.checkFull(dz, dx, z, g); err != nil {
		return err
	}
	if f, ok := e.(fusedVJP); ok && !b.useGraph {
		f.fusedFull(dz, dx, z, g)
		return nil
	}
	t, err := e.graph(true, b.m)
	if err != nil {
		return err
	}
	e.load(t, z, g, nil)
	tp := t.tp()
	if err := tp.m.run(); err != nil {
		return err
	}
	if dz != nil {
		e.readState(dz, tp.grads[0])
	}
	e.readGrads(dx, tp.grads)
	return nil
}

// rowMajor gives readState and readGrads to the evaluators whose graphs
// lay out states, inputs and parameters as the cell stores them (Dense and
// MeanField): the gradient nodes are ∂/∂z, ∂/∂x, then the parameters in Params
// order.
type rowMajor struct{ params []*Param }

func (r rowMajor) readState(dst []float64, n *G.Node) { copy(dst, nodeData(n)) }

func (r rowMajor) readGrads(dx []float64, grads G.Nodes) {
	if dx != nil {
		copy(dx, nodeData(grads[1]))
	}
	for i, p := range r.params {
		addTo(p.GradData(), nodeData(grads[2+i]))
	}
}

// graphs keeps an evaluator's graphs: the full graph, built once, and the
// hidden-state graphs, one per minibatch size bucket (drawSize).
type graphs[T comparable] struct {
	full   T
	hidden mru.Cache[int, T]
}

// newGraphs returns the graph store of a cell averaging m terms.
func newGraphs[T comparable](m int) graphs[T] {
	return graphs[T]{hidden: mru.Cache[int, T]{Max: sampleBuckets(m)}}
}

// get returns the full graph or the hidden graph of k terms, building it
// with build on first use.
func (gs *graphs[T]) get(full bool, k int, build func() (T, error)) (T, error) {
	if !full {
		return gs.hidden.Get(k, build)
	}
	var zero T
	if gs.full != zero {
		return gs.full, nil
	}
	v, err := build()
	if err != nil {
		return zero, err
	}
	gs.full = v
	return v, nil
}
