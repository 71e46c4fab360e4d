package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/internal/f32"
	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/internal/team"
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
	// Lipschitz is the constraint on W that Project enforces (under the
	// default Normalization; SpectralNorm takes its Gamma and needs its ℓ2
	// norm, WeightNorm ignores it).
	Lipschitz Constraint
	// Normalization selects how W is kept in check: the zero value,
	// Projection, trains W and projects it; WeightNorm and SpectralNorm
	// train parameters from which Project computes W (see Normalization).
	Normalization Normalization
	// Seed seeds the initialisation: W and U have independent N(0, 1/Hidden)
	// and N(0, 1/Input) entries (W then projected), b is zero.
	Seed uint64
	// Precision is the precision of the cell's matrix products (see
	// Precision); the zero value, DefaultPrecision, is Float64.
	Precision Precision
}

// Dense is the cell f(z, x) = σ(zW + xU + b), applied to every row z of a
// hidden state (and the matching row x of the input): with column vectors,
// z ↦ σ(Wᵀz + Uᵀx + b).
//
// After Project, ‖Wᵀ‖_{p→p} ≤ γ̄ in the ℓp norm of Lipschitz.P (see
// Constraint), so the cell is γ̄-Lipschitz in z in that norm, per example
// (vector or entrywise on the Rows×Hidden matrix), and in Schatten-2 for ℓ2.
// Under Schatten-p with p ≠ 2 and Rows > 1 no bound is proven: the linear
// part is ‖W‖₂-Lipschitz in every Schatten norm but the elementwise
// activation need not be nonexpansive there; Proven reports false and deq
// monitors the ratios empirically.
//
// Its parameters are W (Hidden×Hidden), U (Input×Hidden) and b (1×Hidden)
// under the default Normalization; under WeightNorm V, g, U, b and under
// SpectralNorm V, U, b, from which Project computes W (see Normalization:
// only Projection and SpectralNorm prove a bound).
//
// With DenseConfig.Precision = Float32 the products zW, xU and those of
// the VJPs run in single precision: a different deterministic map, within
// float32 rounding of this one (see Precision). Its evaluators then split
// the rows of a batch between GOMAXPROCS goroutines for the evaluations
// and the VJPs in z once the product zW has at least 2^20 multiply–adds
// (a batch of 64 rows of 128 hidden features), for as many parts as there
// are cores: the result depends on GOMAXPROCS only through the BLAS's
// rounding of products of fewer rows.
//
// Dense is a Forker: its forks share its parameters and build their own
// evaluators, so that package deq can solve parts of a batch concurrently
// (deq.Settings.Split).
type Dense struct {
	shape  Shape
	act    Activation
	con    *opNorm
	rp     *reparam // nil under Projection
	w      *Param
	u      *Param
	b      *Param
	params []*Param
	prec   Precision
	evals  mru.Cache[int, *denseEval]
	refs   mru.Cache[int, *denseEval] // ReferenceEvaluator's, under Float32
}

var _ Cell = (*Dense)(nil)

