package layers

import (
	"runtime"

	"gonum.org/v1/gonum/blas"

	"github.com/deqgo/deq/internal/f32"
	"github.com/deqgo/deq/internal/team"
)

// denseSplitMin is the smallest number of multiply–adds of a Float32 Dense
// evaluator's hidden product (rows·Hidden²) for which its forward
// evaluations and hidden VJPs split the batch's rows between goroutines,
// one part per core (see dense32.team).
const denseSplitMin = 1 << 20

// denseCall holds the arguments of the row-split call in progress, which
// the parts of dense32.team read.
type denseCall struct {
	dst []float64
	z   []float64 // eval32's state z, or hidden32's derivative σ′(zW + c)
	g   []float64 // hidden32's cotangent
	w   []float32 // W's float32 mirror
}

// newDenseTeam starts the team that splits the rows of a Float32 evaluator
// of rows×hidden states, or returns nil when the products are too small
// (denseSplitMin) or one core is all there is.
func newDenseTeam(rows, hidden int) *team.Team {
	parts := min(runtime.GOMAXPROCS(0), rows)
	if parts < 2 || rows*hidden*hidden < denseSplitMin {
		return nil
	}
	return team.New(parts)
}

// splitRows calls part(lo, hi) for consecutive ranges of the evaluator's
// rows covering them all, on the team's goroutines if it has a team and in
// one call otherwise.
func (e *denseEval) splitRows(part func(p, lo, hi int)) {
	if t := e.f32.team; t != nil {
		t.Run(e.rows, part)
		return
	}
	part(0, 0, e.rows)
}

// eval32 is EvalExact under Float32: σ(zW + c), the product rounded to
// float32, split by rows.
func (e *denseEval) eval32(dst, z []float64) {
	f := e.f32
	e.runSplit(denseCall{dst: dst, z: z, w: f.w.Of(e.c.w.Data())}, &f.z, f.evalPart)
}

// evalPart is eval32 on the rows [lo, hi).
func (e *denseEval) evalPart(_, lo, hi int) {
	f, h := e.f32, e.c.shape.Hidden
	a, b := lo*h, hi*h
	z32, out, dst := f.z[a:b], f.out[a:b], f.call.dst[a:b]
	f32.Convert(z32, f.call.z[a:b])
	f32.Gemm(blas.NoTrans, blas.NoTrans, hi-lo, h, h, z32, f.call.w, 0, out)
	for i, c := range e.cst[a:b] {
		dst[i] = c + float64(out[i])
	}
	e.c.act.apply(dst)
}

// hidden32 is fusedHidden under Float32: dst = (g ⊙ σ′(zW + c))Wᵀ, the
// product rounded to float32, split by rows; deriv is σ′(zW + c).
func (e *denseEval) hidden32(dst, g, deriv []float64) {
	f := e.f32
	e.runSplit(denseCall{dst: dst, z: deriv, g: g, w: f.w.Of(e.c.w.Data())}, &f.d, f.hiddenPart)
}

// runSplit runs part over the rows with call's arguments, after sizing
// the float32 operand in and the product's scratch to call.dst.
func (e *denseEval) runSplit(call denseCall, in *[]float32, part func(p, lo, hi int)) {
	f := e.f32
	f.call = call
	f32.Scratch(in, len(call.dst))
	f32.Scratch(&f.out, len(call.dst))
	e.splitRows(part)
	f.call = denseCall{}
}

// hiddenPart is hidden32 on the rows [lo, hi).
func (e *denseEval) hiddenPart(_, lo, hi int) {
	f, h := e.f32, e.c.shape.Hidden
	a, b := lo*h, hi*h
	d, out, deriv := f.d[a:b], f.out[a:b], f.call.z[a:b]
	for i, v := range f.call.g[a:b] {
		d[i] = float32(v * deriv[i])
	}
	f32.Gemm(blas.NoTrans, blas.Trans, hi-lo, h, h, d, f.call.w, 0, out)
	f32.Convert(f.call.dst[a:b], out)
}
