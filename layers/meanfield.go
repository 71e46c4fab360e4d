package layers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/solver"
)

// MeanFieldConfig configures a MeanField cell. Zero values select the
// documented defaults.
type MeanFieldConfig struct {
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
	// bound γ̄ (zero means DefaultGamma) on the mean-square constant L (see
	// MeanField). PowerIters and ExactEvery are not used.
	Lipschitz Constraint
	// Seed seeds the initialisation (see MeanField).
	Seed uint64
}

// MeanField is the stochastic cell
//
//	f(z, x) = xU + b + (1/M) Σ_m φ_m(z),  φ_m(z) = v_m σ(⟨w_m, z⟩ + c_m),
//
// applied to every row z of a hidden state (and the matching row x of the
// input): an injection computed once per batch and the mean-field average
// of M hidden units, of which only the average depends on z and only the
// average is sampled. Its stochastic oracle draws units m uniformly with
// replacement; one unit sample is one unit φ_m evaluated on the whole
// batch, a term evaluation, and SetInput computes the injection xU + b
// once, which no evaluation counts.
//
// The terms are not scaled down with M (mean-field parametrisation): w_m
// and v_m have entries N(0, 1/Hidden), c_m ~ N(0, 1), U has entries
// N(0, 1/Input) and b is zero, so every unit is O(1) whatever M is, and the
// variance of a unit sample (TermVariancer) measures how far the trained
// units are from redundant.
//
// Only the average depends on z, so only it is constrained: Project
// rescales V so that the mean-square Lipschitz constant
//
//	L² = (1/M) Σ_m ‖v_m‖²‖w_m‖_*²
//
// is at most γ̄ (‖·‖_* the dual norm of the constraint's ℓp; P = 2 covers ℓ2
// and every Schatten-p norm). The oracle is then LipschitzInExpectation and
// the exact map L-Lipschitz; individual units may be expansive. The page
// docs/deq-layers.md in the repository gives the reasoning.
//
// Its parameters, in Params order, are U (Input×Hidden), b (1×Hidden),
// W (Hidden×M, column m is w_m), c (1×M) and V (M×Hidden, row m is v_m).
type MeanField struct {
	sumCell
	kind  normKind
	p, q  float64 // exponents of v's and w's norms
	gamma float64
	w, c  *Param
	v     *Param
	evals mru.Cache[int, *mfEval]
}

var _ Cell = (*MeanField)(nil)

// sumCell is what the mean-field cells (MeanField, Experts) share: the
// shape, the number M of terms, σ and the injection's parameters U
// (Input×Hidden) and b (1×Hidden).
type sumCell struct {
	shape Shape
	m     int
	act   Activation
	u, b  *Param
}

// newSumCell checks the configuration fields the mean-field cells share
// (config names the configuration type, field the one holding M) and
// returns the shared part, U and b zero.
func newSumCell(config, field string, rows, hidden, input, m int, act Activation) (sumCell, error) {
	shape, err := checkConfig(config, rows, hidden, input, act)
	if err != nil {
		return sumCell{}, err
	}
	if m < 1 {
		return sumCell{}, fmt.Errorf("layers: %s.%s = %d must be positive", config, field, m)
	}
	return sumCell{shape: shape, m: m, act: act, u: newParam("U", input, hidden), b: newParam("b", 1, hidden)}, nil
}

// Shape implements Cell.
func (c *sumCell) Shape() Shape { return c.shape }

// NewMeanField returns a MeanField cell initialised from cfg.Seed and
// projected.
func NewMeanField(cfg MeanFieldConfig) (*MeanField, error) {
	sc, err := newSumCell("MeanFieldConfig", "Units", cfg.Rows, cfg.Hidden, cfg.Input, cfg.Units, cfg.Activation)
	if err != nil {
		return nil, err
	}
	con, err := newOpNorm(Constraint{P: cfg.Lipschitz.P, Gamma: cfg.Lipschitz.Gamma}, 1)
	if err != nil {
		return nil, err
	}
	h, d, m := cfg.Hidden, cfg.Input, cfg.Units
	c := &MeanField{
		sumCell: sc,
		kind:    con.kind, p: con.p, q: con.dualExponent(), gamma: con.gamma,
		w:     newParam("W", h, m),
		c:     newParam("c", 1, m),
		v:     newParam("V", m, h),
		evals: mru.Cache[int, *mfEval]{Max: MaxCachedBatches},
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x94d049bb133111eb))
	fillNormal(c.u.Data(), rng, 1/math.Sqrt(float64(d)))
	fillNormal(c.w.Data(), rng, 1/math.Sqrt(float64(h)))
	fillNormal(c.c.Data(), rng, 1)
	fillNormal(c.v.Data(), rng, 1/math.Sqrt(float64(h)))
	if err := c.Project(); err != nil {
		return nil, err
	}
	return c, nil
}

