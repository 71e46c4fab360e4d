package solver

import "testing"

// The benchmarks below weigh a float32 history for Anderson and Broyden:
// the inner products of k stored vectors with a float64 vector, as their
// passes take them every iteration, with the history in float64 (the
// solvers' kernels, dotsStrided: package internal/vec's AVX2 assembly
// four vectors at a time where the processor has it) or in float32 (a
// plain Go loop, neither gonum nor internal/vec having a mixed-precision
// kernel), at the length of a part of the dense model's batch (64
// examples of 128, 10 pairs: 20 vectors, in cache) and of the conv
// model's batch (64 × 48 × 196, Anderson's memory of 5: 10 vectors, in
// memory).

// mixedDot returns Σ float64(u[i])·y[i], four partial sums at a time.
func mixedDot(u []float32, y []float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(u); i += 4 {
		s0 += float64(u[i]) * y[i]
		s1 += float64(u[i+1]) * y[i+1]
		s2 += float64(u[i+2]) * y[i+2]
		s3 += float64(u[i+3]) * y[i+3]
	}
	for ; i < len(u); i++ {
		s0 += float64(u[i]) * y[i]
	}
	return s0 + s1 + s2 + s3
}

var historySink float64

// benchHistoryDot times the k inner products of a history of k vectors
// of length n with one float64 vector, the history in float32 or not.
func benchHistoryDot(b *testing.B, n, k int, single bool) {
	y := make([]float64, n)
	h64 := make([][]float64, k)
	h32 := make([][]float32, k)
	for j := range k {
		h64[j], h32[j] = make([]float64, n), make([]float32, n)
		for i := range n {
			h64[j][i] = float64(i%7) / 8
			h32[j][i] = float32(h64[j][i])
		}
	}
	out := make([]float64, k)
	b.SetBytes(int64(n * k * 8))
	for b.Loop() {
		s := 0.0
		if single {
			for j := range k {
				s += mixedDot(h32[j], y)
			}
		} else {
			dotsStrided(out, 1, h64, 0, n, y)
			for _, d := range out {
				s += d
			}
		}
		historySink = s
	}
}

func BenchmarkHistoryDotDensePart64(b *testing.B) { benchHistoryDot(b, 64*128, 20, false) }
func BenchmarkHistoryDotDensePart32(b *testing.B) { benchHistoryDot(b, 64*128, 20, true) }
func BenchmarkHistoryDotConv64(b *testing.B)      { benchHistoryDot(b, 64*48*196, 10, false) }
func BenchmarkHistoryDotConv32(b *testing.B)      { benchHistoryDot(b, 64*48*196, 10, true) }
