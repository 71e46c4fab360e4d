package layers

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/solver"
)

// WideConfig configures a Wide cell. Zero values select the documented
// defaults.
type WideConfig struct {
	// Hidden is the number of hidden features per row. Required.
	Hidden int
	// Input is the number of input features per row. Required.
	Input int
	// Units is M, the number of hidden units the cell averages. Required.
	Units int
	// Rows is the number of rows of an example (see Shape). Zero means 1.
	Rows int
	// Activation is σ; the zero value is ReLU.
	Activation Activation
	// Lipschitz gives the exponent P of the ℓp norm (zero means 2) and the
	// bound γ̄ (zero means DefaultGamma) on the constant L below.
	// PowerIters and ExactEvery are not used.
	Lipschitz Constraint
	// Seed seeds the initialisation: w_m, u_m have independent N(0, 1/Hidden)
	// and N(0, 1/Input) entries, v_m N(0, 1/Hidden) entries (then
	// projected), b is zero.
	Seed uint64
}

// Wide is the two-layer cell
//
//	f(z, x) = (1/M) Σ_m v_m σ(⟨w_m, z⟩ + ⟨u_m, x⟩ + b_m),
//
// applied to every row z of a hidden state, whose stochastic oracle samples
// hidden units m uniformly (one unit = one unit sample).
//
// Each term φ_m(z) = v_m σ(⟨w_m, z⟩ + c_m) is ‖v_m‖_p‖w_m‖_q-Lipschitz in
// ℓp (1/p + 1/q = 1), entrywise on Rows×Hidden states too, and
// ‖v_m‖₂‖w_m‖₂-Lipschitz in every Schatten-p norm (on a Rows×Hidden state
// it is the rank-one matrix σ(Zw_m + c_m)v_mᵀ). With
//
//	L² = (1/M) Σ_m ‖v_m‖²‖w_m‖_*²
//
// in the chosen family (the Lipschitz constant L of the LipschitzInExpectation
// model: E_m‖φ_m(z) − φ_m(z')‖² ≤ L²‖z − z'‖²), the exact operator is
// (1/M)Σ‖v_m‖‖w_m‖_* ≤ L -Lipschitz. Project rescales V so that L ≤ γ̄; the
// individual terms may still be expansive, so the oracle's Model is
// LipschitzInExpectation, not SamplewiseLipschitz. Lipschitz.P = 2 covers
// ℓ2 and every Schatten-p norm.
//
// Its parameters are W (Hidden×M, column m is w_m), U (Input×M, column m is
// u_m), b (1×M) and V (M×Hidden, row m is v_m).
type Wide struct {
	shape Shape
	m     int
	act   Activation
	kind  normKind
	p     float64 // exponent of v's norm
	q     float64 // exponent of w's norm (dual)
	gamma float64
	w     *Param
	u     *Param
	b     *Param
	v     *Param
	evals mru.Cache[int, *wideEval]
}

var _ Cell = (*Wide)(nil)

// NewWide returns a Wide cell initialised from cfg.Seed and projected.
func NewWide(cfg WideConfig) (*Wide, error) {
	shape, err := checkConfig("WideConfig", cfg.Rows, cfg.Hidden, cfg.Input, cfg.Activation)
	if err != nil {
		return nil, err
	}
	if cfg.Units < 1 {
		return nil, fmt.Errorf("layers: WideConfig.Units = %d must be positive", cfg.Units)
	}
	con, err := newOpNorm(Constraint{P: cfg.Lipschitz.P, Gamma: cfg.Lipschitz.Gamma}, 1)
	if err != nil {
		return nil, err
	}
	h, d, m := cfg.Hidden, cfg.Input, cfg.Units
	c := &Wide{
		shape: shape, m: m, act: cfg.Activation,
		kind: con.kind, p: con.p, q: con.dualExponent(), gamma: con.gamma,
		w:     newParam("W", h, m),
		u:     newParam("U", d, m),
		b:     newParam("b", 1, m),
		v:     newParam("V", m, h),
		evals: mru.Cache[int, *wideEval]{Max: MaxCachedBatches},
	}
	initNormal(cfg.Seed, 0x2545f4914f6cdd1d, normalInit{c.w, h}, normalInit{c.u, d}, normalInit{c.v, h})
	if err := c.Project(); err != nil {
		return nil, err
	}
	return c, nil
}

