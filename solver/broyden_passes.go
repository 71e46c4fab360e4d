package solver

import (
	"sync/atomic"

	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/internal/vec"
)

// broydenPasses are the vector passes of a Broyden iteration, fused so
// that each reads its vectors once, block by block (parBlock entries, the
// blocks of the parallel passes), while the block of the vectors it writes
// stays in cache:
//
//   - step: the next point x + s and sᵀs;
//   - dots: y = g_new − g, written over g, and the inner products of every
//     stored pair with the current vectors, vᵢ·y and uᵢ·s (and, when the
//     ring is full, that of the overwritten pair with g_new);
//   - combine: Hy = −y + Σ uᵢ(vᵢ·y), Hᵀs = −s + Σ vᵢ(uᵢ·s), the next step
//     s − Hy, and the inner products sᵀHy, (Hy)ᵀHy and (Hᵀs)ᵀg_new;
//   - pair: the new pair's u = (s − Hy)/sᵀHy with the finiteness test of u
//     and Hᵀs, and the next step's correction by the new and the
//     overwritten pair.
//
// Every entry gets the same operations in the same order as the pass over
// the whole vector would apply, and each inner product is the sum, in
// block order, of its partial sums over the blocks, so that the results do
// not depend on the number of workers. A pass over pairs reads each pair's
// vectors once instead of once per inner product and once per update, and
// takes them four at a time (dotsStrided, addScaledMany: the kernels of
// package internal/vec), so that the current vector's block is read once
// per four inner products and the updated one's read and written once per
// four updates.
type broydenPasses struct {
	n, nb  int
	us, vs [][]float64 // the ring of pairs

	// The vectors of the iteration in progress (see Broyden.Run).
	x, xn, s, g, tx, hy, v, sn, next []float64
	count                            int       // pairs stored
	oldU, oldV                       []float64 // the pair the new one overwrites; nil when the ring is not full

	// Per-block partial inner products: pair i's at [i*nb+b] of pa (vᵢ·y)
	// and pb (uᵢ·s); the others at [b].
	pa, pb                     []float64
	pss, pe, pden, phh, pf     []float64
	a, bs                      []float64 // the pairs' summed inner products
	inv, f, e                  float64   // the pair pass's coefficients
	bad                        atomic.Bool
	stepT, dotsT, combT, pairT broydenTask
}

// broydenTask is one of the passes of broydenPasses as a blockTask.
type broydenTask struct {
	p    *broydenPasses
	pass func(p *broydenPasses, b, lo, hi int)
}

func (t *broydenTask) block(b, lo, hi int) { t.pass(t.p, b, lo, hi) }

// newBroydenPasses returns the passes for vectors of length n and a ring
// of memory pairs, their scratch space taken from e's Workspace.
func newBroydenPasses(e *Env, n, memory int, us, vs [][]float64) *broydenPasses {
	nb := blocks(n)
	part := e.buffer((2*memory+5)*nb + 2*memory)
	p := &broydenPasses{n: n, nb: nb, us: us, vs: vs,
		a: part[:memory], bs: part[memory : 2*memory]}
	part = part[2*memory:]
	p.pa, p.pb = part[:memory*nb], part[memory*nb:2*memory*nb]
	rest := part[2*memory*nb:]
	p.pss, p.pe, p.pden, p.phh, p.pf = rest[:nb], rest[nb:2*nb], rest[2*nb:3*nb], rest[3*nb:4*nb], rest[4*nb:5*nb]
	p.stepT = broydenTask{p, (*broydenPasses).stepBlock}
	p.dotsT = broydenTask{p, (*broydenPasses).dotsBlock}
	p.combT = broydenTask{p, (*broydenPasses).combineBlock}
	p.pairT = broydenTask{p, (*broydenPasses).pairBlock}
	return p
}

// sum returns the sum of the partials in block order.
func sum(ps []float64) float64 {
	d := ps[0]
	for _, v := range ps[1:] {
		d += v
	}
	return d
}

