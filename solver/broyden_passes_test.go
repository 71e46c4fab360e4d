package solver

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/internal/vec"
)

// broydenVectors holds the vectors of one Broyden iteration's vector work:
// the inputs (x, s, g, tx and a ring of pairs) and the outputs.
type broydenVectors struct {
	x, xn, s, g, tx, hy, v, sn, next []float64
	us, vs                           [][]float64
	count, head                      int
	a                                []float64 // the reference's scratch
}

// newBroydenVectors returns random vectors of length n with count pairs
// stored in a full ring of count slots (so that the new pair overwrites
// the oldest, the costliest case), head at slot head.
func newBroydenVectors(n, count, head int, seed uint64) *broydenVectors {
	rng := rand.New(rand.NewPCG(seed, 9))
	v := &broydenVectors{count: count, head: head}
	for _, p := range []*[]float64{&v.x, &v.s, &v.g, &v.tx} {
		*p = randVec(rng, n)
	}
	for _, p := range []*[]float64{&v.xn, &v.hy, &v.v, &v.sn, &v.next} {
		*p = make([]float64, n)
	}
	for range count {
		u, w := randVec(rng, n), randVec(rng, n)
		floats.Scale(1/math.Sqrt(float64(n)), u) // keep Hy of the size of y
		floats.Scale(1/math.Sqrt(float64(n)), w)
		v.us, v.vs = append(v.us, u), append(v.vs, w)
	}
	return v
}

func (v *broydenVectors) clone() *broydenVectors {
	c := *v
	for _, p := range []*[]float64{&c.x, &c.xn, &c.s, &c.g, &c.tx, &c.hy, &c.v, &c.sn, &c.next} {
		*p = append([]float64(nil), *p...)
	}
	c.us, c.vs = nil, nil
	for i := range v.us {
		c.us = append(c.us, append([]float64(nil), v.us[i]...))
		c.vs = append(c.vs, append([]float64(nil), v.vs[i]...))
	}
	return &c
}

// broydenReference is Broyden's per-iteration vector work as separate
// passes over whole vectors, one per operation (the inner products and
// updates with the stored pairs grouped four at a time, as the fused
// passes group them, with the same kernels), the unfused form of
// broydenPasses, to test and benchmark the fused passes against.
// It returns sᵀs, sᵀHy, (Hy)ᵀHy and whether the pair was taken; the
// corrected next step is in sn and the new u in s.
func broydenReference(v *broydenVectors) (ss, den, hh float64, took bool) {
	floats.AddTo(v.xn, v.x, v.s)
	ss = floats.Dot(v.s, v.s)
	for i, t := range v.tx {
		y := t - v.g[i]
		v.g[i], v.hy[i] = y, -y
	}
	n := len(v.g)
	if len(v.a) < v.count {
		v.a = make([]float64, v.count)
	}
	a := v.a[:v.count]
	dotsStrided(a, 1, v.vs[:v.count], 0, n, v.g)
	addScaledMany(v.hy, a, v.us[:v.count], 0, n)
	for i, si := range v.s {
		v.sn[i] = si - v.hy[i]
	}
	den, hh = vec.Dot2(v.s, v.hy, v.hy)
	if !(math.Abs(den) > broydenDenTol*math.Sqrt(ss)*math.Sqrt(hh)) {
		return ss, den, hh, false
	}
	for i, si := range v.s {
		v.v[i] = -si
	}
	dotsStrided(a, 1, v.us[:v.count], 0, n, v.s)
	addScaledMany(v.v, a, v.vs[:v.count], 0, n)
	inv := 1 / den
	for i := range v.s {
		v.s[i] = v.sn[i] * inv
	}
	// The new pair (s, v) and the one it overwrites, us[head], vs[head].
	floats.AddScaled(v.sn, -floats.Dot(v.v, v.tx), v.s)
	floats.AddScaled(v.sn, floats.Dot(v.vs[v.head], v.tx), v.us[v.head])
	return ss, den, hh, true
}

// broydenFused is broydenReference by the fused passes, with the
// corrected next step in next.
func broydenFused(ps *broydenPasses, par *parallel, v *broydenVectors) (ss, den, hh float64, took bool) {
	ss = ps.step(par, v.xn, v.x, v.s)
	e := ps.dots(par, v.g, v.tx, v.s, v.count, v.vs[v.head])
	den, hh, f := ps.combine(par, v.hy, v.v, v.sn, v.g, v.s, v.tx)
	if !(math.Abs(den) > broydenDenTol*math.Sqrt(ss)*math.Sqrt(hh)) {
		return ss, den, hh, false
	}
	return ss, den, hh, ps.pair(par, v.s, v.sn, v.next, v.v, 1/den, f, e, v.us[v.head])
}

