package layers

import (
	"fmt"
	"runtime"

	"github.com/deqgo/deq/internal/conv"
	"github.com/deqgo/deq/solver"
)

// convEval evaluates a Conv cell on batches of n examples, split between
// the goroutines of a conv.Team (one part per core, at most one per
// example). All scratch is allocated here, once; the calls that follow
// allocate nothing.
type convEval struct {
	c    *Conv
	n    int
	x, u []float64 // input and injection (u aliases x without InputConv)
	hasX bool
	smp  *sampler
	norm groupNorm
	wsel []float64 // M·C×9C: the sampled kernels, gathered

	team  *conv.Team
	works []*convWork // one per part
	call  convCall    // the arguments of the running call
	part  func(part, lo, hi int)

	graph *convGraph // EvalGraph's graph, built on first use
}

// convWork is the scratch of one part of a batch.
type convWork struct {
	col, dcol []float64 // 9C×HW columns of one image and their cotangent
	act       []float64 // M·C×HW: σ(pre) of every term of one example
	out       []float64 // M·C×HW: N(σ(pre)) (GroupNorm only)
	xhat      []float64 // M·C×HW: standardised σ(pre) (GroupNorm only)
	rstd      []float64 // M·groups
	delta     []float64 // M·C×HW: cotangent of the pre-activations
	du        []float64 // C×HW: cotangent of the injection
	// Parameter gradients of parts other than 0 (part 0 adds into the
	// parameters directly), in Params order.
	grads [][]float64
}

// Operations of a convCall.
const (
	convOpEval = iota
	convOpVJPHidden
	convOpVJP
)

// convCall holds the arguments of the call that the parts run.
type convCall struct {
	op                int
	dst, z, g, dz, dx []float64
	w                 []float64 // stacked kernels of the terms
	idx               []int     // the terms (nil: all M)
	k                 int
}

var (
	_ Evaluator    = (*convEval)(nil)
	_ solver.Exact = (*convEval)(nil)
)

func newConvEval(c *Conv, n int) *convEval {
	img := c.c * c.hw
	e := &convEval{c: c, n: n, x: make([]float64, n*img), smp: newSampler()}
	e.u = e.x
	if c.inputConv {
		e.u = make([]float64, n*img)
	}
	if c.groups > 0 {
		e.norm = groupNorm{c: c.c, hw: c.hw, groups: c.groups}
	}
	if c.m > 1 {
		e.wsel = make([]float64, len(c.w.Data()))
	}
	e.team = conv.NewTeam(min(runtime.GOMAXPROCS(0), n))
	runtime.AddCleanup(e, (*conv.Team).Close, e.team)
	r := c.geom.ColRows()
	for p := range e.team.Parts() {
		wk := &convWork{
			col:   make([]float64, r*c.hw),
			dcol:  make([]float64, r*c.hw),
			act:   make([]float64, c.m*img),
			delta: make([]float64, c.m*img),
			du:    make([]float64, img),
		}
		if c.groups > 0 {
			wk.out = make([]float64, c.m*img)
			wk.xhat = make([]float64, c.m*img)
			wk.rstd = make([]float64, c.m*c.groups)
		}
		if p > 0 {
			for _, q := range c.direct {
				wk.grads = append(wk.grads, make([]float64, len(q.Data())))
			}
		}
		e.works = append(e.works, wk)
	}
	e.part = e.runPart
	return e
}

func (e *convEval) Len() int      { return e.n * e.c.c * e.c.hw }
func (e *convEval) Examples() int { return e.n }
func (e *convEval) Terms() int    { return e.c.m }

// Model is Deterministic for one kernel; for M > 1 kernels it is
// SamplewiseLipschitz without GroupNorm and WeightNorm (every term is
// γ̄-Lipschitz after Project) and BoundedVariance with either.
func (e *convEval) Model() solver.Model {
	switch {
	case e.c.m == 1:
		return solver.Deterministic
	case e.c.groups > 0 || e.c.rp != nil:
		return solver.BoundedVariance
	}
	return solver.SamplewiseLipschitz
}

func (e *convEval) SetInput(x []float64) error {
	checkLen("input", len(x), len(e.x))
	// Under WeightNorm W follows V and g.
	if err := e.c.syncW(); err != nil {
		return err
	}
	copy(e.x, x)
	if e.c.inputConv {
		img := e.c.c * e.c.hw
		col := e.works[0].col
		for b := range e.n {
			e.c.geom.Im2Col(col, e.x[b*img:(b+1)*img])
			e.gemmW(e.u[b*img:(b+1)*img], e.c.u.Data(), e.c.c, col)
		}
	}
	e.hasX = true
	return nil
}

func (e *convEval) ready() error {
	if !e.hasX {
		return fmt.Errorf("layers: Conv evaluator: SetInput has not been called")
	}
	return nil
}

// gemmW writes w·col into dst: rows×(9C) kernels times the 9C×HW columns.
func (e *convEval) gemmW(dst, w []float64, rows int, col []float64) {
	r := e.c.geom.ColRows()
	conv.Gemm(false, false, rows, e.c.hw, r, 1, w, r, col, e.c.hw, 0, dst, e.c.hw)
}

