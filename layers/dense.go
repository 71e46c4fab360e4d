package layers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/solver"
)

// DenseConfig configures a Dense cell. Zero values select the documented
// defaults.
type DenseConfig struct {
	// Hidden is the number of hidden features per row. Required.
	Hidden int
	// Input is the number of input features per row. Required.
	Input int
	// Rows is the number of rows of an example's hidden state and input
	// (see Shape). Zero means 1: vector states.
	Rows int
	// Activation is σ; the zero value is ReLU.
	Activation Activation
	// Lipschitz is the constraint on W that Project enforces.
	Lipschitz Constraint
	// Seed seeds the initialisation: W and U have independent N(0, 1/Hidden)
	// and N(0, 1/Input) entries (W then projected), b is zero.
	Seed uint64
}

// Dense is the cell f(z, x) = σ(zW + xU + b), applied to every row z of a
// hidden state (and the matching row x of the input): with column vectors,
// z ↦ σ(Wᵀz + Uᵀx + b).
//
// After Project, ‖Wᵀ‖_{p→p} ≤ γ̄ in the ℓp norm of Lipschitz.Norm (see
// Constraint), so the cell is γ̄-Lipschitz in z in that norm, per example
// (vector or entrywise on the Rows×Hidden matrix), and in Schatten-2 for l2.
// Under Schatten-p with p ≠ 2 and Rows > 1 no bound is proven: the linear
// part is ‖W‖₂-Lipschitz in every Schatten norm but the elementwise
// activation need not be nonexpansive there; Proven reports false and deq
// monitors the ratios empirically.
//
// Its parameters are W (Hidden×Hidden), U (Input×Hidden) and b (1×Hidden).
type Dense struct {
	shape Shape
	act   Activation
	con   *opNorm
	w     *Param
	u     *Param
	b     *Param
	evals cache[*denseEval]
}

var _ Cell = (*Dense)(nil)

// NewDense returns a Dense cell initialised from cfg.Seed and projected.
func NewDense(cfg DenseConfig) (*Dense, error) {
	shape, err := checkShape("DenseConfig", cfg.Rows, cfg.Hidden, cfg.Input)
	if err != nil {
		return nil, err
	}
	if err := cfg.Activation.valid(); err != nil {
		return nil, err
	}
	con, err := newOpNorm(cfg.Lipschitz, cfg.Hidden)
	if err != nil {
		return nil, err
	}
	h, d := cfg.Hidden, cfg.Input
	c := &Dense{
		shape: shape,
		act:   cfg.Activation,
		con:   con,
		w:     newParam("W", h, h),
		u:     newParam("U", d, h),
		b:     newParam("b", 1, h),
		evals: cache[*denseEval]{max: MaxCachedBatches},
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xd1b54a32d192ed03))
	fillNormal(c.w.Data(), rng, 1/math.Sqrt(float64(h)))
	fillNormal(c.u.Data(), rng, 1/math.Sqrt(float64(d)))
	if err := c.Project(); err != nil {
		return nil, err
	}
	return c, nil
}

func fillNormal(x []float64, rng *rand.Rand, sd float64) {
	for i := range x {
		x[i] = sd * rng.NormFloat64()
	}
}

// Shape implements Cell.
func (c *Dense) Shape() Shape { return c.shape }

// Params implements Cell: W, U, b.
func (c *Dense) Params() []*Param { return []*Param{c.w, c.u, c.b} }

// W returns the recurrent weight.
func (c *Dense) W() *Param { return c.w }

// Gamma implements Cell.
func (c *Dense) Gamma() float64 { return c.con.gamma }

// Proven implements Cell.
func (c *Dense) Proven(n solver.Norm) bool { return c.con.proven(n, c.shape.Rows) }

// Project implements Cell: it enforces the Constraint on W.
func (c *Dense) Project() error {
	if b := c.con.project(c.w.Data(), c.shape.Hidden); math.IsNaN(b) {
		return fmt.Errorf("layers: Dense.Project: W holds NaN")
	}
	return nil
}

// ProjectionState returns a copy of the state Project keeps between calls
// (see ProjectionState).
func (c *Dense) ProjectionState() ProjectionState { return c.con.state() }

// SetProjectionState restores a state returned by ProjectionState of a
// Dense cell with the same configuration. It returns an error if the state
// does not fit.
func (c *Dense) SetProjectionState(s ProjectionState) error { return c.con.setState("Dense", s) }

// Bound returns the certified bound on ‖Wᵀ‖_{p→p} in the constraint's norm
// computed from the current W (the exact spectral norm for l2), hence on the
// cell's Lipschitz constant in z.
func (c *Dense) Bound() float64 { return c.con.bound(c.w.Data(), c.shape.Hidden) }

// Evaluator implements Cell.
func (c *Dense) Evaluator(n int) (Evaluator, error) {
	if n < 1 {
		return nil, fmt.Errorf("layers: Dense.Evaluator: batch size %d must be positive", n)
	}
	return c.evals.get(n, func() (*denseEval, error) { return newDenseEval(c, n), nil })
}

type denseEval struct {
	c          *Dense
	n, rows    int
	x, cst     []float64 // input, xU + b
	hasX       bool
	full, hidd *denseGraph
	fwd        *machine
}

var (
	_ Evaluator    = (*denseEval)(nil)
	_ solver.Exact = (*denseEval)(nil)
)

func newDenseEval(c *Dense, n int) *denseEval {
	rows := n * c.shape.Rows
	return &denseEval{
		c: c, n: n, rows: rows,
		x:   make([]float64, rows*c.shape.Input),
		cst: make([]float64, rows*c.shape.Hidden),
	}
}

