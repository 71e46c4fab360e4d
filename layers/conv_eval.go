package layers

import (
	"fmt"

	"github.com/deqgo/deq/internal/conv"
	"github.com/deqgo/deq/solver"
)

// convEval evaluates a Conv cell on batches of n examples. All scratch is
// allocated here, once; the calls that follow allocate nothing.
type convEval struct {
	c    *Conv
	n    int
	x, u []float64 // input and injection (u aliases x without InputConv)
	hasX bool
	smp  *sampler
	norm groupNorm

	col, dcol []float64 // 9C×HW columns of one image and their cotangent
	act       []float64 // M·C×HW: σ(pre) of every term of one example
	out       []float64 // M·C×HW: N(σ(pre)) (GroupNorm only)
	xhat      []float64 // M·C×HW: standardised σ(pre) (GroupNorm only)
	rstd      []float64 // M·groups
	delta     []float64 // M·C×HW: cotangent of the pre-activations
	du        []float64 // C×HW: cotangent of the injection (InputConv)
	wsel      []float64 // M·C×9C: the sampled kernels, gathered

	graph *convGraph // EvalGraph's graph, built on first use
}

var (
	_ Evaluator    = (*convEval)(nil)
	_ solver.Exact = (*convEval)(nil)
)

func newConvEval(c *Conv, n int) *convEval {
	img := c.c * c.hw
	r := c.geom.ColRows()
	e := &convEval{
		c: c, n: n,
		x:     make([]float64, n*img),
		smp:   newSampler(),
		col:   make([]float64, r*c.hw),
		dcol:  make([]float64, r*c.hw),
		act:   make([]float64, c.m*img),
		delta: make([]float64, c.m*img),
	}
	e.u = e.x
	if c.inputConv {
		e.u = make([]float64, n*img)
		e.du = make([]float64, img)
	}
	if c.groups > 0 {
		e.norm = groupNorm{c: c.c, hw: c.hw, groups: c.groups}
		e.out = make([]float64, c.m*img)
		e.xhat = make([]float64, c.m*img)
		e.rstd = make([]float64, c.m*c.groups)
	}
	if c.m > 1 {
		e.wsel = make([]float64, len(c.w.Data()))
	}
	return e
}

func (e *convEval) Len() int      { return e.n * e.c.c * e.c.hw }
func (e *convEval) Examples() int { return e.n }
func (e *convEval) Terms() int    { return e.c.m }

// Model is Deterministic for one kernel; for M > 1 kernels it is
// SamplewiseLipschitz without GroupNorm (every term is γ̄-Lipschitz after
// Project) and BoundedVariance with it.
func (e *convEval) Model() solver.Model {
	switch {
	case e.c.m == 1:
		return solver.Deterministic
	case e.c.groups > 0:
		return solver.BoundedVariance
	}
	return solver.SamplewiseLipschitz
}

