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
	// PerTerm makes the parameter a term's own in a cell of Terms > 1
	// terms: it then holds one Rows×Cols block per term, stored as an
	// (M·Rows)×Cols matrix whose rows [j·Rows, (j+1)·Rows) are term j's, and
	// Build receives the block of the term it builds. A parameter without
	// PerTerm is shared by every term. It has no effect in a cell of one
	// term.
	PerTerm bool
	// Init holds the initial values, row-major (length Rows·Cols, M times
	// that for a PerTerm parameter); it is copied. Nil means zeros.
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
	// Build adds f(z, x; θ) to g and returns its output node; in a cell of
	// Terms > 1 terms it adds one term f_j(z, x; θ_j) of the average
	// f = (1/M) Σ_j f_j. z is the batch's hidden state, an (n·Rows)×Hidden
	// matrix, x its input, an (n·Rows)×Input matrix, and params[i] the
	// Rows×Cols matrix of Params[i] (for a PerTerm parameter, the block of
	// the term being built). The output must be an (n·Rows)×Hidden float64
	// matrix, laid out as the state, and be differentiable with respect to
	// z, x and every parameter (each must reach it). Build is called for
	// every graph the evaluators build (once per term in it); it must build
	// the same expression every time. Required.
	Build func(g *G.ExprGraph, z, x *G.Node, params []*G.Node) (*G.Node, error)
	// Terms is M, the number of terms of a stochastic cell f = (1/M) Σ_j
	// f_j whose oracle samples terms (see Evaluator). Zero or one means a
	// deterministic cell, f = Build's expression.
	Terms int
	// Model is what the sampled oracle of a stochastic cell (Terms > 1)
	// guarantees, the Model its evaluators report; Proven then claims the
	// bound for each unit sample in the sense of Model too (see
	// Cell.Proven): for solver.SamplewiseLipschitz, that every term is
	// Gamma-Lipschitz. The zero value means solver.BoundedVariance, the
	// weakest model, which claims nothing of the terms' Lipschitz
	// constants. It must be zero for a deterministic cell.
	Model solver.Model
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