// Shape implements Cell.
func (c *Wide) Shape() Shape { return c.shape }

// Units returns M.
func (c *Wide) Units() int { return c.m }

// Params implements Cell: W, U, b, V.
func (c *Wide) Params() []*Param { return []*Param{c.w, c.u, c.b, c.v} }

// Gamma implements Cell.
func (c *Wide) Gamma() float64 { return c.gamma }

// Proven implements Cell. Norm families: an ℓp norm with the constraint's p;
// any Schatten-p norm when the constraint is ℓ2.
func (c *Wide) Proven(n solver.Norm) bool {
	if b, ok := n.(*solver.Batched); ok {
		n = b.Example
	}
	switch n := n.(type) {
	case solver.LP:
		return n.P() == c.p
	case solver.LInf:
		return c.kind == kindLInf
	case *solver.Schatten:
		return c.kind == kindL2
	}
	return false
}

// Lipschitz returns the constant L = ((1/M) Σ_m ‖v_m‖²‖w_m‖_*²)^{1/2} of the
// current parameters (see Wide).
func (c *Wide) Lipschitz() float64 {
	h, m := c.shape.Hidden, c.m
	w, v := c.w.Data(), c.v.Data()
	s := 0.0
	col := make([]float64, h)
	for k := 0; k < m; k++ {
		for i := 0; i < h; i++ {
			col[i] = w[i*m+k]
		}
		a := pnorm(v[k*h:(k+1)*h], c.p) * pnorm(col, c.q)
		s += a * a
	}
	return math.Sqrt(s / float64(m))
}

// pnorm returns the ℓp norm of x, 1 ≤ p ≤ ∞.
func pnorm(x []float64, p float64) float64 {
	switch {
	case math.IsInf(p, 1):
		m := 0.0
		for _, v := range x {
			m = math.Max(m, math.Abs(v))
		}
		return m
	case p == 1:
		s := 0.0
		for _, v := range x {
			s += math.Abs(v)
		}
		return s
	case p == 2:
		return blas64.Nrm2(blas64.Vector{N: len(x), Inc: 1, Data: x})
	}
	s := 0.0
	for _, v := range x {
		s += math.Pow(math.Abs(v), p)
	}
	return math.Pow(s, 1/p)
}

// Project implements Cell: it rescales V so that Lipschitz() ≤ Gamma().
func (c *Wide) Project() error {
	l := c.Lipschitz()
	if math.IsNaN(l) {
		return fmt.Errorf("layers: Wide.Project: parameters hold NaN")
	}
	if l > c.gamma {
		scale(c.v.Data(), c.gamma/l)
	}
	return nil
}

// Evaluator implements Cell.
func (c *Wide) Evaluator(n int) (Evaluator, error) {
	return evaluator("Wide", &c.evals, n, func() *wideEval { return newWideEval(c, n) })
}

type wideEval struct {
	evalBase
	runner[*wideGraph]
	rowMajor
	c  *Wide
	xu []float64 // xU + b (rows×M)
	// Scratch for sampled evaluations, sized for m = M.
	pre, ws, vs, cs []float64
	graphs          graphs[*wideGraph]
	da              []float64 // fused VJPs: cotangent of the pre-activation, rows×M
}

var (
	_ Evaluator = (*wideEval)(nil)
	_ fusedVJP  = (*wideEval)(nil)
)

func newWideEval(c *Wide, n int) *wideEval {
	rows := n * c.shape.Rows
	h, m := c.shape.Hidden, c.m
	e := &wideEval{
		evalBase: newEvalBase("Wide", c.shape, n, m, true),
		rowMajor: rowMajor{c.Params()},
		c:        c,
		xu:       make([]float64, rows*m),
		pre:      make([]float64, rows*m),
		ws:       make([]float64, h*m),
		vs:       make([]float64, m*h),
		cs:       make([]float64, rows*m),
		graphs:   newGraphs[*wideGraph](m),
	}
	e.runner.e = e
	return e
}