// NewDense returns a Dense cell initialised from cfg.Seed and projected.
func NewDense(cfg DenseConfig) (*Dense, error) {
	shape, err := checkConfig("DenseConfig", cfg.Rows, cfg.Hidden, cfg.Input, cfg.Activation)
	if err != nil {
		return nil, err
	}
	con, err := newOpNorm(cfg.Lipschitz, cfg.Hidden)
	if err != nil {
		return nil, err
	}
	if err := cfg.Normalization.valid(); err != nil {
		return nil, err
	}
	prec, err := cfg.Precision.validIn("DenseConfig")
	if err != nil {
		return nil, err
	}
	if cfg.Normalization == SpectralNorm && con.kind != kindL2 {
		return nil, fmt.Errorf("layers: DenseConfig.Normalization = spectral needs the ℓ2 Lipschitz constraint, not P = %v", con.p)
	}
	h, d := cfg.Hidden, cfg.Input
	c := &Dense{
		shape: shape,
		act:   cfg.Activation,
		con:   con,
		w:     newParam("W", h, h),
		u:     newParam("U", d, h),
		b:     newParam("b", 1, h),
		prec:  prec,
		evals: mru.Cache[int, *denseEval]{Max: MaxCachedBatches},
		refs:  mru.Cache[int, *denseEval]{Max: MaxCachedBatches},
	}
	initNormal(cfg.Seed, 0xd1b54a32d192ed03, normalInit{c.w, h}, normalInit{c.u, d})
	c.params = []*Param{c.w, c.u, c.b}
	if cfg.Normalization != Projection {
		// Start from the projected initial W: under SpectralNorm with V the
		// raw initial W, so that γ̄V/σ_max(V) is the projected one while V
		// stays off the kink σ_max(V) = γ̄ of the normalisation; under
		// WeightNorm with V and g giving the projected W.
		c.rp = newReparam(cfg.Normalization, con.gamma, h)
		if cfg.Normalization == SpectralNorm {
			c.rp.init(c.w.Data())
		}
		if err := c.project(); err != nil {
			return nil, err
		}
		if cfg.Normalization == WeightNorm {
			c.rp.init(c.w.Data())
		}
		c.params = []*Param{c.rp.v}
		if c.rp.g != nil {
			c.params = append(c.params, c.rp.g)
		}
		c.params = append(c.params, c.u, c.b)
	}
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

// Params implements Cell: W, U, b (Projection); V, g, U, b (WeightNorm);
// V, U, b (SpectralNorm).
func (c *Dense) Params() []*Param { return c.params }

// W returns the recurrent weight. Under WeightNorm and SpectralNorm it is
// not a trained parameter (it is not in Params) but computed by Project
// from them; its gradient is scratch space.
func (c *Dense) W() *Param { return c.w }

// Precision returns the precision of the cell's matrix products.
func (c *Dense) Precision() Precision { return c.prec }

// Normalization returns the cell's normalisation.
func (c *Dense) Normalization() Normalization {
	if c.rp == nil {
		return Projection
	}
	return c.rp.kind
}

// Gamma implements Cell: the Constraint's γ̄ under Projection and
// SpectralNorm, +Inf (no bound) under WeightNorm.
func (c *Dense) Gamma() float64 {
	if c.rp != nil && c.rp.kind == WeightNorm {
		return math.Inf(1)
	}
	return c.con.gamma
}

// Proven implements Cell. Under WeightNorm, and with Float32 products
// (whose map meets γ̄ only up to its rounding; see Precision), it is false
// in every norm; under SpectralNorm, whose σ_max is exact, it is what the
// ℓ2 Projection proves.
func (c *Dense) Proven(n solver.Norm) bool {
	return c.prec != Float32 && c.ReferenceProven(n)
}

// ReferenceProven implements Referenced: what Proven reports for the
// cell in Float64.
func (c *Dense) ReferenceProven(n solver.Norm) bool {
	if c.rp != nil && c.rp.kind == WeightNorm {
		return false
	}
	return c.con.proven(n, c.shape.Rows)
}

// Project implements Cell: it enforces the Constraint on W, or under
// WeightNorm and SpectralNorm computes W from the trained parameters. Call
// it after every optimiser step either way (under WeightNorm and
// SpectralNorm an evaluator's SetInput also recomputes W when the
// parameters changed, as the Evaluator contract asks SetInput to be called
// after a change).
func (c *Dense) Project() error {
	if c.rp != nil {
		return c.rp.compute(c.w.Data())
	}
	return c.project()
}

// project enforces the Constraint on W.
func (c *Dense) project() error {
	if b := c.con.project(c.w.Data(), c.shape.Hidden); math.IsNaN(b) {
		return fmt.Errorf("layers: Dense.Project: W is not finite: %w", solver.ErrNonFinite)
	}
	return nil
}

// chainW turns the gradient accumulated in W's gradient into the
// gradients of the parameters W is computed from (a no-op under
// Projection, where W is the parameter).
func (c *Dense) chainW() {
	if c.rp != nil {
		c.rp.chain(c.w.GradData())
	}
}

// ProjectionState returns a copy of the state Project keeps between calls
// (see ProjectionState).
func (c *Dense) ProjectionState() ProjectionState { return c.con.state() }

// SetProjectionState restores a state returned by ProjectionState of a
// Dense cell with the same configuration. It returns an error if the state
// does not fit.
func (c *Dense) SetProjectionState(s ProjectionState) error { return c.con.setState("Dense", s) }

// Bound returns the certified bound on ‖Wᵀ‖_{p→p} in the constraint's norm
// computed from the current W (the exact spectral norm for ℓ2), hence on the
// cell's Lipschitz constant in z.
func (c *Dense) Bound() float64 { return c.con.bound(c.w.Data(), c.shape.Hidden) }

// Evaluator implements Cell.
func (c *Dense) Evaluator(n int) (Evaluator, error) {
	return evaluator("Dense", &c.evals, n, func() *denseEval { return newDenseEval(c, n, c.prec) })
}

// ReferenceEvaluator implements Referenced: under Float32 an evaluator
// whose products run in float64, otherwise Evaluator(n).
func (c *Dense) ReferenceEvaluator(n int) (Evaluator, error) {
	if c.prec != Float32 {
		return c.Evaluator(n)
	}
	return evaluator("Dense.Reference", &c.refs, n, func() *denseEval { return newDenseEval(c, n, Float64) })
}

type denseEval struct {
	evalBase
	runner[*denseGraph]
	rowMajor
	c      *Dense
	cst    []float64 // xU + b
	graphs graphs[*denseGraph]
	fused  denseScratch
	jac    jacScratch
	f32    *dense32 // Float32 only
	// prepared is set by VJPPrepare until VJPCommit adds its gradients.
	prepared bool
}

// dense32 is the single-precision scratch of a Dense evaluator under
// Float32: float32 copies of W and U, the input rounded at SetInput, and
// the operands and results of the products, each allocated on first use.
type dense32 struct {
	w, u   f32.Mirror
	x      []float32 // rows×Input
	z, d   []float32 // rows×Hidden: the state or a cotangent, rounded
	out    []float32 // rows×Hidden: a product
	dx     []float32 // rows×Input: δUᵀ
	gw, gu []float32 // Hidden×Hidden, Input×Hidden: zᵀδ and xᵀδ

	// team splits the rows of the forward evaluations and hidden VJPs
	// between goroutines; nil runs them on the caller (newDenseTeam).
	team *team.Team
	call denseCall // the arguments of the split call in progress
	// evalPart and hiddenPart are the evaluator's methods of the same
	// names, bound once so that a split call allocates nothing.
	evalPart, hiddenPart func(p, lo, hi int)
}

// denseScratch is the scratch of the fused VJPs, allocated on first use:
// the derivative σ′(zW + c) at the state z and weight W of the last call
// (kept, with copies of z and W, while they and the input stay the same,
// since an adjoint solve calls VJPHidden many times at one point) and the
// cotangent of the pre-activation.
type denseScratch struct {
	deriv, delta []float64 // rows×Hidden
	z, w         []float64 // copies of the state and of W for deriv
	inputs       uint64    // evalBase.inputs for deriv; 0 means none
}

var (
	_ Evaluator    = (*denseEval)(nil)
	_ solver.Exact = (*denseEval)(nil)
	_ fusedVJP     = (*denseEval)(nil)
)

// newDenseEval returns an evaluator for n examples whose products run in
// precision prec (the cell's, or Float64 for ReferenceEvaluator).
func newDenseEval(c *Dense, n int, prec Precision) *denseEval {
	e := &denseEval{
		evalBase: newEvalBase("Dense", c.shape, n, 1, false),
		c:        c,
		rowMajor: rowMajor{[]*Param{c.w, c.u, c.b}},
		graphs:   newGraphs[*denseGraph](1),
	}
	e.cst = make([]float64, e.Len())
	e.runner.e = e
	if prec == Float32 {
		e.f32 = &dense32{team: newDenseTeam(e.rows, c.shape.Hidden)}
		e.f32.evalPart, e.f32.hiddenPart = e.evalPart, e.hiddenPart
		if e.f32.team != nil {
			runtime.AddCleanup(e, (*team.Team).Close, e.f32.team)
		}
	}
	return e
}

func (e *denseEval) Model() solver.Model { return solver.Deterministic }

func (e *denseEval) SetInput(x []float64) error {
	if e.c.rp != nil {
		// W follows its parameters (see Normalization).
		if err := e.c.rp.sync(e.c.w.Data()); err != nil {
			return err
		}
	}
	e.setInput(x)
	if f := e.f32; f != nil {
		c := e.c
		h, d := c.shape.Hidden, c.shape.Input
		out := f32.Scratch(&f.out, e.rows*h)
		f32.Gemm(blas.NoTrans, blas.NoTrans, e.rows, h, d, f32.Round(&f.x, e.x), f.u.Of(c.u.Data()), 0, out)
		b := c.b.Data()
		for i, v := range out {
			e.cst[i] = b[i%h] + float64(v)
		}
	} else {
		inputTerm(e.cst, dense(e.rows, e.c.shape.Input, e.x), e.c.u.Data(), e.c.b.Data())
	}
	e.hasX = true
	return nil
}

func (e *denseEval) Eval(dst, z []float64, _ solver.Sample) (int, error) {
	return 1, e.EvalExact(dst, z)
}

// EvalExact computes σ(zW + c) with c = xU + b cached by SetInput.
func (e *denseEval) EvalExact(dst, z []float64) error {
	if err := e.checkEval(dst, z); err != nil {
		return err
	}
	h := e.c.shape.Hidden
	if e.f32 != nil {
		e.eval32(dst, z)
		return nil
	}
	copy(dst, e.cst)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: e.rows, Cols: h, Stride: h, Data: z},
		blas64.General{Rows: h, Cols: h, Stride: h, Data: e.c.w.Data()},
		1, blas64.General{Rows: e.rows, Cols: h, Stride: h, Data: dst})
	e.c.act.apply(dst)
	return nil
}

