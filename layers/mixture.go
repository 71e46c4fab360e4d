package layers

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/solver"
)

// MixtureConfig configures a Mixture cell. Zero values select the
// documented defaults.
type MixtureConfig struct {
	// Hidden is the number of hidden features per row. Required.
	Hidden int
	// Terms is M, the number of terms (patches or heads). Required.
	Terms int
	// PatchLen is the number of input features each term reads. Required.
	// An input row has Terms·PatchLen features; term m reads
	// x[m·PatchLen, (m+1)·PatchLen).
	PatchLen int
	// Rows is the number of rows of an example (see Shape). Zero means 1.
	Rows int
	// Activation is σ; the zero value is ReLU.
	Activation Activation
	// Lipschitz is the constraint that Project enforces on every W_m.
	Lipschitz Constraint
	// Seed seeds the initialisation: W_m and U_m have independent
	// N(0, 1/Hidden) and N(0, 1/PatchLen) entries (W_m then projected), b is
	// zero.
	Seed uint64
}

// Mixture is the cell
//
//	f(z, x) = (1/M) Σ_m σ(zW_m + x_m U_m + b_m),
//
// applied to every row z of a hidden state, where x_m is the m-th patch (or
// head) of the input row. Its stochastic oracle samples terms m uniformly
// (one term = one unit sample).
//
// Project bounds every ‖W_mᵀ‖_{p→p} by γ̄ (see Constraint), so every term,
// every minibatch average and the exact operator are γ̄-Lipschitz in z in
// that ℓp norm: the oracle's Model is SamplewiseLipschitz (which asks
// γ̄ ≤ 1). As for Dense, no bound is proven under Schatten-p with p ≠ 2 and
// Rows > 1.
//
// Its parameters are W ((M·Hidden)×Hidden, the W_m stacked), U
// ((M·PatchLen)×Hidden, the U_m stacked) and b (M×Hidden, row m is b_m).
type Mixture struct {
	shape Shape
	m, pl int
	act   Activation
	con   *opNorm
	w     *Param
	u     *Param
	b     *Param
	evals mru.Cache[int, *mixEval]
}

var _ Cell = (*Mixture)(nil)

// NewMixture returns a Mixture cell initialised from cfg.Seed and projected.
func NewMixture(cfg MixtureConfig) (*Mixture, error) {
	if cfg.Terms < 1 {
		return nil, fmt.Errorf("layers: MixtureConfig.Terms = %d must be positive", cfg.Terms)
	}
	if cfg.PatchLen < 1 {
		return nil, fmt.Errorf("layers: MixtureConfig.PatchLen = %d must be positive", cfg.PatchLen)
	}
	shape, err := checkConfig("MixtureConfig", cfg.Rows, cfg.Hidden, cfg.Terms*cfg.PatchLen, cfg.Activation)
	if err != nil {
		return nil, err
	}
	con, err := newOpNorm(cfg.Lipschitz, cfg.Hidden)
	if err != nil {
		return nil, err
	}
	h, m, pl := cfg.Hidden, cfg.Terms, cfg.PatchLen
	c := &Mixture{
		shape: shape, m: m, pl: pl, act: cfg.Activation, con: con,
		w:     newParam("W", m*h, h),
		u:     newParam("U", m*pl, h),
		b:     newParam("b", m, h),
		evals: mru.Cache[int, *mixEval]{Max: MaxCachedBatches},
	}
	initNormal(cfg.Seed, 0x9e3779b97f4a7c15, normalInit{c.w, h}, normalInit{c.u, pl})
	if err := c.Project(); err != nil {
		return nil, err
	}
	return c, nil
}

// Shape implements Cell.
func (c *Mixture) Shape() Shape { return c.shape }

// Terms returns M.
func (c *Mixture) Terms() int { return c.m }

// Params implements Cell: W, U, b.
func (c *Mixture) Params() []*Param { return []*Param{c.w, c.u, c.b} }

// Gamma implements Cell.
func (c *Mixture) Gamma() float64 { return c.con.gamma }

// Proven implements Cell.
func (c *Mixture) Proven(n solver.Norm) bool { return c.con.proven(n, c.shape.Rows) }

