package layers

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/solver"
)

// ParamSpec describes a parameter of a GraphCell.
type ParamSpec struct {
	// Name names the parameter; names must be unique and non-empty.
	Name string
	// Rows and Cols give its shape, a Rows×Cols matrix. Required.
	Rows, Cols int
	// Init holds the initial values, row-major (length Rows·Cols); it is
	// copied. Nil means zeros.
	Init []float64
}

// GraphCellConfig configures a GraphCell: a cell whose map f(z, x; θ) is
// a gorgonia expression the user builds.
type GraphCellConfig struct {
	// Shape is the per-example shape (Rows zero means 1). Hidden and Input
	// are required.
	Shape Shape
	// Params are the cell's parameters, in the order Build receives them.
	Params []ParamSpec
	// Build adds f(z, x; θ) to g and returns its output node. z is the
	// batch's hidden state, an (n·Rows)×Hidden matrix, x its input, an
	// (n·Rows)×Input matrix, and params[i] the Rows×Cols matrix of
	// Params[i] (bound to the parameter's storage). The output must be an
	// (n·Rows)×Hidden float64 matrix, laid out as the state, and be
	// differentiable with respect to z, x and every parameter (each must
	// reach it). Build is called once per batch size n for the full graph
	// and once for the hidden-state graph; it must build the same
	// expression every time. Required.
	Build func(g *G.ExprGraph, z, x *G.Node, params []*G.Node) (*G.Node, error)
	// Gamma is the Lipschitz bound γ̄ of z ↦ f(z, x) that the user declares
	// (and that Project, if given, maintains). Required: positive and
	// finite.
	Gamma float64
	// Proven reports whether the bound Gamma is a theorem in the
	// per-example norm n (see Cell.Proven). Nil means never: deq then
	// monitors the ratios empirically by default.
	Proven func(n solver.Norm) bool
	// Project restores the bound after an optimiser step, in place. Nil
	// means no projection: the declared Gamma is then the user's claim.
	Project func(params []*Param) error
}

// GraphCell is a deterministic cell f(z, x; θ) given by a gorgonia
// expression (see GraphCellConfig): its forward pass, its
// vector–Jacobian products and its parameter gradients all come from
// the expression's graph, which gorgonia differentiates, so any
// differentiable map can be a DEQ cell without hand-written derivatives.
// The graphs of a batch size (the full one, with the gradients with
// respect to z, x and θ, and a hidden-state one) are built on first use
// and cached with the evaluator.
//
// Its Lipschitz story is the user's: Gamma is declared, Proven says in
// which norms it is a theorem, and Project (a no-op unless given) restores
// it after updates. Every evaluation runs a gorgonia tape machine, which
// allocates its intermediate tensors.
type GraphCell struct {
	shape   Shape
	params  []*Param
	build   func(g *G.ExprGraph, z, x *G.Node, params []*G.Node) (*G.Node, error)
	gamma   float64
	proven  func(solver.Norm) bool
	project func([]*Param) error
	evals   mru.Cache[int, *graphCellEval]
}

var _ Cell = (*GraphCell)(nil)

// NewGraphCell returns the cell of cfg. It checks the configuration; the
// expression itself is built, and checked, by the first Evaluator call.
func NewGraphCell(cfg GraphCellConfig) (*GraphCell, error) {
	sh := cfg.Shape
	shape, err := checkConfig("GraphCellConfig.Shape", sh.Rows, sh.Hidden, sh.Input, ReLU)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.Build == nil:
		return nil, fmt.Errorf("layers: GraphCellConfig.Build is nil")
	case !(cfg.Gamma > 0) || math.IsInf(cfg.Gamma, 1):
		return nil, fmt.Errorf("layers: GraphCellConfig.Gamma = %v must be positive and finite", cfg.Gamma)
	}
	c := &GraphCell{
		shape: shape, build: cfg.Build, gamma: cfg.Gamma, proven: cfg.Proven, project: cfg.Project,
		evals: mru.Cache[int, *graphCellEval]{Max: MaxCachedBatches},
	}
	for i, ps := range cfg.Params {
		switch {
		case ps.Name == "":
			return nil, fmt.Errorf("layers: GraphCellConfig.Params[%d].Name is empty", i)
		case ps.Rows < 1 || ps.Cols < 1:
			return nil, fmt.Errorf("layers: GraphCellConfig.Params[%d] (%s) is %d×%d, want positive dimensions", i, ps.Name, ps.Rows, ps.Cols)
		case ps.Init != nil && len(ps.Init) != ps.Rows*ps.Cols:
			return nil, fmt.Errorf("layers: GraphCellConfig.Params[%d].Init has length %d, want %d", i, len(ps.Init), ps.Rows*ps.Cols)
		case slices.ContainsFunc(c.params, func(p *Param) bool { return p.name == ps.Name }):
			return nil, fmt.Errorf("layers: GraphCellConfig.Params[%d].Name %q is not unique", i, ps.Name)
		}
		p := newParam(ps.Name, ps.Rows, ps.Cols)
		copy(p.Data(), ps.Init)
		c.params = append(c.params, p)
	}
	return c, nil
}