func (e *wideEval) Model() solver.Model { return solver.LipschitzInExpectation }

func (e *wideEval) SetInput(x []float64) error {
	e.setInput(x)
	inputTerm(e.xu, dense(e.rows, e.c.shape.Input, e.x), e.c.u.Data(), e.c.b.Data())
	e.hasX = true
	return nil
}

// gather fills ws (h×k), vs (k×h) and cs (rows×k) with the columns, rows
// and columns of W, V and xU + b selected by idx, and returns k.
func (e *wideEval) gather(idx []int) int {
	h, m, k := e.c.shape.Hidden, e.c.m, len(idx)
	w, v := e.c.w.Data(), e.c.v.Data()
	for i := 0; i < h; i++ {
		row := w[i*m : (i+1)*m]
		out := e.ws[i*k : (i+1)*k]
		for j, t := range idx {
			out[j] = row[t]
		}
	}
	for j, t := range idx {
		copy(e.vs[j*h:(j+1)*h], v[t*h:(t+1)*h])
	}
	for r := 0; r < e.rows; r++ {
		row := e.xu[r*m : (r+1)*m]
		out := e.cs[r*k : (r+1)*k]
		for j, t := range idx {
			out[j] = row[t]
		}
	}
	return k
}

// forward computes (1/k) σ(zW' + c') V' for the k selected units.
func (e *wideEval) forward(dst, z, w, v, c []float64, k int) {
	h := e.c.shape.Hidden
	pre := e.pre[:e.rows*k]
	copy(pre, c)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: e.rows, Cols: h, Stride: h, Data: z},
		blas64.General{Rows: h, Cols: k, Stride: k, Data: w},
		1, blas64.General{Rows: e.rows, Cols: k, Stride: k, Data: pre})
	e.c.act.apply(pre)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1/float64(k),
		blas64.General{Rows: e.rows, Cols: k, Stride: k, Data: pre},
		blas64.General{Rows: k, Cols: h, Stride: h, Data: v},
		0, blas64.General{Rows: e.rows, Cols: h, Stride: h, Data: dst})
}

func (e *wideEval) Eval(dst, z []float64, s solver.Sample) (int, error) {
	if err := e.checkEval(dst, z); err != nil {
		return 0, err
	}
	idx, err := e.sp.draw(s, e.c.m)
	if err != nil {
		return 0, err
	}
	if idx == nil {
		return e.c.m, e.EvalExact(dst, z)
	}
	k := e.gather(idx)
	e.forward(dst, z, e.ws[:e.c.shape.Hidden*k], e.vs[:k*e.c.shape.Hidden], e.cs[:e.rows*k], k)
	return k, nil
}

func (e *wideEval) EvalExact(dst, z []float64) error {
	if err := e.checkEval(dst, z); err != nil {
		return err
	}
	e.forward(dst, z, e.c.w.Data(), e.c.v.Data(), e.xu, e.c.m)
	return nil
}

// fusedHidden is VJPHidden. For the units of s (all M, or the k drawn
// as in Eval) with A = σ(zW' + c'): dst = δW'ᵀ with
// δ = ((1/k) gV'ᵀ) ⊙ σ′.
func (e *wideEval) fusedHidden(dst, z, g []float64, idx []int, k int) {
	h := e.c.shape.Hidden
	w, v, c := e.c.w.Data(), e.c.v.Data(), e.xu
	if idx != nil {
		e.gather(idx)
		w, v, c = e.ws[:h*k], e.vs[:k*h], e.cs[:e.rows*k]
	}
	e.delta(z, g, w, v, c, k)
	mulABt(1, dense(e.rows, k, e.da[:e.rows*k]), dense(h, k, w), 0, dense(e.rows, h, dst))
}

