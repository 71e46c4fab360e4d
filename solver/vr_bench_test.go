package solver

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The hot paths of VR-GHAL besides the oracle, at DEQ sizes: a batch of 64
// examples of 256 features (d = 16384), clipped differences and the
// median-of-means selection among k = momBuckets(0.05) = 54 bucket means.

// benchClip times clipDifference of a fixed random difference into a
// separate destination at half its norm, so that every call rescales.
func benchClip(b *testing.B, n Norm) {
	delta := randVec(rand.New(rand.NewPCG(72, 0)), n.Len())
	dst := make([]float64, n.Len())
	radius := n.Norm(delta) / 2
	b.ReportAllocs()
	b.SetBytes(int64(8 * n.Len()))
	for b.Loop() {
		if f := clipDifference(dst, delta, radius, n); !(f > 0 && f < 1) {
			b.Fatal(f)
		}
	}
}

// benchMoM times medianOfMeans of k = momBuckets(0.05) = 54 random means
// with preallocated work.
func benchMoM(b *testing.B, n Norm) {
	k := momBuckets(0.05)
	rng := rand.New(rand.NewPCG(73, 0))
	means := make([][]float64, k)
	for i := range means {
		means[i] = randVec(rng, n.Len())
	}
	dst := make([]float64, n.Len())
	work := make([]float64, medianOfMeansWork(k, n.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if _, r := medianOfMeans(dst, means, n, work); !(r > 0) {
			b.Fatal(r)
		}
	}
}

func BenchmarkClipBatchedL2_64x256(b *testing.B) { benchClip(b, batched(mustLP(2, 256), 64)) }
func BenchmarkClipBatchedLInf_64x256(b *testing.B) {
	benchClip(b, batched(mustLP(math.Inf(1), 256), 64))
}
func BenchmarkClipBatchedLP4_64x256(b *testing.B) { benchClip(b, batched(mustLP(4, 256), 64)) }

func BenchmarkMoM54BatchedL2_64x256(b *testing.B) { benchMoM(b, batched(mustLP(2, 256), 64)) }
func BenchmarkMoM54BatchedLInf_64x256(b *testing.B) {
	benchMoM(b, batched(mustLP(math.Inf(1), 256), 64))
}