// kernels returns the kernels of the terms idx (all M when idx is nil),
// stacked, and their number.
func (e *convEval) kernels(idx []int) ([]float64, int) {
	if idx == nil {
		return e.c.w.Data(), e.c.m
	}
	sz := e.c.c * e.c.geom.ColRows()
	for j, m := range idx {
		copy(e.wsel[j*sz:(j+1)*sz], e.c.kernel(m))
	}
	return e.wsel[:len(idx)*sz], len(idx)
}

// forward computes the k terms of example b at its state zb with the
// stacked kernels w: wk.act holds σ(pre) and the returned slice (wk.act, or
// wk.out with GroupNorm) the terms' outputs. It leaves zb's columns in
// wk.col.
func (e *convEval) forward(wk *convWork, zb []float64, b int, w []float64, idx []int, k int) []float64 {
	c := e.c
	img := c.c * c.hw
	c.geom.Im2Col(wk.col, zb)
	act := wk.act[:k*img]
	e.gemmW(act, w, k*c.c, wk.col)
	ub := e.u[b*img : (b+1)*img]
	bias := c.b.Data()
	for j := range k {
		m := j
		if idx != nil {
			m = idx[j]
		}
		for ch := range c.c {
			bc := bias[m*c.c+ch]
			row := act[j*img+ch*c.hw : j*img+(ch+1)*c.hw]
			us := ub[ch*c.hw : (ch+1)*c.hw]
			for i := range row {
				row[i] += us[i] + bc
			}
		}
	}
	c.act.apply(act)
	if c.groups == 0 {
		return act
	}
	out := wk.out[:k*img]
	for j := range k {
		s := j * img
		e.norm.forward(out[s:s+img], wk.xhat[s:s+img], wk.rstd[j*c.groups:(j+1)*c.groups],
			act[s:s+img], c.nscale.Data(), c.nshift.Data())
	}
	return out
}

// average writes the mean of the k images in terms into dst.
func average(dst, terms []float64, k int) {
	n := len(dst)
	copy(dst, terms[:n])
	for j := 1; j < k; j++ {
		addTo(dst, terms[j*n:(j+1)*n])
	}
	if k > 1 {
		scale(dst, 1/float64(k))
	}
}

// backward turns the cotangent g/k of each of the k terms of one example
// (after forward) into the pre-activation cotangents wk.delta, adding the
// GroupNorm parameters' gradients into dscale and dshift unless nil.
func (e *convEval) backward(wk *convWork, gb []float64, k int, dscale, dshift []float64) []float64 {
	c := e.c
	img := c.c * c.hw
	delta := wk.delta[:k*img]
	inv := 1 / float64(k)
	for j := range k {
		d := delta[j*img : (j+1)*img]
		for i, v := range gb {
			d[i] = v * inv
		}
		if c.groups > 0 {
			s := j * img
			e.norm.backward(d, d, wk.xhat[s:s+img], wk.rstd[j*c.groups:(j+1)*c.groups], c.nscale.Data(), dscale, dshift)
		}
	}
	activationGrad(c.act, delta, wk.act[:k*img])
	return delta
}

// adjoint writes into dzb the transposed convolution Σ_j W_jᵀ∗δ_j of the
// stacked cotangents delta (rows channels in all) with the stacked kernels
// w.
func (e *convEval) adjoint(wk *convWork, dzb, w, delta []float64, rows int) {
	r := e.c.geom.ColRows()
	conv.Gemm(true, false, r, e.c.hw, rows, 1, w, r, delta, e.c.hw, 0, wk.dcol, e.c.hw)
	clear(dzb)
	e.c.geom.Col2ImAdd(dzb, wk.dcol)
}

func (e *convEval) Eval(dst, z []float64, s solver.Sample) (int, error) {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	return e.runSampled(convCall{op: convOpEval, dst: dst, z: z}, s)
}

// runSampled runs call on the kernels drawn for s and returns their number.
func (e *convEval) runSampled(call convCall, s solver.Sample) (int, error) {
	if err := e.ready(); err != nil {
		return 0, err
	}
	idx, k, err := e.smp.terms(s, e.c.m)
	if err != nil {
		return 0, err
	}
	call.idx = idx
	e.run(call)
	return k, nil
}

// EvalExact computes f(z, x), the average over all M kernels.
func (e *convEval) EvalExact(dst, z []float64) error {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	if err := e.ready(); err != nil {
		return err
	}
	e.run(convCall{op: convOpEval, dst: dst, z: z})
	return nil
}

// run gathers the kernels of call.idx and runs call on the batch, split
// between the team's parts.
func (e *convEval) run(call convCall) {
	call.w, call.k = e.kernels(call.idx)
	e.call = call
	parts := e.team.Run(e.n, e.part)
	e.call = convCall{}
	if call.op != convOpVJP {
		return
	}
	for p := 1; p < parts; p++ {
		for i, q := range e.c.direct {
			g := e.works[p].grads[i]
			addTo(q.GradData(), g)
			clear(g)
		}
	}
	e.c.chainW()
}

