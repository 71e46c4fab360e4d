package layers

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/deqgo/deq/internal/team"
	"github.com/deqgo/deq/layers/internal/conv"
	"github.com/deqgo/deq/solver"
)

// convEval evaluates a Conv cell on batches of n examples, split between
// the goroutines of a team.Team (one part per core, at most one per
// example). The convolutions run as shifted matrix products (see
// conv.Shifted) on whole-batch matrices that every part shares, each part
// writing only the columns of its own examples. All scratch is allocated
// here, or on the first VJP; the calls that follow allocate nothing.
type convEval struct {
	c    *Conv
	n    int
	x, u []float64 // input and injection (u aliases x without InputConv)
	hasX bool
	smp  *sampler
	norm groupNorm

	// The batch matrices and their products, in the cell's precision.
	mats convProducts

	// The forward pass of every example, k terms each: σ(pre) in act and,
	// with GroupNorm, the standardised σ(pre) in xhat and the groups'
	// 1/√(var + ε) in rstd (example b at b·M·C·HW, b·M·groups).
	act, xhat, rstd []float64
	// The point and parameters of the last VJP's forward pass, which the
	// next VJP at the same point reuses (as the adjoint solve of implicit
	// differentiation does at every iteration).
	last convKey

	team  *team.Team
	works []*convWork // one per part
	call  convCall    // the arguments of the running call
	part  func(part, lo, hi int)

	graph *convGraph // EvalGraph's graph, built on first use
}

// convKey identifies a forward pass: the state, the terms and the
// parameters it used.
type convKey struct {
	valid  bool
	z      []float64
	idx    []int
	k      int
	params []float64 // W, b, [scale, shift], concatenated
}

// convWork is the scratch of one part of a batch.
type convWork struct {
	col, dcol []float64 // 9C×HW columns of one input and their cotangent (InputConv only)
	out       []float64 // M·C×HW: N(σ(pre)) of one example (GroupNorm only)
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
	idx               []int // the terms (nil: all M)
	k                 int
	reuse             bool // the forward pass is the last one's
}

var (
	_ Evaluator    = (*convEval)(nil)
	_ solver.Exact = (*convEval)(nil)
)

// newConvEval returns an evaluator for n examples whose convolutions run
// in precision prec (the cell's, or Float64 for ReferenceEvaluator).
func newConvEval(c *Conv, n int, prec Precision) *convEval {
	img := c.c * c.hw
	e := &convEval{c: c, n: n, x: make([]float64, n*img), smp: newSampler()}
	e.u = e.x
	if c.inputConv {
		e.u = make([]float64, n*img)
	}
	if c.groups > 0 {
		e.norm = groupNorm{c: c.c, hw: c.hw, groups: c.groups}
	}
	if prec == Float32 {
		e.mats = newConvMats[float32](c, n)
	} else {
		e.mats = newConvMats[float64](c, n)
	}
	e.act = make([]float64, n*c.m*img)
	if c.groups > 0 {
		e.xhat = make([]float64, n*c.m*img)
		e.rstd = make([]float64, n*c.m*c.groups)
	}
	e.team = team.New(min(runtime.GOMAXPROCS(0), n))
	runtime.AddCleanup(e, (*team.Team).Close, e.team)
	r := c.geom.ColRows()
	for range e.team.Parts() {
		wk := &convWork{
			delta: make([]float64, c.m*img),
			du:    make([]float64, img),
		}
		if c.inputConv {
			wk.col = make([]float64, r*c.hw)
			wk.dcol = make([]float64, r*c.hw)
		}
		if c.groups > 0 {
			wk.out = make([]float64, c.m*img)
		}
		e.works = append(e.works, wk)
	}
	e.part = e.runPart
	return e
}

