package solver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/internal/numeric"
)

// andersonVectors holds the vectors of one Anderson iteration's vector
// work: rings of memory values and residuals (all slots in use), the point
// and the mixing weights.
type andersonVectors struct {
	fs, gs, x, gram, alpha []float64
	n, memory, head        int
	beta                   float64

	// The reference's scratch, made on its first call.
	fSlots, gSlots, terms [][]float64
	d, w                  []float64
}

func newAndersonVectors(n, memory int, beta float64, seed uint64) *andersonVectors {
	rng := rand.New(rand.NewPCG(seed, 11))
	v := &andersonVectors{fs: randVec(rng, memory*n), gs: randVec(rng, memory*n), x: randVec(rng, n),
		gram: make([]float64, memory*memory), alpha: make([]float64, memory), n: n, memory: memory, head: memory / 2, beta: beta}
	for i := range v.alpha {
		v.alpha[i] = 1 / float64(memory)
	}
	return v
}

func (v *andersonVectors) clone() *andersonVectors {
	c := *v
	c.fs, c.gs, c.x = append([]float64(nil), v.fs...), append([]float64(nil), v.gs...), append([]float64(nil), v.x...)
	c.gram, c.alpha = append([]float64(nil), v.gram...), append([]float64(nil), v.alpha...)
	c.fSlots, c.gSlots, c.terms, c.d, c.w = nil, nil, nil, nil, nil
	return &c
}

// andersonReference is Anderson's per-iteration vector work as separate
// passes over whole vectors: the residual g = f − x of slot head, its
// inner products with the stored residuals, and the mixing
// x = Σ α_j (f_j − (1 − β) g_j), the inner products and the terms grouped
// four at a time as the fused passes group them, with the same kernels;
// kept to test and benchmark the fused passes against.
func andersonReference(v *andersonVectors) bool {
	n, m := v.n, v.memory
	g := v.gs[v.head*n : (v.head+1)*n]
	subInto(g, v.fs[v.head*n:(v.head+1)*n], v.x)
	if v.fSlots == nil {
		v.fSlots, v.gSlots, v.d = make([][]float64, m), make([][]float64, m), make([]float64, m)
		v.w, v.terms = make([]float64, 0, 2*m), make([][]float64, 0, 2*m)
		for j := range m {
			v.fSlots[j], v.gSlots[j] = v.fs[j*n:(j+1)*n], v.gs[j*n:(j+1)*n]
		}
	}
	fSlots, gSlots := v.fSlots, v.gSlots
	dotsStrided(v.d, 1, gSlots, 0, n, g)
	for j := range m {
		v.gram[v.head*m+j], v.gram[j*m+v.head] = v.d[j], v.d[j]
	}
	w, terms := v.w[:0], v.terms[:0]
	for j, a := range v.alpha {
		if j > 0 {
			w, terms = append(w, a), append(terms, fSlots[j])
		}
		if v.beta != 1 {
			w, terms = append(w, -a*(1-v.beta)), append(terms, gSlots[j])
		}
	}
	floats.ScaleTo(v.x, v.alpha[0], fSlots[0])
	addScaledMany(v.x, w, terms, 0, n)
	return numeric.AllFinite(v.x)
}

// andersonFused is andersonReference by Anderson's own block passes
// (andersonDots, andersonMixing).
func andersonFused(dots *andersonDots, mix *andersonMixing, par *parallel, v *andersonVectors) bool {
	dots.residual(par, v.head, v.memory, v.gram, v.memory)
	return mix.step(par, v.alpha)
}

func newTestAndersonPasses(v *andersonVectors) (*andersonDots, *andersonMixing) {
	return newAndersonPasses(v.fs, v.gs, v.x, v.memory, v.beta, make([]float64, v.memory*blocks(v.n)))
}

// TestAndersonPassesMatchReference: Anderson's fused passes compute what
// the separate passes compute, bit for bit on vectors of one block and up
// to the reassociation of the inner products' block sums on longer ones.
func TestAndersonPassesMatchReference(t *testing.T) {
	for _, n := range []int{7, parBlock, 3*parBlock + 5} {
		for _, beta := range []float64{1, 0.5} {
			name := fmt.Sprintf("n=%d/beta=%g", n, beta)
			in := newAndersonVectors(n, 5, beta, uint64(n))
			ref, got := in.clone(), in.clone()
			andersonReference(ref)
			dots, mix := newTestAndersonPasses(got)
			par := &parallel{workers: 2}
			require.True(t, andersonFused(dots, mix, par, got), name)
			par.stop()
			require.Equal(t, bitsOf(ref.x), bitsOf(got.x), name)
			require.Equal(t, bitsOf(ref.gs), bitsOf(got.gs), name)
			if n <= parBlock {
				require.Equal(t, bitsOf(ref.gram), bitsOf(got.gram), name)
				continue
			}
			// Each inner product sums n products of entries of order
			// one: the block sums change it by at most about n²ε.
			tol := 4 * float64(n) * float64(n) * 0x1p-52
			for i := range ref.gram {
				require.InDelta(t, ref.gram[i], got.gram[i], tol, "%s Gram entry %d", name, i)
			}
		}
	}
}

// benchAndersonStep measures one iteration's vector work of Anderson with
// its default memory of 5 (all slots in use) on vectors of length n: the
// separate passes ("separate", andersonReference) against the fused block
// passes ("fused", serial, and "fused-2workers"). Besides ns/op it reports
// cpu-ns/op (reportCPU).
func benchAndersonStep(b *testing.B, n int) {
	in := newAndersonVectors(n, DefaultAndersonMemory, DefaultAndersonMixing, 1)
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
			dots, mix := newTestAndersonPasses(v)
			par := &parallel{workers: max(workers, 1)}
			defer par.stop()
			b.ReportAllocs()
			b.SetBytes(int64(8 * n))
			cpu := processCPU()
			for b.Loop() {
				if workers == 0 {
					andersonReference(v)
				} else {
					andersonFused(dots, mix, par, v)
				}
			}
			reportCPU(b, cpu)
		})
	}
}

func BenchmarkAndersonStep4096(b *testing.B)   { benchAndersonStep(b, 1<<12) }
func BenchmarkAndersonStep16384(b *testing.B)  { benchAndersonStep(b, 1<<14) }
func BenchmarkAndersonStep65536(b *testing.B)  { benchAndersonStep(b, 1<<16) }
func BenchmarkAndersonStep602112(b *testing.B) { benchAndersonStep(b, convBatchLen) }