func (e *convEval) SetInput(x []float64) error {
	checkLen("input", len(x), len(e.x))
	copy(e.x, x)
	if e.c.inputConv {
		img := e.c.c * e.c.hw
		for b := range e.n {
			e.c.geom.Im2Col(e.col, e.x[b*img:(b+1)*img])
			e.gemmW(e.u[b*img:(b+1)*img], e.c.u.Data(), e.c.c, e.col)
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
// stacked kernels w: e.act holds σ(pre) and the returned slice (e.act, or
// e.out with GroupNorm) the terms' outputs. It leaves zb's columns in e.col.
func (e *convEval) forward(zb []float64, b int, w []float64, idx []int, k int) []float64 {
	c := e.c
	img := c.c * c.hw
	c.geom.Im2Col(e.col, zb)
	act := e.act[:k*img]
	e.gemmW(act, w, k*c.c, e.col)
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
	out := e.out[:k*img]
	for j := range k {
		s := j * img
		e.norm.forward(out[s:s+img], e.xhat[s:s+img], e.rstd[j*c.groups:(j+1)*c.groups],
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
// (after forward) into the pre-activation cotangents e.delta, adding the
// GroupNorm parameters' gradients when params is set.
func (e *convEval) backward(gb []float64, k int, params bool) []float64 {
	c := e.c
	img := c.c * c.hw
	delta := e.delta[:k*img]
	inv := 1 / float64(k)
	for j := range k {
		d := delta[j*img : (j+1)*img]
		for i, v := range gb {
			d[i] = v * inv
		}
		if c.groups > 0 {
			var ds, dt []float64
			if params {
				ds, dt = c.nscale.GradData(), c.nshift.GradData()
			}
			s := j * img
			e.norm.backward(d, d, e.xhat[s:s+img], e.rstd[j*c.groups:(j+1)*c.groups], c.nscale.Data(), ds, dt)
		}
	}
	activationGrad(c.act, delta, e.act[:k*img])
	return delta
}

// adjoint writes into dzb the transposed convolution Σ_j W_jᵀ∗δ_j of the
// stacked cotangents delta with the stacked kernels w.
func (e *convEval) adjoint(dzb, w, delta []float64, rows int) {
	r := e.c.geom.ColRows()
	conv.Gemm(true, false, r, e.c.hw, rows, 1, w, r, delta, e.c.hw, 0, e.dcol, e.c.hw)
	clear(dzb)
	e.c.geom.Col2ImAdd(dzb, e.dcol)
}

func (e *convEval) Eval(dst, z []float64, s solver.Sample) (int, error) {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	if err := e.ready(); err != nil {
		return 0, err
	}
	idx, k, err := e.smp.terms(s, e.c.m)
	if err != nil {
		return 0, err
	}
	e.eval(dst, z, idx, k)
	return k, nil
}

// EvalExact computes f(z, x), the average over all M kernels.
func (e *convEval) EvalExact(dst, z []float64) error {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	if err := e.ready(); err != nil {
		return err
	}
	e.eval(dst, z, nil, e.c.m)
	return nil
}

func (e *convEval) eval(dst, z []float64, idx []int, k int) {
	img := e.c.c * e.c.hw
	w, k := e.kernels(idx)
	for b := range e.n {
		out := e.forward(z[b*img:(b+1)*img], b, w, idx, k)
		average(dst[b*img:(b+1)*img], out, k)
	}
}

func (e *convEval) VJPHidden(dst, z, g []float64, s solver.Sample) (int, error) {
	checkLen("dst", len(dst), e.Len())
	checkLen("z", len(z), e.Len())
	checkLen("g", len(g), e.Len())
	if err := e.ready(); err != nil {
		return 0, err
	}
	idx, k, err := e.smp.terms(s, e.c.m)
	if err != nil {
		return 0, err
	}
	img := e.c.c * e.c.hw
	w, k := e.kernels(idx)
	for b := range e.n {
		e.forward(z[b*img:(b+1)*img], b, w, idx, k)
		delta := e.backward(g[b*img:(b+1)*img], k, false)
		e.adjoint(dst[b*img:(b+1)*img], w, delta, k*e.c.c)
	}
	return k, nil
}

func (e *convEval) VJP(dz, dx, z, g []float64) error {
	checkVJP(e.Len(), len(e.x), dz, dx, z, g)
	if err := e.ready(); err != nil {
		return err
	}
	c := e.c
	img := c.c * c.hw
	r := c.geom.ColRows()
	w, k := c.w.Data(), c.m
	dw, db := c.w.GradData(), c.b.GradData()
	for b := range e.n {
		e.forward(z[b*img:(b+1)*img], b, w, nil, k)
		delta := e.backward(g[b*img:(b+1)*img], k, true)
		// dW += δ·colᵀ (all kernels at once), db += Σ_pixels δ.
		conv.Gemm(false, true, k*c.c, r, c.hw, 1, delta, c.hw, e.col, c.hw, 1, dw, r)
		for i := range k * c.c {
			s := 0.0
			for _, v := range delta[i*c.hw : (i+1)*c.hw] {
				s += v
			}
			db[i] += s
		}
		if dz != nil {
			e.adjoint(dz[b*img:(b+1)*img], w, delta, k*c.c)
		}
		// The injection's cotangent is Σ_m δ_m.
		du := delta[:img]
		if k > 1 || c.inputConv {
			du = e.duBuf(delta[:img])
			for j := 1; j < k; j++ {
				addTo(du, delta[j*img:(j+1)*img])
			}
		}
		if !c.inputConv {
			if dx != nil {
				copy(dx[b*img:(b+1)*img], du)
			}
			continue
		}
		c.geom.Im2Col(e.col, e.x[b*img:(b+1)*img])
		conv.Gemm(false, true, c.c, r, c.hw, 1, du, c.hw, e.col, c.hw, 1, c.u.GradData(), r)
		if dx != nil {
			e.adjoint(dx[b*img:(b+1)*img], c.u.Data(), du, c.c)
		}
	}
	return nil
}

// duBuf returns a scratch image holding a copy of first: e.du with
// InputConv, else the first image of e.out or e.dcol's head (free here).
func (e *convEval) duBuf(first []float64) []float64 {
	buf := e.du
	if buf == nil {
		buf = e.dcol[:len(first)]
	}
	copy(buf, first)
	return buf
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
