package solver

import (
	"math"
	"math/rand/v2"
	"testing"
)

// benchNorm measures one evaluation of n on a fixed random point.
func benchNorm(b *testing.B, n Norm) {
	x := randVec(rand.New(rand.NewPCG(71, 0)), n.Len())
	b.ReportAllocs()
	b.SetBytes(int64(8 * n.Len()))
	b.ResetTimer()
	for range b.N {
		if v := n.Norm(x); !(v > 0) {
			b.Fatal(v)
		}
	}
}

func mustLP(p float64, d int) Norm {
	if math.IsInf(p, 1) {
		n, err := NewLInf(d)
		if err != nil {
			panic(err)
		}
		return n
	}
	n, err := NewLP(p, d)
	if err != nil {
		panic(err)
	}
	return n
}

func batched(ex Norm, examples int) Norm {
	b, err := NewBatched(ex, examples)
	if err != nil {
		panic(err)
	}
	return b
}

func schatten(p float64, r, c int) Norm {
	n, err := NewSchatten(p, r, c)
	if err != nil {
		panic(err)
	}
	return n
}

// DEQ sizes: a batch of 64 examples of 256 features, and 64×64 and 256×64
// matrix-valued states.
func BenchmarkNormBatchedL2_64x256(b *testing.B) { benchNorm(b, batched(mustLP(2, 256), 64)) }
func BenchmarkNormBatchedLInf_64x256(b *testing.B) {
	benchNorm(b, batched(mustLP(math.Inf(1), 256), 64))
}
func BenchmarkNormBatchedLP4_64x256(b *testing.B)  { benchNorm(b, batched(mustLP(4, 256), 64)) }
func BenchmarkNormSchatten4_64x64(b *testing.B)    { benchNorm(b, schatten(4, 64, 64)) }
func BenchmarkNormSchattenInf_64x64(b *testing.B)  { benchNorm(b, schatten(math.Inf(1), 64, 64)) }
func BenchmarkNormSchatten4_256x64(b *testing.B)   { benchNorm(b, schatten(4, 256, 64)) }
func BenchmarkNormSchattenInf_256x64(b *testing.B) { benchNorm(b, schatten(math.Inf(1), 256, 64)) }