// W returns the stacked recurrent weights W_0, …, W_{M−1}.
func (c *Mixture) W() *Param { return c.w }

// wm returns W_m's storage.
func (c *Mixture) wm(m int) []float64 {
	h := c.shape.Hidden
	return c.w.Data()[m*h*h : (m+1)*h*h]
}

// Project implements Cell: it enforces the Constraint on every W_m.
func (c *Mixture) Project() error {
	for m := 0; m < c.m; m++ {
		if b := c.con.project(c.wm(m), c.shape.Hidden); math.IsNaN(b) {
			return fmt.Errorf("layers: Mixture.Project: W_%d holds NaN", m)
		}
	}
	return nil
}

// ProjectionState returns a copy of the state Project keeps between calls
// (see ProjectionState); the power-iteration vector is shared by the W_m.
func (c *Mixture) ProjectionState() ProjectionState { return c.con.state() }

// SetProjectionState restores a state returned by ProjectionState of a
// Mixture cell with the same configuration. It returns an error if the
// state does not fit.
func (c *Mixture) SetProjectionState(s ProjectionState) error {
	return c.con.setState("Mixture", s)
}

// Bound returns max_m of the certified bound on ‖W_mᵀ‖_{p→p} (see
// Dense.Bound), the Lipschitz constant of every term.
func (c *Mixture) Bound() float64 {
	b := 0.0
	for m := 0; m < c.m; m++ {
		b = math.Max(b, c.con.bound(c.wm(m), c.shape.Hidden))
	}
	return b
}

// Evaluator implements Cell.
func (c *Mixture) Evaluator(n int) (Evaluator, error) {
	return evaluator("Mixture", &c.evals, n, func() *mixEval { return newMixEval(c, n) })
}

type mixEval struct {
	evalBase
	runner[*mixGraph]
	c      *Mixture
	cst    []float64 // M blocks of rows×Hidden: x_m U_m + b_m
	count  []int
	tmp    []float64
	graphs graphs[*mixGraph]
	fused  mixFused // scratch of the fused VJPs, allocated on first use
}

var (
	_ Evaluator = (*mixEval)(nil)
	_ fusedVJP  = (*mixEval)(nil)
)

func newMixEval(c *Mixture, n int) *mixEval {
	rows := n * c.shape.Rows
	h := c.shape.Hidden
	e := &mixEval{
		evalBase: newEvalBase("Mixture", c.shape, n, c.m, true),
		c:        c,
		cst:      make([]float64, c.m*rows*h),
		count:    make([]int, c.m),
		tmp:      make([]float64, rows*h),
		graphs:   newGraphs[*mixGraph](c.m),
	}
	e.runner.e = e
	return e
}

func (e *mixEval) Model() solver.Model { return solver.SamplewiseLipschitz }

func (e *mixEval) cm(m int) []float64 {
	n := e.rows * e.c.shape.Hidden
	return e.cst[m*n : (m+1)*n]
}

func (e *mixEval) SetInput(x []float64) error {
	e.setInput(x)
	h, d, pl := e.c.shape.Hidden, e.c.shape.Input, e.c.pl
	u, b := e.c.u.Data(), e.c.b.Data()
	for m := 0; m < e.c.m; m++ {
		inputTerm(e.cm(m), general(e.rows, pl, d, e.x[m*pl:]), u[m*pl*h:(m+1)*pl*h], b[m*h:(m+1)*h])
	}
	e.hasX = true
	return nil
}

// addTerm adds weight·σ(zW_m + c_m) to dst.
func (e *mixEval) addTerm(dst, z []float64, m int, weight float64) {
	h := e.c.shape.Hidden
	copy(e.tmp, e.cm(m))
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: e.rows, Cols: h, Stride: h, Data: z},
		blas64.General{Rows: h, Cols: h, Stride: h, Data: e.c.wm(m)},
		1, blas64.General{Rows: e.rows, Cols: h, Stride: h, Data: e.tmp})
	e.c.act.apply(e.tmp)
	blas64.Axpy(weight, blas64.Vector{N: len(e.tmp), Inc: 1, Data: e.tmp}, blas64.Vector{N: len(dst), Inc: 1, Data: dst})
}