// GraphCell is a cell f(z, x; θ) given by a gorgonia expression (see
// GraphCellConfig), deterministic or the average of Terms expressions,
// each of its own parameters, whose oracle samples terms: its forward
// pass, its
// vector–Jacobian products and its parameter gradients all come from
// the expression's graph, which gorgonia differentiates, so any
// differentiable map can be a DEQ cell without hand-written derivatives.
// The graphs of a batch size (the full one, with the gradients with
// respect to z, x and θ, and a hidden-state one) are built on first use
// and cached with the evaluator. A stochastic cell's graphs hold one copy
// of the term per term they average: the full graph M, the hidden-state
// graph of a minibatch of k sampled terms k, into which the sampled terms'
// parameter blocks are copied before every run. Its sampling follows the
// Evaluator contract (the same Sample draws the same terms in Eval and
// VJPHidden), so the sampled oracle is an unbiased estimate of f.
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
	m       int          // Terms, at least 1
	perTerm []bool       // per parameter: PerTerm in a cell of M > 1 terms
	model   solver.Model // the oracle's Model
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
	case cfg.Terms < 0:
		return nil, fmt.Errorf("layers: GraphCellConfig.Terms = %d must not be negative", cfg.Terms)
	case cfg.Terms <= 1 && cfg.Model != solver.UnspecifiedModel:
		return nil, fmt.Errorf("layers: GraphCellConfig.Model = %v applies only to a cell of Terms > 1 terms", cfg.Model)
	case cfg.Terms > 1 && (cfg.Model < solver.UnspecifiedModel || cfg.Model >= solver.Deterministic):
		return nil, fmt.Errorf("layers: GraphCellConfig.Model = %v is not the model of a sampled oracle", cfg.Model)
	}
	c := &GraphCell{
		shape: shape, build: cfg.Build, gamma: cfg.Gamma, proven: cfg.Proven, project: cfg.Project,
		m: max(cfg.Terms, 1), model: solver.Deterministic,
		evals: mru.Cache[int, *graphCellEval]{Max: MaxCachedBatches},
	}
	if c.m > 1 {
		c.model = cmp.Or(cfg.Model, solver.BoundedVariance)
	}
	for i, ps := range cfg.Params {
		blocks := 1 // Rows×Cols blocks the parameter stores
		if ps.PerTerm {
			blocks = c.m
		}
		switch {
		case ps.Name == "":
			return nil, fmt.Errorf("layers: GraphCellConfig.Params[%d].Name is empty", i)
		case ps.Rows < 1 || ps.Cols < 1:
			return nil, fmt.Errorf("layers: GraphCellConfig.Params[%d] (%s) is %d×%d, want positive dimensions", i, ps.Name, ps.Rows, ps.Cols)
		case ps.Init != nil && len(ps.Init) != blocks*ps.Rows*ps.Cols:
			return nil, fmt.Errorf("layers: GraphCellConfig.Params[%d].Init has length %d, want %d", i, len(ps.Init), blocks*ps.Rows*ps.Cols)
		case slices.ContainsFunc(c.params, func(p *Param) bool { return p.name == ps.Name }):
			return nil, fmt.Errorf("layers: GraphCellConfig.Params[%d].Name %q is not unique", i, ps.Name)
		}
		p := newParam(ps.Name, blocks*ps.Rows, ps.Cols)
		copy(p.Data(), ps.Init)
		c.params = append(c.params, p)
		c.perTerm = append(c.perTerm, blocks > 1)
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
			evalBase: newEvalBase("GraphCell", c.shape, n, c.m, c.m > 1),
			c:        c,
			graphs:   newGraphs[*graphCellGraph](c.m),
		}
		e.runner.e = e
		if _, err := e.graph(true, c.m); err != nil {
			return nil, err
		}
		return e, nil
	})
}

// graphCellEval evaluates a GraphCell with its graphs: EvalExact is
// EvalGraph, Eval of a sampled minibatch runs the forward pass of its
// hidden graph, and VJPHidden and VJP are the runner's.
type graphCellEval struct {
	evalBase
	runner[*graphCellGraph]
	c      *GraphCell
	graphs graphs[*graphCellGraph]
}

func (e *graphCellEval) Model() solver.Model { return e.c.model }

func (e *graphCellEval) SetInput(x []float64) error {
	e.setInput(x)
	e.hasX = true
	return nil
}

// Eval implements solver.Oracle: the exact average, or the average of the
// terms s draws (see Evaluator).
func (e *graphCellEval) Eval(dst, z []float64, s solver.Sample) (int, error) {
	if err := e.checkEval(dst, z); err != nil {
		return 0, err
	}
	idx, k, err := e.terms(s)
	if err != nil {
		return 0, err
	}
	if idx == nil {
		return k, e.EvalGraph(dst, z)
	}
	gg, err := e.graph(false, k)
	if err != nil {
		return 0, err
	}
	e.load(gg, z, nil, idx)
	if err := gg.fwd.run(); err != nil {
		return 0, err
	}
	copy(dst, nodeData(gg.out))
	return k, nil
}

func (e *graphCellEval) EvalExact(dst, z []float64) error { return e.EvalGraph(dst, z) }

// graphCellGraph is the user's expression with the gradients of ⟨g, f⟩:
// with respect to z, x and the parameters (full) or z (hidden). In a
// stochastic cell's hidden graph the PerTerm parameters of its k terms
// are inputs (blocks[i][t] the backing of parameter i's block in the
// graph's term t), and fwd is the forward pass alone.
type graphCellGraph struct {
	tape
	x      []float64
	blocks [][][]float64
	fwd    *machine
}