func (e *denseEval) Len() int            { return e.rows * e.c.shape.Hidden }
func (e *denseEval) Model() solver.Model { return solver.Deterministic }
func (e *denseEval) Examples() int       { return e.n }
func (e *denseEval) Terms() int          { return 1 }

func (e *denseEval) SetInput(x []float64) error {
	checkLen("input", len(x), len(e.x))
	copy(e.x, x)
	h, d := e.c.shape.Hidden, e.c.shape.Input
	b := e.c.b.Data()
	for r := 0; r < e.rows; r++ {
		copy(e.cst[r*h:(r+1)*h], b)
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: e.rows, Cols: d, Stride: d, Data: e.x},
		blas64.General{Rows: d, Cols: h, Stride: h, Data: e.c.u.Data()},
		1, blas64.General{Rows: e.rows, Cols: h, Stride: h, Data: e.cst})
	e.hasX = true
	return nil
}

func (e *denseEval) ready() error {
	if !e.hasX {
		return fmt.Errorf("layers: Dense evaluator: SetInput has not been called")
	}
	return nil
}

func (e *denseEval) Eval(dst, z []float64, _ solver.Sample) (int, error) {
	return 1, e.EvalExact(dst, z)
}

// EvalExact computes σ(zW + c) with c = xU + b cached by SetInput.
func (e *denseEval) EvalExact(dst, z []float64) error {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	if err := e.ready(); err != nil {
		return err
	}
	h := e.c.shape.Hidden
	copy(dst, e.cst)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: e.rows, Cols: h, Stride: h, Data: z},
		blas64.General{Rows: h, Cols: h, Stride: h, Data: e.c.w.Data()},
		1, blas64.General{Rows: e.rows, Cols: h, Stride: h, Data: dst})
	e.c.act.apply(dst)
	return nil
}

// denseGraph is the graph σ(zW + xU + b) (full) or σ(zW + c) (hidden, with
// c = xU + b an input) with the gradient of ⟨g, f⟩.
type denseGraph struct {
	z, x, c, g []float64 // input backings (x for full, c for hidden)
	out        *G.Node
	grads      G.Nodes // full: z, x, W, U, b; hidden: z
	m          *machine
}

func (e *denseEval) graph(full bool) (*denseGraph, error) {
	if full && e.full != nil {
		return e.full, nil
	}
	if !full && e.hidd != nil {
		return e.hidd, nil
	}
	c := e.c
	h, d := c.shape.Hidden, c.shape.Input
	dg := &denseGraph{}
	gr := graph{G.NewGraph()}
	err := build("Dense", func() {
		var z, w, g, pre *G.Node
		z, dg.z = gr.input("z", e.rows, h)
		g, dg.g = gr.input("g", e.rows, h)
		w = gr.bound("W", c.w.value)
		wrt := G.Nodes{z}
		if full {
			var x *G.Node
			x, dg.x = gr.input("x", e.rows, d)
			u := gr.bound("U", c.u.value)
			b := gr.bound("b", c.b.value)
			pre = G.Must(G.Add(G.Must(G.Mul(z, w)), G.Must(G.Mul(x, u))))
			pre = G.Must(G.BroadcastAdd(pre, b, nil, []byte{0}))
			wrt = G.Nodes{z, x, w, u, b}
		} else {
			var cn *G.Node
			cn, dg.c = gr.input("c", e.rows, h)
			pre = G.Must(G.Add(G.Must(G.Mul(z, w)), cn))
		}
		dg.out = c.act.node(pre)
		dg.grads = backprop(dg.out, g, wrt)
		dg.m = newMachine(gr.g, dg.grads...)
		if full {
			e.fwd = newMachine(gr.g, dg.out)
		}
	})
	if err != nil {
		return nil, err
	}
	if full {
		e.full = dg
	} else {
		e.hidd = dg
	}
	return dg, nil
}

func (e *denseEval) EvalGraph(dst, z []float64) error {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	if err := e.ready(); err != nil {
		return err
	}
	dg, err := e.graph(true)
	if err != nil {
		return err
	}
	copy(dg.z, z)
	copy(dg.x, e.x)
	if err := e.fwd.run(); err != nil {
		return err
	}
	copy(dst, nodeData(dg.out))
	return nil
}

func (e *denseEval) VJPHidden(dst, z, g []float64, _ solver.Sample) (int, error) {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	checkLen("g", len(g), e.Len())
	if err := e.ready(); err != nil {
		return 0, err
	}
	dg, err := e.graph(false)
	if err != nil {
		return 0, err
	}
	copy(dg.z, z)
	copy(dg.c, e.cst)
	copy(dg.g, g)
	if err := dg.m.run(); err != nil {
		return 0, err
	}
	copy(dst, nodeData(dg.grads[0]))
	return 1, nil
}

func (e *denseEval) VJP(dz, dx, z, g []float64) error {
	checkVJP(e.Len(), len(e.x), dz, dx, z, g)
	if err := e.ready(); err != nil {
		return err
	}
	dg, err := e.graph(true)
	if err != nil {
		return err
	}
	copy(dg.z, z)
	copy(dg.x, e.x)
	copy(dg.g, g)
	if err := dg.m.run(); err != nil {
		return err
	}
	if dz != nil {
		copy(dz, nodeData(dg.grads[0]))
	}
	if dx != nil {
		copy(dx, nodeData(dg.grads[1]))
	}
	for i, p := range e.c.Params() {
		addTo(p.GradData(), nodeData(dg.grads[2+i]))
	}
	return nil
}