// newTestPasses returns the fused passes for v with a parallel of the
// given workers.
func newTestPasses(v *broydenVectors, workers int) (*broydenPasses, *parallel) {
	n := len(v.x)
	e := &Env{ws: new(Workspace)}
	return newBroydenPasses(e, n, v.count, v.us, v.vs), &parallel{workers: workers}
}

// TestBroydenPassesMatchReference: the fused passes compute what the
// separate passes compute, bit for bit on vectors of one block (the same
// kernels on the same vectors) and up to the reassociation of the inner
// products' block sums on longer ones, whatever the number of workers.
func TestBroydenPassesMatchReference(t *testing.T) {
	for _, n := range []int{1, 7, parBlock, parBlock + 1, 3*parBlock + 5} {
		for _, count := range []int{1, 3, 8} {
			for _, workers := range []int{1, 2} {
				name := fmt.Sprintf("n=%d/pairs=%d/workers=%d", n, count, workers)
				in := newBroydenVectors(n, count, count/2, uint64(n*31+count))
				ref, got := in.clone(), in.clone()
				ssR, denR, hhR, tookR := broydenReference(ref)
				ps, par := newTestPasses(got, workers)
				ss, den, hh, took := broydenFused(ps, par, got)
				par.stop()
				require.True(t, tookR, name)
				require.Equal(t, tookR, took, name)
				if n <= parBlock {
					require.Equal(t, bitsOf([]float64{ssR, denR, hhR}), bitsOf([]float64{ss, den, hh}), name)
					for _, p := range [][2][]float64{{ref.xn, got.xn}, {ref.g, got.g}, {ref.hy, got.hy}, {ref.v, got.v}, {ref.s, got.s}, {ref.sn, got.next}} {
						require.Equal(t, bitsOf(p[0]), bitsOf(p[1]), name)
					}
					continue
				}
				// Longer vectors: the block sums reassociate the inner
				// products, whose relative error is then at most of the
				// order of n·ε times the sum of the products' magnitudes.
				tol := 4 * float64(n) * 0x1p-52
				require.InEpsilon(t, ssR, ss, tol, name)
				require.InDelta(t, denR, den, tol*math.Sqrt(ssR*hhR), name)
				require.InEpsilon(t, hhR, hh, tol, name)
				require.Equal(t, bitsOf(ref.xn), bitsOf(got.xn), name)
				require.Equal(t, bitsOf(ref.g), bitsOf(got.g), name)
				for _, p := range [][2][]float64{{ref.hy, got.hy}, {ref.v, got.v}, {ref.s, got.s}, {ref.sn, got.next}} {
					scale := floats.Norm(p[0], math.Inf(1))
					for i := range p[0] {
						require.InDelta(t, p[0][i], p[1][i], 64*tol*scale, "%s entry %d", name, i)
					}
				}
			}
		}
	}
}

// reportCPU reports the process's CPU time per operation since cpu (a
// processCPU reading) as cpu-ns/op: on a machine shared with other work it
// is less disturbed than the wall time of ns/op, which also counts the
// time spent waiting for a core; with several workers it sums their time.
func reportCPU(b *testing.B, cpu time.Duration) {
	if cpu == 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// benchBroydenStep measures one iteration's vector work of Broyden with
// 10 pairs stored in a full ring on vectors of length n: the separate
// passes ("separate", broydenReference) against the fused ones ("fused",
// serial, and "fused-2workers" split between two goroutines). Both
// restore g and s from copies first (the work overwrites them), which
// costs each two copies of a vector. Besides ns/op it reports cpu-ns/op
// (reportCPU).
func benchBroydenStep(b *testing.B, n int) {
	const pairs = 10
	in := newBroydenVectors(n, pairs, 3, 1)
	g0, s0 := append([]float64(nil), in.g...), append([]float64(nil), in.s...)
	for _, workers := range []int{0, 1, 2} {
		name := "separate"
		switch workers {
		case 1:
			name = "fused"
		case 2:
			name = "fused-2workers"
		}
		b.Run(name, func(b *testing.B) {
			v := in.clone()
			ps, par := newTestPasses(v, max(workers, 1))
			defer par.stop()
			b.ReportAllocs()
			b.SetBytes(int64(8 * n))
			cpu := processCPU()
			for b.Loop() {
				copy(v.g, g0)
				copy(v.s, s0)
				if workers == 0 {
					broydenReference(v)
				} else {
					broydenFused(ps, par, v)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

func BenchmarkBroydenStep4096(b *testing.B)   { benchBroydenStep(b, 1<<12) }
func BenchmarkBroydenStep16384(b *testing.B)  { benchBroydenStep(b, 1<<14) }
func BenchmarkBroydenStep32768(b *testing.B)  { benchBroydenStep(b, 1<<15) }
func BenchmarkBroydenStep65536(b *testing.B)  { benchBroydenStep(b, 1<<16) }
func BenchmarkBroydenStep262144(b *testing.B) { benchBroydenStep(b, 1<<18) }