// Shape implements Cell.
func (c *GraphCell) Shape() Shape { return c.shape }

// Params implements Cell, in the order of GraphCellConfig.Params.
func (c *GraphCell) Params() []*Param { return slices.Clone(c.params) }

// Gamma implements Cell: the declared bound.
func (c *GraphCell) Gamma() float64 { return c.gamma }

// Proven implements Cell with GraphCellConfig.Proven (false when it is
// nil).
func (c *GraphCell) Proven(n solver.Norm) bool { return c.proven != nil && c.proven(n) }

// Project implements Cell with GraphCellConfig.Project (a no-op when it is
// nil).
func (c *GraphCell) Project() error {
	if c.project == nil {
		return nil
	}
	return c.project(c.params)
}

// Evaluator implements Cell. It builds the full graph for n examples (so
// that an error in Build is reported here) on first use.
func (c *GraphCell) Evaluator(n int) (Evaluator, error) {
	if n < 1 {
		return nil, fmt.Errorf("layers: GraphCell.Evaluator: batch size %d must be positive", n)
	}
	return c.evals.Get(n, func() (*graphCellEval, error) {
		e := &graphCellEval{
			evalBase: newEvalBase("GraphCell", c.shape, n, 1, false),
			rowMajor: rowMajor{c.params},
			c:        c,
			graphs:   newGraphs[*graphCellGraph](1),
		}
		e.runner.e = e
		if _, err := e.graph(true, 1); err != nil {
			return nil, err
		}
		return e, nil
	})
}

// graphCellEval evaluates a GraphCell with its graphs: EvalExact is
// EvalGraph, and VJPHidden and VJP are the runner's.
type graphCellEval struct {
	evalBase
	runner[*graphCellGraph]
	rowMajor
	c      *GraphCell
	graphs graphs[*graphCellGraph]
}

func (e *graphCellEval) Model() solver.Model { return solver.Deterministic }

func (e *graphCellEval) SetInput(x []float64) error {
	e.setInput(x)
	e.hasX = true
	return nil
}

func (e *graphCellEval) Eval(dst, z []float64, _ solver.Sample) (int, error) {
	return 1, e.EvalGraph(dst, z)
}

func (e *graphCellEval) EvalExact(dst, z []float64) error { return e.EvalGraph(dst, z) }

// graphCellGraph is the user's expression with the gradients of ⟨g, f⟩:
// with respect to z, x and the parameters (full) or z (hidden).
type graphCellGraph struct {
	tape
	x []float64
}

func (e *graphCellEval) graph(full bool, k int) (*graphCellGraph, error) {
	return e.graphs.get(full, k, func() (*graphCellGraph, error) {
		c := e.c
		h, d := c.shape.Hidden, c.shape.Input
		gg := &graphCellGraph{}
		var userErr error
		err := buildVJP("GraphCell", &gg.tape, e.rows, h, func(gr graph, z, g *G.Node) {
			var x *G.Node
			x, gg.x = gr.input("x", e.rows, d)
			ps := make(G.Nodes, len(c.params))
			for i, p := range c.params {
				ps[i] = gr.bound(p.name, p.tensor())
			}
			out, err := c.build(gr.g, z, x, ps)
			switch {
			case err != nil:
				userErr = fmt.Errorf("layers: GraphCellConfig.Build: %w", err)
				return
			case out == nil:
				userErr = fmt.Errorf("layers: GraphCellConfig.Build returned a nil node")
				return
			case !out.Shape().Eq(tensor.Shape{e.rows, h}) || out.Dtype() != tensor.Float64:
				userErr = fmt.Errorf("layers: GraphCellConfig.Build returned a %v %v node, want float64 %v", out.Dtype(), out.Shape(), tensor.Shape{e.rows, h})
				return
			}
			wrt := G.Nodes{z}
			if full {
				wrt = append(G.Nodes{z, x}, ps...)
			}
			e.finish(&gg.tape, gr, full, out, g, wrt)
		})
		return gg, cmp.Or(userErr, err)
	})
}

func (e *graphCellEval) load(gg *graphCellGraph, z, g []float64, _ []int) {
	copy(gg.z, z)
	copy(gg.x, e.x)
	copy(gg.g, g)
}