func (e *mixEval) Eval(dst, z []float64, s solver.Sample) (int, error) {
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
	clear(e.count)
	for _, m := range idx {
		e.count[m]++
	}
	clear(dst)
	for m, k := range e.count {
		if k > 0 {
			e.addTerm(dst, z, m, float64(k)/float64(len(idx)))
		}
	}
	return len(idx), nil
}

func (e *mixEval) EvalExact(dst, z []float64) error {
	if err := e.checkEval(dst, z); err != nil {
		return err
	}
	clear(dst)
	for m := 0; m < e.c.m; m++ {
		e.addTerm(dst, z, m, 1/float64(e.c.m))
	}
	return nil
}

// fusedHidden is VJPHidden: dst = Σ_m w_m δ_m W_mᵀ over the terms of s
// with their weights w_m in Eval's estimate (1/M each for the exact
// average, or the number of draws of m over k), δ_m = g ⊙ σ′(zW_m + c_m).
// The terms are stacked side by side in chunks (see mixFused).
func (e *mixEval) fusedHidden(dst, z, g []float64, idx []int, k int) {
	clear(dst)
	out := dense(e.rows, e.c.shape.Hidden, dst)
	e.eachChunk(z, g, idx, k, func(f *mixFused) {
		mulABt(1, f.deltaMat(), f.wcatMat(), 1, out)
	})
}

// fusedFull is VJP. With δ_m = (1/M) g ⊙ σ′(zW_m + c_m): dz =
// Σ_m δ_m W_mᵀ, the m-th patch of dx is δ_m U_mᵀ, and W_m, U_m, b_m gain
// zᵀδ_m, x_mᵀδ_m and the column sums of δ_m.
func (e *mixEval) fusedFull(dz, dx, z, g []float64) {
	c := e.c
	h, d, pl := c.shape.Hidden, c.shape.Input, c.pl
	if dz != nil {
		clear(dz)
	}
	gw, gu, gb := c.w.GradData(), c.u.GradData(), c.b.GradData()
	e.eachChunk(z, g, nil, c.m, func(f *mixFused) {
		delta := f.deltaMat()
		if dz != nil {
			mulABt(1, delta, f.wcatMat(), 1, dense(e.rows, h, dz))
		}
		// zᵀ[δ_0 … δ_{c−1}] holds the W_m gradients side by side.
		gws := f.gwMat()
		mulAtB(1, dense(e.rows, h, z), delta, 0, gws)
		for j, m := range f.terms {
			blk := gw[m*h*h : (m+1)*h*h]
			for i := range h {
				addTo(blk[i*h:(i+1)*h], gws.Data[i*gws.Stride+j*h:i*gws.Stride+(j+1)*h])
			}
			dj := general(e.rows, h, delta.Stride, delta.Data[j*h:])
			um := c.u.Data()[m*pl*h : (m+1)*pl*h]
			if dx != nil {
				mulABt(1, dj, dense(pl, h, um), 0, general(e.rows, pl, d, dx[m*pl:]))
			}
			mulAtB(1, general(e.rows, pl, d, e.x[m*pl:]), dj, 1, dense(pl, h, gu[m*pl*h:(m+1)*pl*h]))
			gbm := gb[m*h : (m+1)*h]
			for r := range e.rows {
				addTo(gbm, dj.Data[r*dj.Stride:r*dj.Stride+h])
			}
		}
	})
}

// mixChunkCols bounds the width (terms × Hidden) of a chunk of stacked
// terms: 192 columns keep the chunk's products, on up to 64 rows, within
// three of gonum's 64×64 blocks, below its parallel threshold.
const mixChunkCols = 192