// fusedHidden is VJPHidden: dst = (g ⊙ σ′(zW + c))Wᵀ, with
// c = xU + b cached by SetInput as for Eval.
func (e *denseEval) fusedHidden(dst, z, g []float64, _ []int, _ int) {
	h := e.c.shape.Hidden
	if e.f32 != nil {
		e.hidden32(dst, g, e.derivative(z))
		return
	}
	mulABt(1, dense(e.rows, h, e.delta(z, g)), dense(h, h, e.c.w.Data()), 0, dense(e.rows, h, dst))
}

// mulWt32 writes d·Wᵀ into dst in single precision (Float32).
func (e *denseEval) mulWt32(dst []float64, d []float32) {
	f, h := e.f32, e.c.shape.Hidden
	out := f32.Scratch(&f.out, e.rows*h)
	f32.Gemm(blas.NoTrans, blas.Trans, e.rows, h, h, d, f.w.Of(e.c.w.Data()), 0, out)
	f32.Convert(dst, out)
}

// affineVJP32 is affineVJP for W, U and b in single precision (Float32):
// the products are rounded to float32, the gradients accumulated in
// float64.
func (e *denseEval) affineVJP32(dz, dx, z, delta []float64) {
	e.affineVJP32Own(dz, dx, z, delta)
	e.addGrads32(delta)
}