func (e *graphCellEval) graph(full bool, k int) (*graphCellGraph, error) {
	return e.graphs.get(full, k, func() (*graphCellGraph, error) {
		c := e.c
		h, d := c.shape.Hidden, c.shape.Input
		gg := &graphCellGraph{blocks: make([][][]float64, len(c.params))}
		var userErr error
		err := buildVJP("GraphCell", &gg.tape, e.rows, h, func(gr graph, z, g *G.Node) {
			var x *G.Node
			x, gg.x = gr.input("x", e.rows, d)
			// ps[t][i] is parameter i's node in term t; shared
			// parameters have one node, which every term uses.
			ps := make([]G.Nodes, k)
			wrt := G.Nodes{z, x}
			for i, p := range c.params {
				if !c.perTerm[i] {
					n := gr.bound(p.name, p.tensor())
					for t := range ps {
						ps[t] = append(ps[t], n)
					}
					wrt = append(wrt, n)
					continue
				}
				r, cols := p.rows/c.m, p.cols
				for t := range ps {
					name := fmt.Sprintf("%s[%d]", p.name, t)
					var n *G.Node
					if full { // the terms in order, bound to their blocks
						n = gr.bound(name, view(p.data[t*r*cols:(t+1)*r*cols], r, cols))
					} else {
						var data []float64
						n, data = gr.input(name, r, cols)
						gg.blocks[i] = append(gg.blocks[i], data)
					}
					ps[t] = append(ps[t], n)
					wrt = append(wrt, n)
				}
			}
			var out *G.Node
			for t := range ps {
				f, err := c.build(gr.g, z, x, ps[t])
				switch {
				case err != nil:
					userErr = fmt.Errorf("layers: GraphCellConfig.Build: %w", err)
					return
				case f == nil:
					userErr = fmt.Errorf("layers: GraphCellConfig.Build returned a nil node")
					return
				case !f.Shape().Eq(tensor.Shape{e.rows, h}) || f.Dtype() != tensor.Float64:
					userErr = fmt.Errorf("layers: GraphCellConfig.Build returned a %v %v node, want float64 %v", f.Dtype(), f.Shape(), tensor.Shape{e.rows, h})
					return
				}
				if out == nil {
					out = f
				} else {
					out = G.Must(G.Add(out, f))
				}
			}
			if k > 1 {
				out = G.Must(G.Mul(out, G.NewConstant(1/float64(k), G.WithName("1/k"))))
			}
			if !full {
				wrt = G.Nodes{z}
			}
			e.finish(&gg.tape, gr, full, out, g, wrt)
			if !full && c.m > 1 {
				gg.fwd = newMachine(gr.g, out)
			}
		})
		return gg, cmp.Or(userErr, err)
	})
}

// load fills the graph's inputs; in a stochastic cell's hidden graph it
// copies the blocks of the terms idx (nil: all M, in order) of the PerTerm
// parameters.
func (e *graphCellEval) load(gg *graphCellGraph, z, g []float64, idx []int) {
	copy(gg.z, z)
	copy(gg.x, e.x)
	copy(gg.g, g)
	for i, bs := range gg.blocks {
		p := e.c.params[i]
		n := len(p.data) / e.c.m
		for t, dst := range bs {
			j := t
			if idx != nil {
				j = idx[t]
			}
			copy(dst, p.data[j*n:(j+1)*n])
		}
	}
}

func (e *graphCellEval) readState(dst []float64, n *G.Node) { copy(dst, nodeData(n)) }

// readGrads reads the gradients of a full graph: ∂/∂x, then every
// parameter's, a PerTerm parameter's one block per term.
func (e *graphCellEval) readGrads(dx []float64, grads G.Nodes) {
	if dx != nil {
		copy(dx, nodeData(grads[1]))
	}
	next := 2
	for i, p := range e.c.params {
		if !e.c.perTerm[i] {
			addTo(p.gdata, nodeData(grads[next]))
			next++
			continue
		}
		n := len(p.gdata) / e.c.m
		for j := range e.c.m {
			addTo(p.gdata[j*n:(j+1)*n], nodeData(grads[next]))
			next++
		}
	}
}