// runPart runs e.call on the examples [lo, hi) with the scratch of part p.
func (e *convEval) runPart(p, lo, hi int) {
	c := e.c
	call := &e.call
	wk := e.works[p]
	img := c.c * c.hw
	for b := lo; b < hi; b++ {
		zb := call.z[b*img : (b+1)*img]
		out := e.forward(wk, zb, b, call.w, call.idx, call.k)
		switch call.op {
		case convOpEval:
			average(call.dst[b*img:(b+1)*img], out, call.k)
		case convOpVJPHidden:
			delta := e.backward(wk, call.g[b*img:(b+1)*img], call.k, nil, nil)
			e.adjoint(wk, call.dst[b*img:(b+1)*img], call.w, delta, call.k*c.c)
		case convOpVJP:
			e.vjpExample(wk, p, b)
		}
	}
}

// paramGrad returns the gradient slice that part p adds into of parameter
// i of W, [U], b, [scale, shift] (Params order under Projection; under
// WeightNorm W's gradient is chained into V and g after the parts ran).
func (e *convEval) paramGrad(p, i int) []float64 {
	if p == 0 {
		return e.c.direct[i].GradData()
	}
	return e.works[p].grads[i]
}

// vjpExample runs the exact VJP of example b (after forward) with the
// scratch of part p.
func (e *convEval) vjpExample(wk *convWork, p, b int) {
	c := e.c
	call := &e.call
	img := c.c * c.hw
	r := c.geom.ColRows()
	k := call.k
	// The order of paramGrad: W, [U], b, [scale, shift].
	iw, iu, ib, is := 0, -1, 1, 2
	if c.inputConv {
		iu, ib, is = 1, 2, 3
	}
	var dscale, dshift []float64
	if c.groups > 0 {
		dscale, dshift = e.paramGrad(p, is), e.paramGrad(p, is+1)
	}
	delta := e.backward(wk, call.g[b*img:(b+1)*img], k, dscale, dshift)
	// dW += δ·colᵀ (all kernels at once), db += Σ_pixels δ.
	conv.Gemm(false, true, k*c.c, r, c.hw, 1, delta, c.hw, wk.col, c.hw, 1, e.paramGrad(p, iw), r)
	db := e.paramGrad(p, ib)
	for i := range k * c.c {
		s := 0.0
		for _, v := range delta[i*c.hw : (i+1)*c.hw] {
			s += v
		}
		db[i] += s
	}
	if call.dz != nil {
		e.adjoint(wk, call.dz[b*img:(b+1)*img], call.w, delta, k*c.c)
	}
	// The injection's cotangent is Σ_m δ_m.
	du := wk.du
	copy(du, delta[:img])
	for j := 1; j < k; j++ {
		addTo(du, delta[j*img:(j+1)*img])
	}
	if !c.inputConv {
		if call.dx != nil {
			copy(call.dx[b*img:(b+1)*img], du)
		}
		return
	}
	c.geom.Im2Col(wk.col, e.x[b*img:(b+1)*img])
	conv.Gemm(false, true, c.c, r, c.hw, 1, du, c.hw, wk.col, c.hw, 1, e.paramGrad(p, iu), r)
	if call.dx != nil {
		e.adjoint(wk, call.dx[b*img:(b+1)*img], c.u.Data(), du, c.c)
	}
}

func (e *convEval) VJPHidden(dst, z, g []float64, s solver.Sample) (int, error) {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	checkLen("g", len(g), e.Len())
	return e.runSampled(convCall{op: convOpVJPHidden, dst: dst, z: z, g: g}, s)
}

func (e *convEval) VJP(dz, dx, z, g []float64) error {
	checkVJP(e.Len(), len(e.x), dz, dx, z, g)
	if err := e.ready(); err != nil {
		return err
	}
	e.run(convCall{op: convOpVJP, dz: dz, dx: dx, z: z, g: g})
	return nil
}

func (e *convEval) EvalGraph(dst, z []float64) error {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	if err := e.ready(); err != nil {
		return err
	}
	if e.graph == nil {
		g, err := e.c.newGraph(e.n)
		if err != nil {
			return err
		}
		e.graph = g
	}
	copy(e.graph.z, z)
	copy(e.graph.x, e.x)
	if err := e.graph.fwd.run(); err != nil {
		return err
	}
	copy(dst, nodeData(e.graph.out))
	return nil
}

// activationGrad multiplies d by σ'(pre), given out = σ(pre): the indicator
// of out > 0 for ReLU, 1 − out² for tanh.
func activationGrad(a Activation, d, out []float64) {
	switch a {
	case ReLU:
		for i, v := range out {
			if v <= 0 {
				d[i] = 0
			}
		}
	case Tanh:
		for i, v := range out {
			d[i] *= 1 - v*v
		}
	}
}