// fusedFull is VJP. With A = σ(zW + c) and δ = ((1/M) gVᵀ) ⊙ σ′:
// dz = δWᵀ, dx = δUᵀ, and W, U, b, V gain zᵀδ, xᵀδ, the column sums of δ
// and (1/M) Aᵀg.
func (e *wideEval) fusedFull(dz, dx, z, g []float64) {
	c := e.c
	h, m := c.shape.Hidden, c.m
	e.delta(z, g, c.w.Data(), c.v.Data(), e.xu, m)
	affineVJP(dz, dx, z, e.x, e.da, c.w, c.u, c.b, e.rows)
	mulAtB(1/float64(m), dense(e.rows, m, e.pre), dense(e.rows, h, g), 1, dense(m, h, c.v.GradData()))
}

// delta leaves A = σ(zW + c) in e.pre and δ = ((1/k) gVᵀ) ⊙ σ′ in e.da
// (rows×k each) for the k units whose W columns, V rows and input terms
// are w (Hidden×k), v (k×Hidden) and c (rows×k).
func (e *wideEval) delta(z, g, w, v, c []float64, k int) {
	h := e.c.shape.Hidden
	if e.da == nil {
		e.da = make([]float64, e.rows*e.c.m)
	}
	a, da := e.pre[:e.rows*k], e.da[:e.rows*k]
	copy(a, c)
	mulAB(1, dense(e.rows, h, z), dense(h, k, w), 1, dense(e.rows, k, a))
	e.c.act.apply(a)
	mulABt(1/float64(k), dense(e.rows, h, g), dense(k, h, v), 0, dense(e.rows, k, da))
	e.c.act.backward(da, a)
}

// wideGraph is the graph of (1/k) σ(zW + c)V with the gradient of ⟨g, f⟩:
// the full graph has c = xU + b and the parameters bound (gradients with
// respect to z, x, W, U, b, V); a hidden graph has c, W and V as inputs
// filled by gather (gradient with respect to z).
type wideGraph struct {
	tape
	z, x, c, w, v, g []float64
}

func (e *wideEval) graph(full bool, k int) (*wideGraph, error) {
	return e.graphs.get(full, k, func() (*wideGraph, error) {
		c := e.c
		h, d := c.shape.Hidden, c.shape.Input
		wg := &wideGraph{}
		gr := graph{G.NewGraph()}
		err := build("Wide", func() {
			var z, g, w, v, pre *G.Node
			z, wg.z = gr.input("z", e.rows, h)
			g, wg.g = gr.input("g", e.rows, h)
			var wrt G.Nodes
			if full {
				var x *G.Node
				x, wg.x = gr.input("x", e.rows, d)
				w = gr.bound("W", c.w.value)
				u := gr.bound("U", c.u.value)
				b := gr.bound("b", c.b.value)
				v = gr.bound("V", c.v.value)
				pre = affineNode(z, w, x, u, b)
				wrt = G.Nodes{z, x, w, u, b, v}
			} else {
				var cn *G.Node
				cn, wg.c = gr.input("c", e.rows, k)
				w, wg.w = gr.input("W", h, k)
				v, wg.v = gr.input("V", k, h)
				pre = G.Must(G.Add(G.Must(G.Mul(z, w)), cn))
				wrt = G.Nodes{z}
			}
			a := c.act.node(pre)
			scaleNode := G.NewConstant(1/float64(k), G.WithName("1/k"))
			out := G.Must(G.Mul(G.Must(G.Mul(a, v)), scaleNode))
			e.finish(&wg.tape, gr, full, out, g, wrt)
		})
		return wg, err
	})
}

func (e *wideEval) load(wg *wideGraph, z, g []float64, idx []int) {
	switch {
	case wg.full:
		copy(wg.x, e.x)
	case idx == nil:
		copy(wg.w, e.c.w.Data())
		copy(wg.v, e.c.v.Data())
		copy(wg.c, e.xu)
	default:
		e.gather(idx)
		copy(wg.w, e.ws[:len(wg.w)])
		copy(wg.v, e.vs[:len(wg.v)])
		copy(wg.c, e.cs[:len(wg.c)])
	}
	copy(wg.z, z)
	copy(wg.g, g)
}