// vjpScratch allocates, on the first VJP, the scratch that only VJPs use.
func (e *convEval) vjpScratch(full bool) {
	c := e.c
	if e.last.z == nil {
		e.mats.vjpScratch()
		e.last.z = make([]float64, e.Len())
		e.last.idx = make([]int, 0, c.m)
		n := 0
		for _, q := range e.keyParams() {
			n += len(q)
		}
		e.last.params = make([]float64, n)
	}
	if !full || e.mats.hasGradScratch() {
		return
	}
	e.mats.gradScratch(len(e.works))
	for _, wk := range e.works[1:] {
		for _, q := range c.direct {
			wk.grads = append(wk.grads, make([]float64, len(q.Data())))
		}
	}
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
	e.last.valid = false
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

// forward computes the k terms of example b from the convolutions in
// e.mats: its part of e.act holds σ(pre) (of e.xhat and e.rstd, GroupNorm's
// statistics) and the returned slice (that part of e.act, or wk.out with
// GroupNorm) the terms' outputs. With one term and a non-nil dst (an
// evaluation, after which no VJP reuses the forward pass), the output goes
// to dst instead, and without GroupNorm σ(pre) is then not kept in e.act.
func (e *convEval) forward(wk *convWork, b int, idx []int, k int, dst []float64) []float64 {
	c := e.c
	img := c.c * c.hw
	act, xhat, rstd := e.example(b, k)
	if k > 1 {
		dst = nil
	}
	if dst != nil && c.groups == 0 {
		act = dst
	}
	e.mats.activate(c, act, e.u[b*img:(b+1)*img], b, idx, k)
	if c.groups == 0 {
		return act
	}
	out := wk.out[:k*img]
	if dst != nil {
		out = dst
	}
	for j := range k {
		s := j * img
		e.norm.forward(out[s:s+img], xhat[s:s+img], rstd[j*c.groups:(j+1)*c.groups],
			act[s:s+img], c.nscale.Data(), c.nshift.Data())
	}
	return out
}

// preAct writes σ(v + u + b) into dst for the entries v of src and u of us.
func preAct[T conv.Float](a Activation, dst []float64, src []T, us []float64, b float64) {
	src, us = src[:len(dst)], us[:len(dst)]
	switch a {
	case ReLU:
		for i, v := range src {
			dst[i] = max(float64(v)+us[i]+b, 0)
		}
	default:
		for i, v := range src {
			dst[i] = float64(v) + us[i] + b
		}
		a.apply(dst)
	}
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
func (e *convEval) backward(wk *convWork, b int, gb []float64, k int, dscale, dshift []float64) []float64 {
	c := e.c
	img := c.c * c.hw
	act, xhat, rstd := e.example(b, k)
	delta := wk.delta[:k*img]
	inv := 1 / float64(k)
	for j := range k {
		d := delta[j*img : (j+1)*img]
		for i, v := range gb {
			d[i] = v * inv
		}
		if c.groups > 0 {
			s := j * img
			e.norm.backward(d, d, xhat[s:s+img], rstd[j*c.groups:(j+1)*c.groups], c.nscale.Data(), dscale, dshift)
		}
	}
	c.act.backward(delta, act)
	return delta
}

// adjoint writes into dzb the transposed convolution Σ_j W_jᵀ∗δ_j of one
// example's stacked cotangents delta (rows channels in all) with the
// stacked OIHW kernels w, through im2col's adjoint.
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

// run repacks the kernels of call.idx and runs call on the batch, split
// between the team's parts.
func (e *convEval) run(call convCall) {
	if call.op != convOpEval {
		e.vjpScratch(call.op == convOpVJP)
	}
	call.k = e.mats.repack(e.c, call.idx)
	switch {
	case call.op == convOpEval:
		e.last.valid = false
	case e.reusable(call):
		call.reuse = true
	default:
		// Before the run, which may overwrite z when dst is z.
		e.remember(call)
	}
	e.call = call
	parts := e.team.Run(e.n, e.part)
	e.call = convCall{}
	if call.op != convOpVJP {
		return
	}
	for p := 1; p < parts; p++ {
		addPartGrads(e.c.direct, e.works[p].grads)
	}
	e.c.chainW()
}

// addPartGrads adds the gradients grads that a part of a team.Team
// accumulated (one per parameter of ps, in its order) into ps's and clears
// them.
func addPartGrads(ps []*Param, grads [][]float64) {
	for i, q := range ps {
		addTo(q.GradData(), grads[i])
		clear(grads[i])
	}
}

// runPart runs e.call on the examples [lo, hi) with the scratch of part p.
func (e *convEval) runPart(p, lo, hi int) {
	c := e.c
	call := &e.call
	wk := e.works[p]
	img := c.c * c.hw
	rows := call.k * c.c
	if !call.reuse {
		e.mats.forward(call.z, c.c, rows, lo, hi)
	}
	for b := lo; b < hi; b++ {
		switch call.op {
		case convOpEval:
			db := call.dst[b*img : (b+1)*img]
			if out := e.forward(wk, b, call.idx, call.k, db); call.k > 1 {
				average(db, out, call.k)
			}
		case convOpVJPHidden:
			if !call.reuse {
				e.forward(wk, b, call.idx, call.k, nil)
			}
			delta := e.backward(wk, b, call.g[b*img:(b+1)*img], call.k, nil, nil)
			e.mats.packDelta(delta, rows, b)
		case convOpVJP:
			if !call.reuse {
				e.forward(wk, b, call.idx, call.k, nil)
			}
			e.vjpExample(wk, p, b)
		}
	}
	dst := call.dst
	switch call.op {
	case convOpEval:
		return
	case convOpVJP:
		// dW += Σ_k δ·z_kᵀ over the part's examples, in W's OIHW order.
		e.mats.weightGrad(e.paramGrad(p, 0), p, rows, lo, hi)
		if call.dz == nil {
			return
		}
		dst = call.dz
	}
	e.mats.adjoint(dst, c.c, rows, lo, hi)
}

// example returns example b's part of e.act, e.xhat and e.rstd for k
// terms (xhat and rstd nil without GroupNorm).
func (e *convEval) example(b, k int) (act, xhat, rstd []float64) {
	c := e.c
	s, n := b*c.m*c.c*c.hw, k*c.c*c.hw
	act = e.act[s : s+n]
	if c.groups > 0 {
		xhat = e.xhat[s : s+n]
		g := b * c.m * c.groups
		rstd = e.rstd[g : g+k*c.groups]
	}
	return act, xhat, rstd
}

// keyParams returns the parameters a forward pass depends on besides the
// state and the injection: W, b and GroupNorm's scale and shift.
func (e *convEval) keyParams() [4][]float64 {
	c := e.c
	ps := [4][]float64{c.w.Data(), c.b.Data()}
	if c.groups > 0 {
		ps[2], ps[3] = c.nscale.Data(), c.nshift.Data()
	}
	return ps
}

// reusable reports whether the forward pass of the last VJP was at call's
// state, terms and parameters (and the injection has not changed since:
// SetInput forgets it), so that the packed state in e.mats, e.act, e.xhat
// and e.rstd hold call's forward pass.
func (e *convEval) reusable(call convCall) bool {
	l := &e.last
	if !l.valid || l.k != call.k || (call.idx == nil) != (len(l.idx) == 0) || !slices.Equal(l.idx, call.idx) {
		return false
	}
	at := 0
	for _, q := range e.keyParams() {
		if !slices.Equal(l.params[at:at+len(q)], q) {
			return false
		}
		at += len(q)
	}
	return slices.Equal(l.z, call.z)
}

// remember records call's state, terms and parameters as the last forward
// pass's.
func (e *convEval) remember(call convCall) {
	l := &e.last
	copy(l.z, call.z)
	l.idx = append(l.idx[:0], call.idx...)
	l.k = call.k
	at := 0
	for _, q := range e.keyParams() {
		at += copy(l.params[at:], q)
	}
	l.valid = true
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
// scratch of part p, except for W's gradient and the state's cotangent,
// which runPart computes for all its examples from the cotangents it
// packs into e.mats.
func (e *convEval) vjpExample(wk *convWork, p, b int) {
	c := e.c
	call := &e.call
	img := c.c * c.hw
	r := c.geom.ColRows()
	k := call.k
	// The order of paramGrad: W, [U], b, [scale, shift].
	iu, ib, is := -1, 1, 2
	if c.inputConv {
		iu, ib, is = 1, 2, 3
	}
	var dscale, dshift []float64
	if c.groups > 0 {
		dscale, dshift = e.paramGrad(p, is), e.paramGrad(p, is+1)
	}
	delta := e.backward(wk, b, call.g[b*img:(b+1)*img], k, dscale, dshift)
	e.mats.packDelta(delta, k*c.c, b)
	// db += Σ_pixels δ.
	db := e.paramGrad(p, ib)
	for i := range k * c.c {
		s := 0.0
		for _, v := range delta[i*c.hw : (i+1)*c.hw] {
			s += v
		}
		db[i] += s
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