// step sets xn = x + s and returns sᵀs.
func (p *broydenPasses) step(par *parallel, xn, x, s []float64) float64 {
	p.xn, p.x, p.s = xn, x, s
	par.run(p.n, &p.stepT)
	p.xn, p.x = nil, nil
	return sum(p.pss)
}

func (p *broydenPasses) stepBlock(b, lo, hi int) {
	s := p.s[lo:hi]
	floats.AddTo(p.xn[lo:hi], p.x[lo:hi], s)
	p.pss[b] = floats.Dot(s, s)
}

// dots overwrites g with y = tx − g and sets p.a[i] = vᵢ·y and
// p.bs[i] = uᵢ·s for the count stored pairs, and, when oldV is not nil,
// returns oldV·tx.
func (p *broydenPasses) dots(par *parallel, g, tx, s []float64, count int, oldV []float64) float64 {
	p.g, p.tx, p.s, p.count, p.oldV = g, tx, s, count, oldV
	par.run(p.n, &p.dotsT)
	nb := p.nb
	for i := range count {
		p.a[i] = sum(p.pa[i*nb : (i+1)*nb])
		p.bs[i] = sum(p.pb[i*nb : (i+1)*nb])
	}
	if oldV == nil {
		return 0
	}
	return sum(p.pe)
}

func (p *broydenPasses) dotsBlock(b, lo, hi int) {
	g, tx, s := p.g[lo:hi], p.tx[lo:hi], p.s[lo:hi]
	subInto(g, tx, g)
	dotsStrided(p.pa[b:], p.nb, p.vs[:p.count], lo, hi, g)
	dotsStrided(p.pb[b:], p.nb, p.us[:p.count], lo, hi, s)
	if p.oldV != nil {
		p.pe[b] = floats.Dot(p.oldV[lo:hi], tx)
	}
}

// combine sets hy = Hy = −y + Σ uᵢ aᵢ, v = Hᵀs = −s + Σ vᵢ bsᵢ and
// sn = s − Hy from the inner products of dots (y in g), and returns sᵀHy,
// (Hy)ᵀHy and vᵀtx.
func (p *broydenPasses) combine(par *parallel, hy, v, sn, g, s, tx []float64) (den, hh, f float64) {
	p.hy, p.v, p.sn, p.g, p.s, p.tx = hy, v, sn, g, s, tx
	par.run(p.n, &p.combT)
	return sum(p.pden), sum(p.phh), sum(p.pf)
}

func (p *broydenPasses) combineBlock(b, lo, hi int) {
	hy, v, sn, y, s := p.hy[lo:hi], p.v[lo:hi], p.sn[lo:hi], p.g[lo:hi], p.s[lo:hi]
	floats.ScaleTo(hy, -1, y)
	addScaledMany(hy, p.a, p.us[:p.count], lo, hi)
	floats.ScaleTo(v, -1, s)
	addScaledMany(v, p.bs, p.vs[:p.count], lo, hi)
	subInto(sn, s, hy)
	p.pden[b], p.phh[b] = vec.Dot2(s, hy, hy)
	p.pf[b] = floats.Dot(v, p.tx[lo:hi])
}

// pair overwrites s with u = sn·inv and sets next = sn − f·u + e·oldU
// (without the last term when oldU is nil), and reports whether u and v
// are finite.
func (p *broydenPasses) pair(par *parallel, s, sn, next, v []float64, inv, f, e float64, oldU []float64) bool {
	p.s, p.sn, p.next, p.v, p.inv, p.f, p.e, p.oldU = s, sn, next, v, inv, f, e, oldU
	p.bad.Store(false)
	par.run(p.n, &p.pairT)
	p.oldU = nil
	return !p.bad.Load()
}

func (p *broydenPasses) pairBlock(_, lo, hi int) {
	s, sn, next, v := p.s[lo:hi], p.sn[lo:hi], p.next[lo:hi], p.v[lo:hi]
	floats.ScaleTo(s, p.inv, sn)
	floats.AddScaledTo(next, sn, -p.f, s)
	if p.oldU != nil {
		floats.AddScaled(next, p.e, p.oldU[lo:hi])
	}
	if !numeric.AllFinite(s) || !numeric.AllFinite(v) {
		p.bad.Store(true)
	}
}
