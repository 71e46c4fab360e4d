package solver

import "testing"

// The planners' cost: the exact-binomial bucket search of
// momChebyshevBuckets at the bench certificate's δ = 0.05 and at an
// epoch-start share δ'_k = 1e-3, against the same search over the plain
// binomial sum (plainChebyshevBuckets, the computation before bucketTail,
// same results bit for bit), and the truncated mean's plan at δ = 0.05.

// benchBuckets times the bucket search f at δ.
func benchBuckets(b *testing.B, delta float64, f func(float64) (int, float64)) {
	b.ReportAllocs()
	for b.Loop() {
		if k, p := f(delta); !(k >= 1 && p > 0) {
			b.Fatal(k, p)
		}
	}
}

// benchPlanTruncated times the truncated mean's plan at δ for a radius
// a = 0.01 with κσ² = 1.
func benchPlanTruncated(b *testing.B, delta float64) {
	b.ReportAllocs()
	for b.Loop() {
		if p := planTruncated(1, 1, 1, delta, 0.01); !(p.total > 0) {
			b.Fatal(p.total)
		}
	}
}

func BenchmarkMoMChebyshevBuckets5e2(b *testing.B) { benchBuckets(b, 0.05, momChebyshevBuckets) }
func BenchmarkMoMChebyshevBuckets1e3(b *testing.B) { benchBuckets(b, 1e-3, momChebyshevBuckets) }
func BenchmarkPlainChebyshevBuckets5e2(b *testing.B) {
	benchBuckets(b, 0.05, plainChebyshevBuckets)
}
func BenchmarkPlainChebyshevBuckets1e3(b *testing.B) {
	benchBuckets(b, 1e-3, plainChebyshevBuckets)
}
func BenchmarkPlanTruncated5e2(b *testing.B) { benchPlanTruncated(b, 0.05) }