// mixFused is the scratch of a Mixture's fused VJPs. Up to chunk terms
// m_0, …, m_{c−1} are stacked side by side, so that one product serves
// them all: wcat = [W_{m_0} … W_{m_{c−1}}] (Hidden×c·Hidden) gives the
// pre-activations [zW_{m_j} + c_{m_j}]_j = z·wcat + [c_{m_j}]_j and, for
// their cotangents Δ = [δ_j]_j (rows×c·Hidden), Σ_j δ_j W_{m_j}ᵀ = Δ·wcatᵀ.
type mixFused struct {
	rows, h, chunk int
	terms          []int     // the chunk's terms
	weights        []float64 // their weights
	wcat           []float64 // Hidden×(chunk·Hidden)
	act, delta     []float64 // rows×(chunk·Hidden): σ(pre) and Δ
	gw             []float64 // Hidden×(chunk·Hidden): zᵀΔ
}

func (f *mixFused) width() int { return len(f.terms) * f.h }

func (f *mixFused) wcatMat() blas64.General {
	return general(f.h, f.width(), f.chunk*f.h, f.wcat)
}

func (f *mixFused) deltaMat() blas64.General {
	return general(f.rows, f.width(), f.chunk*f.h, f.delta)
}

func (f *mixFused) gwMat() blas64.General {
	return general(f.h, f.width(), f.chunk*f.h, f.gw)
}

// eachChunk calls fn for successive chunks of the terms of a VJP, with the
// chunk's wcat and Δ computed at z for the cotangent g: all M terms with
// weight 1/k when idx is nil, or the distinct terms of idx, each weighted
// by its number of draws over k.
func (e *mixEval) eachChunk(z, g []float64, idx []int, k int, fn func(*mixFused)) {
	f := &e.fused
	if f.wcat == nil {
		h := e.c.shape.Hidden
		chunk := max(1, min(e.c.m, mixChunkCols/h))
		*f = mixFused{
			rows: e.rows, h: h, chunk: chunk,
			terms:   make([]int, 0, chunk),
			weights: make([]float64, 0, chunk),
			wcat:    make([]float64, h*chunk*h),
			act:     make([]float64, e.rows*chunk*h),
			delta:   make([]float64, e.rows*chunk*h),
			gw:      make([]float64, h*chunk*h),
		}
	}
	f.terms, f.weights = f.terms[:0], f.weights[:0]
	add := func(m int, w float64) {
		f.terms = append(f.terms, m)
		f.weights = append(f.weights, w)
		if len(f.terms) == f.chunk {
			e.chunkDelta(z, g)
			fn(f)
			f.terms, f.weights = f.terms[:0], f.weights[:0]
		}
	}
	if idx == nil {
		for m := range e.c.m {
			add(m, 1/float64(k))
		}
	} else {
		clear(e.count)
		for _, m := range idx {
			e.count[m]++
		}
		for m, n := range e.count {
			if n > 0 {
				add(m, float64(n)/float64(k))
			}
		}
	}
	if len(f.terms) > 0 {
		e.chunkDelta(z, g)
		fn(f)
	}
}

// chunkDelta packs wcat for the chunk's terms and computes
// Δ = [w_j g ⊙ σ′(zW_{m_j} + c_{m_j})]_j.
func (e *mixEval) chunkDelta(z, g []float64) {
	f := &e.fused
	h, rows, ld := f.h, e.rows, f.chunk*f.h
	for j, m := range f.terms {
		wm := e.c.wm(m)
		for i := range h {
			copy(f.wcat[i*ld+j*h:i*ld+(j+1)*h], wm[i*h:(i+1)*h])
		}
		cm := e.cm(m)
		for r := range rows {
			copy(f.act[r*ld+j*h:r*ld+(j+1)*h], cm[r*h:(r+1)*h])
		}
	}
	act := general(rows, f.width(), ld, f.act)
	mulAB(1, dense(rows, h, z), f.wcatMat(), 1, act)
	for r := range rows {
		a := f.act[r*ld : r*ld+f.width()]
		e.c.act.apply(a)
		dl := f.delta[r*ld : r*ld+f.width()]
		gr := g[r*h : (r+1)*h]
		for j, w := range f.weights {
			mulScaled(dl[j*h:(j+1)*h], w, gr)
		}
		e.c.act.backward(dl, a)
	}
}

// mulScaled sets dst = w·src.
func mulScaled(dst []float64, w float64, src []float64) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = w * v
	}
}