// affineVJP32Own is the part of affineVJP32 that writes only dz, dx and
// the evaluator's own memory: the products, with zᵀδ and xᵀδ kept in the
// scratch for addGrads32.
func (e *denseEval) affineVJP32Own(dz, dx, z, delta []float64) {
	f, c := e.f32, e.c
	rows, h, d := e.rows, c.shape.Hidden, c.shape.Input
	d32 := f32.Round(&f.d, delta)
	if dz != nil {
		e.mulWt32(dz, d32)
	}
	f32.Gemm(blas.Trans, blas.NoTrans, h, h, rows, f32.Round(&f.z, z), d32, 0, f32.Scratch(&f.gw, h*h))
	if dx != nil {
		out := f32.Scratch(&f.dx, rows*d)
		f32.Gemm(blas.NoTrans, blas.Trans, rows, d, h, d32, f.u.Of(c.u.Data()), 0, out)
		f32.Convert(dx, out)
	}
	f32.Gemm(blas.Trans, blas.NoTrans, d, h, rows, f.x, d32, 0, f32.Scratch(&f.gu, d*h))
}

// addGrads32 adds the parameter gradients of the last affineVJP32Own, for
// the cotangent δ = delta, to the cell's: zᵀδ to W's, xᵀδ to U's and the
// column sums of δ to b's.
func (e *denseEval) addGrads32(delta []float64) {
	f, c := e.f32, e.c
	h, d := c.shape.Hidden, c.shape.Input
	f32.AddTo(c.w.GradData(), f.gw[:h*h])
	f32.AddTo(c.u.GradData(), f.gu[:d*h])
	addColSums(c.b.GradData(), delta, e.rows, h)
}

