package layers

import (
	"cmp"
	"fmt"
	"math/bits"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/solver"
)

// Shape is the per-example shape of a cell's hidden state and input. The
// hidden state of one example is a Rows×Hidden matrix and its input a
// Rows×Input matrix, both row-major; Rows = 1 gives vector states. A batch
// of n examples stores example b at [b·Rows·Hidden, (b+1)·Rows·Hidden), so
// the batch is also a row-major (n·Rows)×Hidden matrix, and
// solver.Batched norms apply per example (ℓp entrywise, Schatten-p on the
// Rows×Hidden matrix).
type Shape struct {
	Rows, Hidden, Input int
}

// HiddenLen returns Rows·Hidden, the length of one example's hidden state.
func (s Shape) HiddenLen() int { return s.Rows * s.Hidden }

// InputLen returns Rows·Input, the length of one example's input.
func (s Shape) InputLen() int { return s.Rows * s.Input }

// Cell is an implicit cell f(z, x; θ) acting on batches of hidden states z
// and inputs x laid out as described by Shape.
//
// Cells are not safe for concurrent use: they share scratch space and
// cached graphs between calls.
type Cell interface {
	// Shape returns the per-example shapes.
	Shape() Shape
	// Params returns the trainable parameters, in a fixed order.
	Params() []*Param
	// Gamma returns the Lipschitz bound γ̄ that Project enforces.
	Gamma() float64
	// Proven reports whether z ↦ f(z, x) is provably Gamma()-Lipschitz
	// (for stochastic cells: its exact operator, and each unit sample in the
	// sense of the cell's Model) in the per-example norm n (the Example of
	// a *solver.Batched is used), as long as Project has run after the last
	// change to the parameters.
	Proven(n solver.Norm) bool
	// Project rescales the parameters in place so that the Lipschitz bound
	// holds again. Call it after every optimiser update.
	Project() error
	// Evaluator returns the evaluator for batches of n examples. Evaluators
	// and their graphs are built on first use and cached for a few batch
	// sizes; the cell keeps at most MaxCachedBatches of them.
	Evaluator(n int) (Evaluator, error)
}

// MaxCachedBatches is the number of batch sizes for which a cell keeps its
// evaluators (and their gorgonia graphs).
const MaxCachedBatches = 4

// Evaluator evaluates a cell on batches of a fixed number of examples. It
// is a solver.Oracle on the hidden state for the input fixed by the last
// SetInput, and it also computes vector–Jacobian products.
//
// For the built-in cells, Eval, EvalExact, VJPHidden and VJP use gonum
// code that computes the same expressions as the cell's gorgonia graphs
// and allocates nothing itself after the first call (gonum's matrix
// multiply allocates a few small objects for its goroutines when it runs
// in parallel on large batches); their evaluators are also GraphEvaluators,
// whose EvalGraph runs the graph's forward pass. A GraphCell runs its
// graphs for everything. A cell written by hand implements these methods
// in plain Go and needs no graph.
//
// A stochastic evaluator reports the unit samples each call used, draws the
// same terms for the same Sample in Eval and VJPHidden, and computes the
// exact average for a Size of at least Terms(); deqtest checks the rest of
// the contract (unbiasedness, VJPs, the bound). This package's cells that
// average M terms (and a GraphCell of Terms > 1) sample as follows. A Sample
// of Size m first rounds m up to the next power of two m'. If m' < M, Eval
// and VJPHidden draw m' term indices uniformly with replacement from
// rand.NewPCG(Seed, ·), so the same Sample at two points (and in Eval and
// VJPHidden) uses the same terms, and report m' samples; otherwise they use
// the exact average and report M samples. Drawing more terms than asked
// keeps the estimate unbiased and only lowers its variance; in exchange an
// evaluator builds at most ⌈log₂M⌉ + 1 hidden-state VJP graphs (one per
// size, the exact one included; only when its graphs run) whatever sizes a
// solver asks for, and keeps them all: together they are at most about twice
// the size of the exact one. (A solver checks its sample budget against the
// size it asks for, so a solve can end up to one requested size over its
// budget.) Deterministic cells ignore the Sample and report one sample.
//
// SetInput caches the input's contribution (such as xU + b), which Eval,
// EvalExact, VJPHidden and VJP use, so it must be called again after the
// parameters change. Methods panic if a slice has
// the wrong length and return an error if SetInput has not been called or a
// Sample size is not positive.
type Evaluator interface {
	solver.Oracle
	solver.Exact
	// Examples returns the number of examples in a batch.
	Examples() int
	// Terms returns M, the number of terms the cell averages (1 for a
	// deterministic cell).
	Terms() int
	// SetInput fixes the input x (length Examples()·Shape().InputLen()) for
	// the calls that follow. It copies x.
	SetInput(x []float64) error
	// VJPHidden writes into dst the vector–Jacobian product
	// (∂τ(z, x; ξ)/∂z)ᵀ g of the minibatch estimate τ that Eval computes
	// for s (the exact f when s.Size, rounded up to a power of two, is at
	// least Terms(), or the cell is deterministic) and returns the number of
	// unit samples used, which may exceed s.Size (see above).
	VJPHidden(dst, z, g []float64, s solver.Sample) (int, error)
	// VJP computes the exact vector–Jacobian products of f at (z, x) with
	// cotangent g: it writes (∂f/∂z)ᵀg into dz and (∂f/∂x)ᵀg into dx (either
	// may be nil) and adds (∂f/∂θ)ᵀg to the gradient of every parameter.
	VJP(dz, dx, z, g []float64) error
}

