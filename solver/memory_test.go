package solver

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// solveMemory returns the heap allocations (count and bytes) of one solve of
// m on the n-dimensional chain for iters iterations, the minimum over three
// runs so that a stray allocation of the runtime does not count. The trace is
// kept unless noTrace is set; the certificate is skipped; the divergence test
// is off, so that the solve runs all iters iterations (which it checks).
func solveMemory(tb testing.TB, m Method, n, iters int, noTrace bool) (mallocs, bytes uint64) {
	tb.Helper()
	norm, err := NewLP(2, n)
	require.NoError(tb, err)
	p := Problem{Oracle: chain(n, 0.99, 81), Norm: norm}
	x0 := make([]float64, n)
	s := &Settings{Tol: 1e-300, MaxIter: iters, DivergenceFactor: math.Inf(1), NoTrace: noTrace, Certify: CertifySettings{Skip: true}}
	mallocs, bytes = math.MaxUint64, math.MaxUint64
	var before, after runtime.MemStats
	for range 3 {
		runtime.ReadMemStats(&before)
		res, err := Solve(context.Background(), p, x0, s, m)
		runtime.ReadMemStats(&after)
		require.NoError(tb, err)
		require.Equal(tb, iters, res.Stats.Iterations, "%v ran all its iterations", m)
		mallocs = min(mallocs, after.Mallocs-before.Mallocs)
		bytes = min(bytes, after.TotalAlloc-before.TotalAlloc)
	}
	return mallocs, bytes
}

// historyMethods are Anderson and Broyden with history m, set up to run as
// many iterations as asked on the chain: without its safeguards (Protect,
// Patience) limited-memory Broyden wanders on it, and would otherwise stop
// as Diverged or Stagnated; the memory it allocates is the same either way.
func historyMethods(m int) []Method {
	return []Method{Anderson{Memory: m}, Broyden{Memory: m, Protect: math.Inf(1), Patience: math.MaxInt}}
}

// TestHistoryMemoryFlatInIterations: with NoTrace, a solve of Anderson or
// Broyden allocates the same number of objects and the same bytes whether it
// runs 50 or 500 iterations. With the trace kept, the bytes grow, which
// shows that the measurement sees allocations made during the iterations.
func TestHistoryMemoryFlatInIterations(t *testing.T) {
	const n = 256
	for _, m := range historyMethods(8) {
		shortN, shortB := solveMemory(t, m, n, 50, true)
		longN, longB := solveMemory(t, m, n, 500, true)
		t.Logf("%T: %d allocations, %d bytes for 50 iterations; %d, %d for 500", m, shortN, shortB, longN, longB)
		require.Equal(t, shortN, longN, "%v: allocations", m)
		require.Equal(t, shortB, longB, "%v: bytes", m)
		_, tracedShort := solveMemory(t, m, n, 50, false)
		_, tracedLong := solveMemory(t, m, n, 500, false)
		require.Greater(t, tracedLong, tracedShort+450*uint64(sizeofTracePoint), "%v: the trace grows", m)
	}
}

// sizeofTracePoint is the size of one trace entry in bytes.
const sizeofTracePoint = 40 // Iter, Calls, Samples, Residual, Elapsed: 5 words

// TestHistoryMemoryScalesWithMemory measures the bytes a solve allocates for
// several Memory settings. The difference between two settings m and m₀ is
// that of the two rings of m×n floats (Anderson's iterates and residuals,
// Broyden's u and v vectors), up to one 8 KiB page of rounding per ring, plus
// for Anderson its small Gram and bordered systems (m² + (m+1)² + 2m + 1
// floats, counted twice as a bound on size-class rounding).
func TestHistoryMemoryScalesWithMemory(t *testing.T) {
	const (
		n     = 1024 // a ring slot is 8 KiB
		iters = 40   // more than any Memory below, so the ring is not capped
		m0    = 2
		page  = 8192
	)
	ring := func(m int) int64 { return 2 * int64(m) * n * 8 }
	small := func(method Method, m int) int64 {
		if _, ok := method.(Anderson); ok {
			return 8 * int64(m*m+(m+1)*(m+1)+2*m+1)
		}
		return 0
	}
	for i := range historyMethods(m0) {
		_, base := solveMemory(t, historyMethods(m0)[i], n, iters, true)
		for _, m := range []int{4, 8, 16, 32} {
			method := historyMethods(m)[i]
			_, b := solveMemory(t, method, n, iters, true)
			grow := int64(b) - int64(base)
			lo := ring(m) - ring(m0) - 2*page
			hi := ring(m) - ring(m0) + 2*small(method, m) + 2*page
			t.Logf("%T Memory %d: %d bytes, %d more than Memory %d; rings %d more", method, m, b, grow, m0, ring(m)-ring(m0))
			require.True(t, lo <= grow && grow <= hi, "%T Memory %d: %d bytes more than Memory %d, want [%d, %d]", method, m, grow, m0, lo, hi)
		}
	}
}

// TestHistoryCappedByMaxIter: a Memory far beyond Settings.MaxIter costs no
// more than MaxIter + 1 slots, since no more pairs can be stored.
func TestHistoryCappedByMaxIter(t *testing.T) {
	const n, iters = 64, 10
	huge, enough := historyMethods(1<<24), historyMethods(iters+1)
	for i := range huge {
		hugeN, hugeB := solveMemory(t, huge[i], n, iters, true)
		enoughN, enoughB := solveMemory(t, enough[i], n, iters, true)
		require.Equal(t, enoughN, hugeN, fmt.Sprintf("%T", huge[i]))
		require.Equal(t, enoughB, hugeB, fmt.Sprintf("%T", huge[i]))
	}
}