// Units returns M.
func (c *MeanField) Units() int { return c.m }

// Params implements Cell: U, b, W, c, V.
func (c *MeanField) Params() []*Param { return []*Param{c.u, c.b, c.w, c.c, c.v} }

// Gamma implements Cell.
func (c *MeanField) Gamma() float64 { return c.gamma }

// Proven implements Cell. Norm families: an ℓp norm with the constraint's
// p; any Schatten-p norm when the constraint is ℓ2.
func (c *MeanField) Proven(n solver.Norm) bool {
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

// Lipschitz returns the constant L = ((1/M) Σ_m ‖v_m‖²‖w_m‖_*²)^{1/2} of
// the current parameters (see MeanField).
func (c *MeanField) Lipschitz() float64 {
	h, m := c.shape.Hidden, c.m
	w, v := c.w.Data(), c.v.Data()
	col := make([]float64, h)
	s := 0.0
	for k := range m {
		for i := range h {
			col[i] = w[i*m+k]
		}
		a := pnorm(v[k*h:(k+1)*h], c.p) * pnorm(col, c.q)
		s += a * a
	}
	return math.Sqrt(s / float64(m))
}

// Project implements Cell: it rescales V so that Lipschitz() ≤ Gamma().
func (c *MeanField) Project() error {
	l := c.Lipschitz()
	if math.IsNaN(l) {
		return fmt.Errorf("layers: MeanField.Project: parameters hold NaN")
	}
	if l > c.gamma {
		scale(c.v.Data(), c.gamma/l)
	}
	return nil
}

// Evaluator implements Cell.
func (c *MeanField) Evaluator(n int) (Evaluator, error) {
	return evaluator("MeanField", &c.evals, n, func() *mfEval { return newMFEval(c, n) })
}

// TermVariancer is implemented by the evaluators that compute the variance
// of one unit sample exactly (MeanField and Experts).
type TermVariancer interface {
	// TermVariance returns σ²(z) = (1/M) Σ_m ‖φ_m(z) − φ̄(z)‖², the
	// variance of one unit sample of the sampled average φ̄ at the batch
	// state z, in the Frobenius norm of the whole batch.
	TermVariance(z []float64) (float64, error)
}

// TermRelVar returns the single-term relative variance σ²(z)/‖z‖² at a
// batch state z (in practice a fixed point z*), both in the Frobenius
// norm of the whole batch: the quantity that decides whether sampling the
// cell's terms can beat exact evaluations (a solve to accuracy ε needs of
// the order of σ²/(ε‖z‖)² unit samples, against M per exact call). It is
// exact for a TermVariancer; for other evaluators it averages draws unit
// samples (Sample.Size 1) drawn from seed, an unbiased estimate of σ². A
// deterministic evaluator has variance 0.
func TermRelVar(e Evaluator, z []float64, draws int, seed uint64) (float64, error) {
	checkLen("z", len(z), e.Len())
	nz := blas64.Nrm2(blas64.Vector{N: len(z), Inc: 1, Data: z})
	var v float64
	switch tv, ok := e.(TermVariancer); {
	case ok:
		var err error
		if v, err = tv.TermVariance(z); err != nil {
			return 0, err
		}
	case e.Model() == solver.Deterministic || e.Terms() <= 1:
	default:
		if draws < 1 {
			return 0, fmt.Errorf("layers: TermRelVar: draws = %d must be positive", draws)
		}
		mean := make([]float64, len(z))
		one := make([]float64, len(z))
		if err := e.EvalExact(mean, z); err != nil {
			return 0, err
		}
		rng := rand.New(rand.NewPCG(seed, 0xc2b2ae3d27d4eb4f))
		for range draws {
			if _, err := e.Eval(one, z, solver.Sample{Seed: rng.Uint64(), Size: 1}); err != nil {
				return 0, err
			}
			for i := range one {
				d := one[i] - mean[i]
				v += d * d
			}
		}
		v /= float64(draws)
	}
	return v / (nz * nz), nil
}

// Injector is implemented by the evaluators whose cell adds an injection
// computed once per batch outside the sampled average (MeanField and
// Experts): the natural common start point of every forward solver,
// sampled or exact.
type Injector interface {
	// Injection writes xU + b for the input of the last SetInput into dst
	// (length Len()). It returns an error if SetInput has not been called.
	Injection(dst []float64) error
}

// injection is the input part xU + b of the mean-field cells, computed
// once per SetInput, with its share of the VJPs.
type injection struct {
	u, b *Param
	inj  []float64 // rows×Hidden
}

// set computes xU + b for the rows×Input input x.
func (j *injection) set(x []float64, rows, d int) {
	inputTerm(j.inj, dense(rows, d, x), j.u.Data(), j.b.Data())
}

// vjp writes (∂f/∂x)ᵀg = gUᵀ into dx unless it is nil and adds xᵀg and the
// column sums of g to the gradients of U and b.
func (j *injection) vjp(dx, x, g []float64, rows int) { inputVJP(dx, x, g, j.u, j.b, rows) }

// node returns the graph node xU + b.
func (j *injection) node(gr graph, x *G.Node) (u, b, out *G.Node) {
	u = gr.bound("U", j.u.tensor())
	b = gr.bound("b", j.b.tensor())
	out = G.Must(G.BroadcastAdd(G.Must(G.Mul(x, u)), b, nil, []byte{0}))
	return u, b, out
}

// sumEval is what the evaluators of the mean-field cells (MeanField,
// Experts) share: the evaluator base, the injection xU + b computed once
// per SetInput, and the oracle methods, built on the cell's forward pass
// over k of its M terms.
type sumEval struct {
	evalBase
	injection
	input int // Input features per row
	// sum writes xU + b plus the k-term average of the terms idx (all M
	// when idx is nil) at z into dst.
	sum func(dst, z []float64, idx []int, k int)
	one [1]int // the index of EvalTerm
}

var _ Injector = (*sumEval)(nil)

// newSumEval returns the shared part of the evaluator of a mean-field cell
// of kind with shape s, M = m terms and injection parameters u and b, for
// n examples; the caller sets sum.
func newSumEval(kind string, s Shape, n, m int, u, b *Param) sumEval {
	return sumEval{
		evalBase:  newEvalBase(kind, s, n, m, true),
		injection: injection{u: u, b: b, inj: make([]float64, n*s.Rows*s.Hidden)},
		input:     s.Input,
	}
}

// SetInput implements Evaluator: it computes the injection xU + b.
func (e *sumEval) SetInput(x []float64) error {
	e.setInput(x)
	e.set(e.x, e.rows, e.input)
	e.hasX = true
	return nil
}

// Injection implements Injector.
func (e *sumEval) Injection(dst []float64) error {
	checkLen("dst", len(dst), e.Len())
	copy(dst, e.inj)
	return e.ready()
}

// Eval implements solver.Oracle. It returns the number of terms used: the
// drawn size (see Evaluator), or M for the exact average.
func (e *sumEval) Eval(dst, z []float64, s solver.Sample) (int, error) {
	if err := e.checkEval(dst, z); err != nil {
		return 0, err
	}
	idx, k, err := e.sp.terms(s, e.m)
	if err != nil {
		return 0, err
	}
	e.sum(dst, z, idx, k)
	return k, nil
}

// EvalExact implements solver.Exact and solver.FiniteSum: the average over
// all M terms, M term evaluations.
func (e *sumEval) EvalExact(dst, z []float64) error {
	if err := e.checkEval(dst, z); err != nil {
		return err
	}
	e.sum(dst, z, nil, e.m)
	return nil
}

type mfEval struct {
	sumEval
	runner[*mfGraph]
	rowMajor
	c *MeanField
	// Scratch for sampled evaluations, sized for all M units: the
	// activations (rows×M), the gathered W columns (Hidden×M), V rows
	// (M×Hidden) and c entries (M), and the pre-activation cotangent.
	pre, ws, vs, cs, da []float64
	// gram, gramC and gramCC hold the units' second moments (1/M)WWᵀ
	// (upper triangle), (1/M)Wc and (1/M)cᵀc of meanTermBound, gramVV
	// (1/M)‖V‖_F²; gramV and gramWW hold (1/M)VᵀV and (1/M)‖W‖_F² of
	// meanVJPBound. They depend on the parameters only and are recomputed
	// when those differ from gramAt's and gramVAt's copies.
	gram, gramC, gramV     []float64
	gramCC, gramVV, gramWW float64
	gramAt, gramVAt        paramSnapshot
	graphs                 graphs[*mfGraph]
}

var (
	_ Evaluator        = (*mfEval)(nil)
	_ fusedVJP         = (*mfEval)(nil)
	_ TermVariancer    = (*mfEval)(nil)
	_ solver.FiniteSum = (*mfEval)(nil)
	_ Evaluator        = (*expEval)(nil)
	_ fusedVJP         = (*expEval)(nil)
	_ TermVariancer    = (*expEval)(nil)
	_ solver.FiniteSum = (*expEval)(nil)
)

func newMFEval(c *MeanField, n int) *mfEval {
	rows := n * c.shape.Rows
	h, m := c.shape.Hidden, c.m
	e := &mfEval{
		sumEval:  newSumEval("MeanField", c.shape, n, m, c.u, c.b),
		rowMajor: rowMajor{c.Params()},
		c:        c,
		pre:      make([]float64, rows*m),
		ws:       make([]float64, h*m),
		vs:       make([]float64, m*h),
		cs:       make([]float64, m),
		graphs:   newGraphs[*mfGraph](m),
	}
	e.runner.e = e
	e.sum = e.forward
	return e
}

// Model implements solver.Oracle: LipschitzInExpectation (see MeanField).
func (e *mfEval) Model() solver.Model { return solver.LipschitzInExpectation }

// gather fills ws (Hidden×k), vs (k×Hidden) and cs (k) with the columns,
// rows and entries of W, V and c selected by idx.
func (e *mfEval) gather(idx []int) {
	h, m, k := e.c.shape.Hidden, e.c.m, len(idx)
	w, v, c := e.c.w.Data(), e.c.v.Data(), e.c.c.Data()
	for i := range h {
		row := w[i*m : (i+1)*m]
		out := e.ws[i*k : (i+1)*k]
		for j, t := range idx {
			out[j] = row[t]
		}
	}
	for j, t := range idx {
		copy(e.vs[j*h:(j+1)*h], v[t*h:(t+1)*h])
		e.cs[j] = c[t]
	}
}

// units returns W, V and c restricted to the units idx (gathered into the
// scratch), or the parameters themselves for idx = nil.
func (e *mfEval) units(idx []int, k int) (w, v, c []float64) {
	if idx == nil {
		return e.c.w.Data(), e.c.v.Data(), e.c.c.Data()
	}
	e.gather(idx)
	h := e.c.shape.Hidden
	return e.ws[:h*k], e.vs[:k*h], e.cs[:k]
}

// activations leaves A = σ(zW' + c') (rows×k) in e.pre for the k units
// whose W columns and c entries are w (Hidden×k) and c (k).
func (e *mfEval) activations(z, w, c []float64, k int) []float64 {
	h := e.c.shape.Hidden
	a := e.pre[:e.rows*k]
	for r := range e.rows {
		copy(a[r*k:(r+1)*k], c)
	}
	mulAB(1, dense(e.rows, h, z), dense(h, k, w), 1, dense(e.rows, k, a))
	e.c.act.apply(a)
	return a
}

// forward writes xU + b + (1/k) σ(zW' + c')V' into dst.
func (e *mfEval) forward(dst, z []float64, idx []int, k int) {
	h := e.c.shape.Hidden
	w, v, c := e.units(idx, k)
	a := e.activations(z, w, c, k)
	copy(dst, e.inj)
	mulAB(1/float64(k), dense(e.rows, k, a), dense(k, h, v), 1, dense(e.rows, h, dst))
}

// TermVariance implements TermVariancer. A unit is the rank-one matrix
// a_m v_mᵀ (a_m = σ(Zw_m + c_m), the m-th column of A), so
// ‖φ_m‖² = ‖a_m‖²‖v_m‖² and σ² = (1/M)Σ_m ‖a_m‖²‖v_m‖² − ‖φ̄‖².
func (e *mfEval) TermVariance(z []float64) (float64, error) {
	if err := e.checkEval(e.inj, z); err != nil {
		return 0, err
	}
	h, m := e.c.shape.Hidden, e.c.m
	a := e.activations(z, e.c.w.Data(), e.c.c.Data(), m)
	v := e.c.v.Data()
	second := 0.0
	for t := range m {
		col := 0.0
		for r := range e.rows {
			x := a[r*m+t]
			col += x * x
		}
		vt := blas64.Nrm2(blas64.Vector{N: h, Inc: 1, Data: v[t*h : (t+1)*h]})
		second += col * vt * vt
	}
	second /= float64(m)
	mean := make([]float64, e.rows*h)
	mulAB(1/float64(m), dense(e.rows, m, a), dense(m, h, v), 0, dense(e.rows, h, mean))
	nm := blas64.Nrm2(blas64.Vector{N: len(mean), Inc: 1, Data: mean})
	return math.Max(0, second-nm*nm), nil
}

// fusedHidden is VJPHidden. For the units of s (all M, or the k drawn as
// in Eval) with A = σ(zW' + c'): dst = δW'ᵀ with δ = ((1/k) gV'ᵀ) ⊙ σ′.
// The injection does not depend on z.
func (e *mfEval) fusedHidden(dst, z, g []float64, idx []int, k int) {
	h := e.c.shape.Hidden
	w, v, c := e.units(idx, k)
	e.delta(z, g, w, v, c, k)
	mulABt(1, dense(e.rows, k, e.da[:e.rows*k]), dense(h, k, w), 0, dense(e.rows, h, dst))
}

// fusedFull is VJP. With A = σ(zW + c) and δ = ((1/M) gVᵀ) ⊙ σ′:
// dz = δWᵀ, dx = gUᵀ, and U, b, W, c, V gain xᵀg, the column sums of g,
// zᵀδ, the column sums of δ and (1/M) Aᵀg.
func (e *mfEval) fusedFull(dz, dx, z, g []float64) {
	c := e.c
	h, m := c.shape.Hidden, c.m
	e.delta(z, g, c.w.Data(), c.v.Data(), c.c.Data(), m)
	dm := dense(e.rows, m, e.da)
	if dz != nil {
		mulABt(1, dm, dense(h, m, c.w.Data()), 0, dense(e.rows, h, dz))
	}
	e.vjp(dx, e.x, g, e.rows)
	mulAtB(1, dense(e.rows, h, z), dm, 1, dense(h, m, c.w.GradData()))
	addColSums(c.c.GradData(), e.da, e.rows, m)
	mulAtB(1/float64(m), dense(e.rows, m, e.pre), dense(e.rows, h, g), 1, dense(m, h, c.v.GradData()))
}

// delta leaves A = σ(zW' + c') in e.pre and δ = ((1/k) gV'ᵀ) ⊙ σ′ in e.da
// (rows×k each).
func (e *mfEval) delta(z, g, w, v, c []float64, k int) {
	h := e.c.shape.Hidden
	if e.da == nil {
		e.da = make([]float64, e.rows*e.c.m)
	}
	a := e.activations(z, w, c, k)
	da := e.da[:e.rows*k]
	mulABt(1/float64(k), dense(e.rows, h, g), dense(k, h, v), 0, dense(e.rows, k, da))
	e.c.act.backward(da, a)
}

// mfGraph is the graph of the MeanField cell with the gradient of ⟨g, f⟩:
// the full graph is xU + b + (1/M) σ(zW + c)V with the parameters bound
// (gradients with respect to z, x, U, b, W, c, V); a hidden graph is
// (1/k) σ(zW' + c')V' with W', c' and V' inputs filled from the drawn units
// (gradient with respect to z; the injection does not depend on z).
type mfGraph struct {
	tape
	x, c, w, v []float64
}

func (e *mfEval) graph(full bool, k int) (*mfGraph, error) {
	return e.graphs.get(full, k, func() (*mfGraph, error) {
		c := e.c
		h, d := c.shape.Hidden, c.shape.Input
		mg := &mfGraph{}
		err := buildVJP("MeanField", &mg.tape, e.rows, h, func(gr graph, z, g *G.Node) {
			var w, cn, v *G.Node
			var wrt G.Nodes
			var inj *G.Node
			if full {
				var x, u, b *G.Node
				x, mg.x = gr.input("x", e.rows, d)
				u, b, inj = e.node(gr, x)
				w = gr.bound("W", c.w.tensor())
				cn = gr.bound("c", c.c.tensor())
				v = gr.bound("V", c.v.tensor())
				wrt = G.Nodes{z, x, u, b, w, cn, v}
			} else {
				w, mg.w = gr.input("W", h, k)
				cn, mg.c = gr.input("c", 1, k)
				v, mg.v = gr.input("V", k, h)
				wrt = G.Nodes{z}
			}
			pre := G.Must(G.BroadcastAdd(G.Must(G.Mul(z, w)), cn, nil, []byte{0}))
			a := c.act.node(pre)
			scaleNode := G.NewConstant(1/float64(k), G.WithName("1/k"))
			out := G.Must(G.Mul(G.Must(G.Mul(a, v)), scaleNode))
			if inj != nil {
				out = G.Must(G.Add(out, inj))
			}
			e.finish(&mg.tape, gr, full, out, g, wrt)
		})
		return mg, err
	})
}

func (e *mfEval) load(mg *mfGraph, z, g []float64, idx []int) {
	switch {
	case mg.full:
		copy(mg.x, e.x)
	default:
		w, v, c := e.units(idx, len(mg.c))
		copy(mg.w, w)
		copy(mg.v, v)
		copy(mg.c, c)
	}
	copy(mg.z, z)
	copy(mg.g, g)
}