// GraphEvaluator is an Evaluator that can also compute f(z, x) with a
// gorgonia expression graph, a second implementation of the same map. Package
// deq never calls EvalGraph; checks do: deqtest.CheckCell requires it to
// agree with EvalExact when an evaluator implements it. The evaluators of
// every cell in this package implement it.
type GraphEvaluator interface {
	Evaluator
	// EvalGraph writes f(z, x) computed by the gorgonia graph into dst.
	EvalGraph(dst, z []float64) error
}

// ExactOracle returns the deterministic oracle z ↦ f(z, x) of an evaluator
// (its EvalExact), for the deterministic solvers. Each evaluation reports
// Terms() unit samples, the work of an exact average, so that sample counts
// compare with those of a stochastic solver on the same cell.
func ExactOracle(e Evaluator) solver.Oracle { return exactOracle{e} }

type exactOracle struct{ e Evaluator }

func (o exactOracle) Len() int            { return o.e.Len() }
func (o exactOracle) Model() solver.Model { return solver.Deterministic }
func (o exactOracle) Eval(dst, x []float64, _ solver.Sample) (int, error) {
	return o.e.Terms(), o.e.EvalExact(dst, x)
}
func (o exactOracle) EvalExact(dst, x []float64) error { return o.e.EvalExact(dst, x) }

var (
	_ solver.Oracle = exactOracle{}
	_ solver.Exact  = exactOracle{}
)

// checkConfig validates the fields every cell configuration has and
// returns the shape.
func checkConfig(kind string, rows, hidden, input int, act Activation) (Shape, error) {
	switch {
	case hidden < 1:
		return Shape{}, fmt.Errorf("layers: %s.Hidden = %d must be positive", kind, hidden)
	case input < 1:
		return Shape{}, fmt.Errorf("layers: %s.Input = %d must be positive", kind, input)
	case rows < 0:
		return Shape{}, fmt.Errorf("layers: %s.Rows = %d must not be negative", kind, rows)
	}
	if err := act.valid(); err != nil {
		return Shape{}, err
	}
	return Shape{Rows: cmp.Or(rows, 1), Hidden: hidden, Input: input}, nil
}

// evaluator returns the evaluator of a cell of the given kind for n
// examples from the cell's cache, building it on first use.
func evaluator[E Evaluator](kind string, evals *mru.Cache[int, E], n int, build func() E) (Evaluator, error) {
	if n < 1 {
		return nil, fmt.Errorf("layers: %s.Evaluator: batch size %d must be positive", kind, n)
	}
	return evals.Get(n, func() (E, error) { return build(), nil })
}

func checkLen(what string, got, want int) {
	if got != want {
		panic(fmt.Sprintf("layers: %s has length %d, want %d", what, got, want))
	}
}

// checkVJP checks the lengths of a VJP call's arguments: z, g and a non-nil
// dz of the state length n, a non-nil dx of the input length nx.
func checkVJP(n, nx int, dz, dx, z, g []float64) {
	checkLen("z", len(z), n)
	checkLen("g", len(g), n)
	if dz != nil {
		checkLen("dz", len(dz), n)
	}
	if dx != nil {
		checkLen("dx", len(dx), nx)
	}
}

