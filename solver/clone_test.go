package solver

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSchattenCloneIndependent checks that a Schatten clone shares no scratch
// space with the original and that clones used from 8 goroutines at once,
// interleaved with the original on this goroutine, give the norms computed
// serially, bit for bit. A shared buffer would show up under -race, or as
// wrong values when two matrices are written into it at once.
func TestSchattenCloneIndependent(t *testing.T) {
	for _, p := range []float64{3, 4, math.Inf(1)} {
		orig, err := NewSchatten(p, 7, 5)
		require.NoError(t, err)
		c := orig.Clone().(*Schatten)
		require.Equal(t, orig.String(), c.String())
		require.NotSame(t, &orig.scaled.Data[0], &c.scaled.Data[0])
		require.NotSame(t, &orig.gram.Data[0], &c.gram.Data[0])
		require.NotSame(t, &orig.eig[0], &c.eig[0])
		require.NotSame(t, &orig.work[0], &c.work[0])

		const mats = 16
		rng := rand.New(rand.NewPCG(uint64(p), 7))
		xs := make([][]float64, mats)
		want := make([]float64, mats)
		for i := range xs {
			xs[i] = randVec(rng, orig.Len())
			want[i] = orig.Norm(xs[i])
		}
		var wg sync.WaitGroup
		got := make([][]float64, relGoroutinesInternal)
		for g := range got {
			n := orig.Clone()
			wg.Go(func() {
				got[g] = make([]float64, 0, 4*mats)
				for r := 0; r < 4; r++ {
					for i := range xs {
						got[g] = append(got[g], n.Norm(xs[(i+g)%mats]))
					}
				}
			})
		}
		for r := 0; r < 4; r++ {
			for i := range xs {
				require.Equal(t, math.Float64bits(want[i]), math.Float64bits(orig.Norm(xs[i])))
			}
		}
		wg.Wait()
		for g := range got {
			for j, v := range got[g] {
				require.Equal(t, math.Float64bits(want[(j%mats+g)%mats]), math.Float64bits(v), "p = %v, goroutine %d, norm %d", p, g, j)
			}
		}
	}
}

// TestBatchedCloneIndependent: cloning a Batched norm clones its example
// norm, so a Batched of Schatten norms can be cloned per goroutine.
func TestBatchedCloneIndependent(t *testing.T) {
	ex, err := NewSchatten(4, 3, 3)
	require.NoError(t, err)
	b, err := NewBatched(ex, 5)
	require.NoError(t, err)
	b.Agg = AggMean
	c := b.Clone().(*Batched)
	require.NotSame(t, b.Example, c.Example)
	require.NotSame(t, &ex.scaled.Data[0], &c.Example.(*Schatten).scaled.Data[0])
	require.Equal(t, b.Examples, c.Examples)
	require.Equal(t, AggMean, c.Agg)
	x := randVec(rand.New(rand.NewPCG(1, 2)), b.Len())
	want := b.Norm(x)
	var wg sync.WaitGroup
	got := make([]float64, relGoroutinesInternal)
	for g := range got {
		n := b.Clone()
		wg.Go(func() {
			for r := 0; r < 8; r++ {
				got[g] = n.Norm(x)
			}
		})
	}
	wg.Wait()
	for _, v := range got {
		require.Equal(t, math.Float64bits(want), math.Float64bits(v))
	}
}

// relGoroutinesInternal is the number of goroutines of the internal
// concurrency tests.
const relGoroutinesInternal = 8