// mixGraph is the graph of f(z)ᵀ = (1/k) Σ_j σ(zW_j + c_j)ᵀ over k slots,
// with the gradient of ⟨gᵀ, f(z)ᵀ⟩. Its size does not depend on k: the
// slots are stacked along the rows of one matrix,
//
//	P = [W_0ᵀ; …; W_{k−1}ᵀ] zᵀ + [c_0ᵀ; …; c_{k−1}ᵀ]   ((k·Hidden)×rows),
//
// so that σ(P), read as a k×(Hidden·rows) matrix, holds one slot per row,
// and a 1×k row of weights 1/k sums them into f(z)ᵀ (Hidden×rows). The
// graph works on transposed states because this stacking keeps every
// slot's block contiguous, which makes the sum a single product with a
// vector; its inputs are filled (and its outputs read) by transposing.
//
// In the full graph (k = M) c_m = x_m U_m + b_m is part of the graph:
// U_mᵀ x_mᵀ for all m is one batched product of U (bound to the parameter's
// storage as M×PatchLen×Hidden) with the patches (M×PatchLen×rows), and b
// (bound as the column (M·Hidden)×1) is broadcast along the rows. In a
// hidden graph the c_jᵀ are inputs. In both, W's stacked transposes are an
// input packed from the parameter before every run, whose gradient is
// unpacked into W's gradient.
//
// The tape's output is f(z)ᵀ (Hidden×rows); its gradients are taken with
// respect to zᵀ, xᵀ, the Wᵀ stack, U and b (full) or zᵀ (hidden).
type mixGraph struct {
	tape
	k      int
	zt, gt []float64 // Hidden×rows
	wt     []float64 // (k·Hidden)×Hidden: W_jᵀ stacked
	ct     []float64 // hidden: (k·Hidden)×rows, c_jᵀ stacked
	xt     []float64 // full: M blocks of PatchLen×rows, x_mᵀ
}

func (e *mixEval) graph(full bool, k int) (*mixGraph, error) {
	return e.graphs.get(full, k, func() (*mixGraph, error) {
		c := e.c
		h, pl, rows := c.shape.Hidden, c.pl, e.rows
		mg := &mixGraph{k: k}
		gr := graph{G.NewGraph()}
		err := build("Mixture", func() {
			var zt, gt, wt, pre *G.Node
			zt, mg.zt = gr.input("zT", h, rows)
			gt, mg.gt = gr.input("gT", h, rows)
			wt, mg.wt = gr.input("WT", k*h, h)
			pre = G.Must(G.Mul(wt, zt))
			wrt := G.Nodes{zt}
			if full {
				var xt *G.Node
				mg.xt = make([]float64, k*pl*rows)
				xt = gr.bound("xT", tensorOver(mg.xt, k, pl, rows))
				u := gr.bound("U", tensorOver(c.u.Data(), k, pl, h))
				b := gr.bound("b", view(c.b.Data(), k*h, 1))
				ux := G.Must(G.BatchedMatMul(u, xt, true, false))
				pre = G.Must(G.Add(pre, G.Must(G.Reshape(ux, tensor.Shape{k * h, rows}))))
				pre = G.Must(G.BroadcastAdd(pre, b, nil, []byte{1}))
				wrt = G.Nodes{zt, xt, wt, u, b}
			} else {
				var ct *G.Node
				ct, mg.ct = gr.input("cT", k*h, rows)
				pre = G.Must(G.Add(pre, ct))
			}
			a := G.Must(G.Reshape(c.act.node(pre), tensor.Shape{k, h * rows}))
			wts, wd := gr.input("1/k", 1, k)
			for i := range wd {
				wd[i] = 1 / float64(k)
			}
			out := G.Must(G.Reshape(G.Must(G.Mul(wts, a)), tensor.Shape{h, rows}))
			e.finish(&mg.tape, gr, full, out, gt, wrt)
		})
		return mg, err
	})
}