// sampler draws term indices for Samples without allocating.
type sampler struct {
	src *rand.PCG
	rng *rand.Rand
	idx []int
}

// samplerStream is the second PCG word of term sampling.
const samplerStream = 0x5851f42d4c957f2d

func newSampler() *sampler {
	src := rand.NewPCG(0, samplerStream)
	return &sampler{src: src, rng: rand.New(src)}
}

// drawSize returns the number of terms a Sample of the given size (≥ 1)
// draws from m terms: size rounded up to a power of two, or m (the exact
// average) when that is not below m.
func drawSize(size, m int) int {
	if size >= m {
		return m
	}
	return min(1<<bits.Len(uint(size-1)), m)
}

// sampleBuckets returns the number of distinct values of drawSize(·, m):
// the powers of two below m, and m.
func sampleBuckets(m int) int { return bits.Len(uint(m-1)) + 1 }

// draw returns drawSize(s.Size, m) indices drawn uniformly with replacement
// from [0, m), or nil when that is m (the exact average).
// terms draws the terms of s among m like draw and also returns how many
// terms the call uses: len(idx), or m for the exact average (idx nil).
func (sp *sampler) terms(s solver.Sample, m int) (idx []int, k int, err error) {
	idx, err = sp.draw(s, m)
	if err != nil {
		return nil, 0, err
	}
	if idx == nil {
		return nil, m, nil
	}
	return idx, len(idx), nil
}

func (sp *sampler) draw(s solver.Sample, m int) ([]int, error) {
	if s.Size < 1 {
		return nil, fmt.Errorf("layers: Sample.Size = %d must be positive", s.Size)
	}
	k := drawSize(s.Size, m)
	if k == m {
		return nil, nil
	}
	sp.src.Seed(s.Seed, samplerStream)
	if cap(sp.idx) < k {
		sp.idx = make([]int, k, max(k, 2*cap(sp.idx)))
	}
	sp.idx = sp.idx[:k]
	for i := range sp.idx {
		sp.idx[i] = sp.rng.IntN(m)
	}
	return sp.idx, nil
}

// graph is a gorgonia expression graph with helpers to declare inputs.
type graph struct {
	g *G.ExprGraph
}

// input declares a rows×cols input node bound to a fresh backing slice,
// which the caller fills before each run.
func (g graph) input(name string, rows, cols int) (*G.Node, []float64) {
	data := make([]float64, rows*cols)
	return g.bound(name, view(data, rows, cols)), data
}

// bound declares an input node bound to t (a parameter or a view of one).
func (g graph) bound(name string, t *tensor.Dense) *G.Node {
	s := t.Shape()
	return G.NewTensor(g.g, tensor.Float64, s.Dims(), G.WithShape(s...), G.WithName(name), G.WithValue(t))
}

// build runs f, turning the panics of gorgonia.Must into an error.
func build(what string, f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("layers: building %s graph: %v", what, r)
		}
	}()
	f()
	return nil
}

// machine is a compiled tape for a set of output nodes.
type machine struct {
	vm G.VM
}

func newMachine(g *G.ExprGraph, roots ...*G.Node) *machine {
	return &machine{vm: G.NewTapeMachine(g.SubgraphRoots(roots...))}
}

func (m *machine) run() error {
	m.vm.Reset()
	if err := m.vm.RunAll(); err != nil {
		return fmt.Errorf("layers: running graph: %w", err)
	}
	return nil
}

// nodeData returns the float64 data of a node's value after a run.
func nodeData(n *G.Node) []float64 {
	return n.Value().Data().([]float64)
}

// addTo adds src to dst.
func addTo(dst, src []float64) {
	for i, v := range src {
		dst[i] += v
	}
}

// backprop returns the gradient nodes of ⟨g, out⟩ with respect to wrt; it
// panics on error (inside build).
func backprop(out, g *G.Node, wrt G.Nodes) G.Nodes {
	grads, err := G.Backpropagate(G.Nodes{out}, G.Nodes{g}, wrt)
	if err != nil {
		panic(err)
	}
	return grads
}

// The evaluators of this package's cells are GraphEvaluators.
var (
	_ GraphEvaluator = (*denseEval)(nil)
	_ GraphEvaluator = (*mfEval)(nil)
	_ GraphEvaluator = (*expEval)(nil)
	_ GraphEvaluator = (*convEval)(nil)
	_ GraphEvaluator = (*graphCellEval)(nil)
)
