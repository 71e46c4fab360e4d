package solver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// chain is the affine contraction T(x)_i = γ(x_{i−1} + x_{i+1})/2 + b_i on
// R^n (with x_0 = x_{n+1} = 0), whose ℓ2 Lipschitz constant is
// γ cos(π/(n+1)) < γ. It costs O(n) per evaluation and does not allocate, so
// benchmarks on it measure the methods' own work.
func chain(n int, gamma float64, seed uint64) Func {
	b := randVec(rand.New(rand.NewPCG(seed, 5)), n)
	return Func{N: n, F: func(dst, x []float64) {
		for i := range dst {
			s := 0.0
			if i > 0 {
				s += x[i-1]
			}
			if i+1 < len(x) {
				s += x[i+1]
			}
			dst[i] = gamma*s/2 + b[i]
		}
	}}
}

// solveOnce runs m on the 4096-dimensional chain for exactly iters
// iterations (the tolerance is out of reach) without trace or certificate.
func solveOnce(tb testing.TB, m Method, n, iters int) *Result {
	return solveOnceWorkers(tb, m, n, iters, 0)
}

// solveOnceWorkers is solveOnce with Settings.Workers = workers.
func solveOnceWorkers(tb testing.TB, m Method, n, iters, workers int) *Result {
	norm, err := NewLP(2, n)
	require.NoError(tb, err)
	s := &Settings{Tol: 1e-300, MaxIter: iters, NoTrace: true, Certify: CertifySettings{Skip: true}, Workers: workers}
	res, err := Solve(context.Background(), Problem{Oracle: chain(n, 0.99, 81), Norm: norm}, make([]float64, n), s, m)
	require.NoError(tb, err)
	return res
}

// TestInnerLoopsAllocationFree checks that every method allocates the same
// number of times whether it runs 5 or 200 iterations: all its allocations
// happen at setup.
func TestInnerLoopsAllocationFree(t *testing.T) {
	for _, dm := range detMethods {
		m := dm.make(0.99)
		if dm.name == "broyden" {
			// Keep Broyden running after it solves the chain to rounding.
			m = Broyden{Patience: 1000}
		}
		require.Equal(t, 200, solveOnce(t, m, 64, 200).Stats.Iterations, dm.name)
		short := testing.AllocsPerRun(3, func() { solveOnce(t, m, 64, 5) })
		long := testing.AllocsPerRun(3, func() { solveOnce(t, m, 64, 200) })
		// A per-iteration allocation would add about 195; the slack of one
		// absorbs a stray runtime allocation that AllocsPerRun counts.
		require.InDelta(t, short, long, 1, "%s allocates in its loop", dm.name)
	}
}

// benchMethod reports the cost of one iteration of m on the 4096-dimensional
// chain, measured over solves of 100 iterations; allocs/op counts the setup
// of one solve.
func benchMethod(b *testing.B, m Method) { benchMethodLen(b, m, 4096) }

// benchMethodLen is benchMethod on the n-dimensional chain.
func benchMethodLen(b *testing.B, m Method, n int) { benchMethodWorkers(b, m, n, 0) }

// benchMethodWorkers is benchMethodLen with Settings.Workers = workers.
func benchMethodWorkers(b *testing.B, m Method, n, workers int) {
	const iters = 100
	b.ReportAllocs()
	total := 0
	for range b.N {
		total += solveOnceWorkers(b, m, n, iters, workers).Stats.Iterations
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/iter")
}

func BenchmarkPicardAffine4096(b *testing.B)     { benchMethod(b, Picard{}) }
func BenchmarkAndersonAffine4096(b *testing.B)   { benchMethod(b, Anderson{}) }
func BenchmarkAnderson20Affine4096(b *testing.B) { benchMethod(b, Anderson{Memory: 20}) }
func BenchmarkBroydenAffine4096(b *testing.B)    { benchMethod(b, Broyden{}) }
func BenchmarkGHALAffine4096(b *testing.B)       { benchMethod(b, GHAL{Gamma: 0.99}) }

// convBatchLen is the length of a state of the conv DEQ's training batch:
// 64 images × 48 channels × 14×14 pixels.
const convBatchLen = 64 * 48 * 14 * 14

// BenchmarkAndersonConvBatch runs Anderson on a state of the conv DEQ's
// training batch, which does not fit in cache: the cost of its vector
// passes, split between GOMAXPROCS goroutines (the default Workers).
func BenchmarkAndersonConvBatch(b *testing.B) { benchMethodLen(b, Anderson{}, convBatchLen) }

// BenchmarkAndersonConvBatchSerial is BenchmarkAndersonConvBatch on one
// goroutine (Workers = 1).
func BenchmarkAndersonConvBatchSerial(b *testing.B) {
	benchMethodWorkers(b, Anderson{}, convBatchLen, 1)
}

// BenchmarkPicardConvBatch is BenchmarkAndersonConvBatch's reference: the
// chain's evaluation and the solver's bookkeeping alone.
func BenchmarkPicardConvBatch(b *testing.B) { benchMethodLen(b, Picard{}, convBatchLen) }

// BenchmarkPicardConvBatchSerial is BenchmarkPicardConvBatch on one
// goroutine (Workers = 1).
func BenchmarkPicardConvBatchSerial(b *testing.B) { benchMethodWorkers(b, Picard{}, convBatchLen, 1) }

// BenchmarkAndersonWorkers measures what MinParallelLen rests on: Anderson's
// cost per iteration on the n-dimensional chain for n = 2^14 … 2^18, with
// its vector passes on one goroutine and on two.
func BenchmarkAndersonWorkers(b *testing.B) {
	for _, n := range []int{1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("n=%d/workers=%d", n, workers), func(b *testing.B) {
				benchMethodWorkers(b, Anderson{}, n, workers)
			})
		}
	}
}