// fusedFull is VJP. With δ = g ⊙ σ′(zW + c): dz = δWᵀ, dx = δUᵀ,
// and W, U, b gain zᵀδ, xᵀδ and the column sums of δ.
func (e *denseEval) fusedFull(dz, dx, z, g []float64) {
	c := e.c
	e.prepared = false // the scratch VJPPrepare kept is overwritten
	if e.f32 != nil {
		e.affineVJP32(dz, dx, z, e.delta(z, g))
	} else {
		affineVJP(dz, dx, z, e.x, e.delta(z, g), c.w, c.u, c.b, e.rows)
	}
	c.chainW()
}

// readGrads overrides rowMajor's for the graphs, whose gradient nodes are
// with respect to W, U and b: W's gradient is chained into the parameters
// W is computed from.
func (e *denseEval) readGrads(dx []float64, grads G.Nodes) {
	e.rowMajor.readGrads(dx, grads)
	e.c.chainW()
}

// delta returns g ⊙ σ′(zW + c) in the scratch (see derivative).
func (e *denseEval) delta(z, g []float64) []float64 {
	f := &e.fused
	mulInto(f.delta, 1, g, e.derivative(z))
	return f.delta
}

// derivative returns σ′(zW + c) in the scratch, computing it unless the
// scratch holds it for the same z, W (bit for bit) and input.
func (e *denseEval) derivative(z []float64) []float64 {
	f := &e.fused
	w := e.c.w.Data()
	if f.inputs != e.inputs || !numeric.SameBits(f.z, z) || !numeric.SameBits(f.w, w) {
		if f.deriv == nil {
			f.deriv = make([]float64, e.Len())
			f.delta = make([]float64, e.Len())
			f.z = make([]float64, e.Len())
			f.w = make([]float64, len(w))
		}
		// EvalExact checks nothing here that the caller has not checked.
		_ = e.EvalExact(f.deriv, z)
		e.c.act.derivative(f.deriv)
		copy(f.z, z)
		copy(f.w, w)
		f.inputs = e.inputs
	}
	return f.deriv
}

// denseGraph is the graph σ(zW + xU + b) (full) or σ(zW + c) (hidden, with
// c = xU + b an input) with the gradient of ⟨g, f⟩ (full: with respect to
// z, x, W, U, b; hidden: z).
type denseGraph struct {
	tape
	x, c []float64 // input backings (x for full, c for hidden)
}

func (e *denseEval) graph(full bool, k int) (*denseGraph, error) {
	return e.graphs.get(full, k, func() (*denseGraph, error) {
		c := e.c
		h, d := c.shape.Hidden, c.shape.Input
		dg := &denseGraph{}
		err := buildVJP("Dense", &dg.tape, e.rows, h, func(gr graph, z, g *G.Node) {
			var pre *G.Node
			w := gr.bound("W", c.w.tensor())
			wrt := G.Nodes{z}
			if full {
				var x *G.Node
				x, dg.x = gr.input("x", e.rows, d)
				u := gr.bound("U", c.u.tensor())
				b := gr.bound("b", c.b.tensor())
				pre = affineNode(z, w, x, u, b)
				wrt = G.Nodes{z, x, w, u, b}
			} else {
				var cn *G.Node
				cn, dg.c = gr.input("c", e.rows, h)
				pre = G.Must(G.Add(G.Must(G.Mul(z, w)), cn))
			}
			e.finish(&dg.tape, gr, full, c.act.node(pre), g, wrt)
		})
		return dg, err
	})
}

func (e *denseEval) load(dg *denseGraph, z, g []float64, _ []int) {
	copy(dg.z, z)
	if dg.full {
		copy(dg.x, e.x)
	} else {
		copy(dg.c, e.cst)
	}
	copy(dg.g, g)
}