// packW fills the graph's stacked Wᵀ with W_{t_j}ᵀ for slot j, where t_j
// is idx[j], or j when idx is nil.
func (e *mixEval) packW(mg *mixGraph, idx []int) {
	h := e.c.shape.Hidden
	for j := range mg.k {
		t := j
		if idx != nil {
			t = idx[j]
		}
		transpose(mg.wt[j*h*h:(j+1)*h*h], e.c.wm(t), h, h)
	}
}

// load fills the graph's inputs: zᵀ, gᵀ (unless g is nil), the stacked
// Wᵀ and either the transposed patches (full) or the stacked c_jᵀ of the
// terms idx (hidden).
func (e *mixEval) load(mg *mixGraph, z, g []float64, idx []int) {
	h, d, pl, rows := e.c.shape.Hidden, e.c.shape.Input, e.c.pl, e.rows
	transpose(mg.zt, z, rows, h)
	if g != nil {
		transpose(mg.gt, g, rows, h)
	}
	e.packW(mg, idx)
	if !mg.full {
		for j := range mg.k {
			t := j
			if idx != nil {
				t = idx[j]
			}
			transpose(mg.ct[j*h*rows:(j+1)*h*rows], e.cm(t), rows, h)
		}
		return
	}
	for m := range e.c.m {
		xt := mg.xt[m*pl*rows : (m+1)*pl*rows]
		for r := range rows {
			for i, v := range e.x[r*d+m*pl : r*d+(m+1)*pl] {
				xt[i*rows+r] = v
			}
		}
	}
}

// readState transposes a Hidden×rows node into dst.
func (e *mixEval) readState(dst []float64, n *G.Node) {
	transpose(dst, nodeData(n), e.c.shape.Hidden, e.rows)
}

// readGrads scatters the transposed patches' gradient into dx and adds the
// gradients of W (block m of the stacked Wᵀ's gradient is (∂/∂W_m)ᵀ), U
// and b.
func (e *mixEval) readGrads(dx []float64, grads G.Nodes) {
	h, d, pl, rows := e.c.shape.Hidden, e.c.shape.Input, e.c.pl, e.rows
	if dx != nil {
		gx := nodeData(grads[1])
		for m := range e.c.m {
			gxm := gx[m*pl*rows : (m+1)*pl*rows]
			for r := range rows {
				row := dx[r*d+m*pl : r*d+(m+1)*pl]
				for i := range row {
					row[i] = gxm[i*rows+r]
				}
			}
		}
	}
	wg, gw := e.c.w.GradData(), nodeData(grads[2])
	for m := range e.c.m {
		blk, out := gw[m*h*h:(m+1)*h*h], wg[m*h*h:(m+1)*h*h]
		for a := range h {
			for b := range h {
				out[a*h+b] += blk[b*h+a]
			}
		}
	}
	addTo(e.c.u.GradData(), nodeData(grads[3]))
	addTo(e.c.b.GradData(), nodeData(grads[4]))
}

// transpose writes the cols×rows transpose of the row-major rows×cols
// matrix src into dst.
func transpose(dst, src []float64, rows, cols int) {
	for r := range rows {
		for c, v := range src[r*cols : (r+1)*cols] {
			dst[c*rows+r] = v
		}
	}
}

// PatchPermutation returns the permutation that reorders a row-major
// side×side image into patch-major order for a Mixture cell with
// PatchLen = patch²: feature j of the reordered input is pixel perm[j], and
// term m reads the m-th patch×patch block (blocks in row-major order). It
// returns an error unless patch divides side.
//
// For 28×28 images and patch = 7 this gives 16 terms of 49 pixels:
//
//	for j, p := range perm { x[j] = img[p] }
func PatchPermutation(side, patch int) ([]int, error) {
	if side < 1 || patch < 1 || side%patch != 0 {
		return nil, fmt.Errorf("layers: PatchPermutation: patch = %d must divide side = %d", patch, side)
	}
	per := side / patch
	perm := make([]int, 0, side*side)
	for br := 0; br < per; br++ {
		for bc := 0; bc < per; bc++ {
			for r := 0; r < patch; r++ {
				for c := 0; c < patch; c++ {
					perm = append(perm, (br*patch+r)*side+bc*patch+c)
				}
			}
		}
	}
	return perm, nil
}
