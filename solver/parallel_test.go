package solver

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// parLens are the dimensions of the parallel tests: one entry, shorter
// than a block, one block, one block and one entry, odd lengths of several
// blocks, and one above MinParallelLen.
var parLens = []int{1, 7, parBlock, parBlock + 1, 3*parBlock + 5, MinParallelLen + 3}

// tanhChain is chain passed through tanh: a nonlinear contraction, so that
// Anderson's weights change from one iteration to the next.
func tanhChain(n int, seed uint64) Func {
	lin := chain(n, 0.99, seed)
	return Func{N: n, F: func(dst, x []float64) {
		lin.F(dst, x)
		for i, v := range dst {
			dst[i] = math.Tanh(v)
		}
	}}
}

// pointBits records the bits of every iterate a solve records and of its
// residual.
type pointBits struct {
	points [][]uint64
	res    []uint64
}

func (r *pointBits) Record(TracePoint) error { return nil }

func (r *pointBits) RecordPoint(p TracePoint, x []float64) error {
	b := make([]uint64, len(x))
	for i, v := range x {
		b[i] = math.Float64bits(v)
	}
	r.points = append(r.points, b)
	r.res = append(r.res, math.Float64bits(p.Residual))
	return nil
}

// TestWorkersBitIdentical: every deterministic method, on a linear and a
// nonlinear map of every length of parLens, records the same iterates and
// residuals, bit for bit, and returns the same point and status, whatever
// Settings.Workers (the zero default included), including more workers
// than cores or blocks.
func TestWorkersBitIdentical(t *testing.T) {
	methods := []struct {
		name string
		m    Method
	}{
		{"anderson", Anderson{}},
		{"anderson-m3-mixing0.5", Anderson{Memory: 3, Mixing: 0.5}},
		{"anderson-m1", Anderson{Memory: 1}},
		{"picard", Picard{}},
		{"km", KrasnoselskiiMann{}},
		{"halpern", Halpern{}},
		{"ghal", GHAL{Gamma: 0.99}},
		{"broyden", Broyden{}},
	}
	lens := parLens
	if testing.Short() {
		lens = lens[:len(lens)-1] // the default's own length takes seconds
	}
	for _, n := range lens {
		norm, err := NewLP(2, n)
		require.NoError(t, err)
		x0 := randVec(rand.New(rand.NewPCG(uint64(n), 3)), n)
		for _, o := range []struct {
			name string
			f    Func
		}{{"chain", chain(n, 0.99, 81)}, {"tanh", tanhChain(n, 82)}} {
			p := Problem{Oracle: o.f, Norm: norm}
			for _, mc := range methods {
				var ref *pointBits
				var refRes *Result
				for _, workers := range []int{1, 2, 3, 4, 0} {
					rec := new(pointBits)
					s := &Settings{Tol: 1e-300, MaxIter: 12, Workers: workers, Recorder: rec, Workspace: new(Workspace)}
					res, err := Solve(context.Background(), p, x0, s, mc.m)
					require.NoError(t, err)
					if ref == nil {
						ref, refRes = rec, res
						continue
					}
					require.Equal(t, refRes.Status, res.Status, "%s on %s, n = %d, %d workers: status", mc.name, o.name, n, workers)
					require.Equal(t, ref.res, rec.res, "%s on %s, n = %d, %d workers: residuals", mc.name, o.name, n, workers)
					require.Equal(t, ref.points, rec.points, "%s on %s, n = %d, %d workers: iterates", mc.name, o.name, n, workers)
					require.Equal(t, bitsOf(refRes.X), bitsOf(res.X), "%s on %s, n = %d, %d workers: result", mc.name, o.name, n, workers)
				}
			}
		}
	}
}

func bitsOf(x []float64) []uint64 {
	b := make([]uint64, len(x))
	for i, v := range x {
		b[i] = math.Float64bits(v)
	}
	return b
}

// blockCounter counts the calls of each block and checks their bounds.
type blockCounter struct {
	n     int
	calls []atomic.Int32
	wrong atomic.Bool
}

func (c *blockCounter) block(b, lo, hi int) {
	if lo != b*parBlock || hi != min(lo+parBlock, c.n) || lo >= hi {
		c.wrong.Store(true)
	}
	c.calls[b].Add(1)
}

// TestParallelRunCoversBlocks: a pass computes every block once, with the
// bounds of its fixed position, for any number of workers, more than
// blocks included, and parallel's zero value runs it too.
func TestParallelRunCoversBlocks(t *testing.T) {
	for _, n := range []int{1, parBlock - 1, parBlock, parBlock + 1, 10*parBlock + 3} {
		for _, workers := range []int{0, 1, 2, 3, 8, 100} {
			c := &blockCounter{n: n, calls: make([]atomic.Int32, blocks(n))}
			p := &parallel{workers: workers}
			for range 3 { // the same parallel serves pass after pass
				p.run(n, c)
			}
			p.stop()
			require.False(t, c.wrong.Load(), "n = %d, %d workers", n, workers)
			for b := range c.calls {
				require.EqualValues(t, 3, c.calls[b].Load(), "n = %d, %d workers, block %d", n, workers, b)
			}
		}
	}
}

// TestParallelPassesAllocationFree: the Env's parallel passes allocate
// nothing, helpers included, and the finiteness checks find a NaN or an
// Inf in any block, serially or not.
func TestParallelPassesAllocationFree(t *testing.T) {
	const n = 5*parBlock + 1
	p := &parallel{workers: 4}
	defer p.stop()
	a, b, dst := randVec(rand.New(rand.NewPCG(1, 2)), n), make([]float64, n), make([]float64, n)
	p.copy(b, a)
	require.Equal(t, a, b)
	require.Zero(t, testing.AllocsPerRun(20, func() { p.copy(dst, a) }), "copy")
	require.Zero(t, testing.AllocsPerRun(20, func() { p.subInto(dst, a, b) }), "subInto")
	require.Zero(t, testing.AllocsPerRun(20, func() { p.allFinite(a) }), "allFinite")
	require.Zero(t, testing.AllocsPerRun(20, func() { p.copyFinite(dst, a) }), "copyFinite")
	for _, q := range []*parallel{p, {}} {
		require.True(t, q.allFinite(a))
		require.True(t, q.copyFinite(dst, a))
		a[n-1] = math.Inf(-1)
		require.False(t, q.allFinite(a))
		require.False(t, q.copyFinite(dst, a))
		require.Equal(t, bitsOf(a), bitsOf(dst))
		a[n-1], a[parBlock] = 0, math.NaN()
		require.False(t, q.allFinite(a))
		require.False(t, q.copyFinite(dst, a))
		require.Equal(t, parBlock, firstNonFinite(a))
		a[parBlock] = 1
	}
}

// TestParallelSolveAllocationFree is TestInnerLoopsAllocationFree with
// several workers on a state of several blocks, every solve through one
// Settings.Workspace: a solve of 60 iterations allocates as many objects
// as one of 5.
func TestParallelSolveAllocationFree(t *testing.T) {
	const n = 4*parBlock + 3
	norm, err := NewLP(2, n)
	require.NoError(t, err)
	p := Problem{Oracle: chain(n, 0.99, 81), Norm: norm}
	x0 := make([]float64, n)
	for _, m := range []Method{Anderson{}, Anderson{Mixing: 0.5}, Picard{}} {
		ws := new(Workspace)
		solve := func(iters int) {
			s := &Settings{Tol: 1e-300, MaxIter: iters, NoTrace: true, Workers: 2, Workspace: ws}
			res, err := Solve(context.Background(), p, x0, s, m)
			require.NoError(t, err)
			require.Equal(t, iters, res.Stats.Iterations)
		}
		solve(60)
		short := testing.AllocsPerRun(3, func() { solve(5) })
		long := testing.AllocsPerRun(3, func() { solve(60) })
		require.InDelta(t, short, long, 1, "%v allocates in its loop", m)
	}
}

// TestParallelNoGoroutineLeft: once a solve with several workers has
// returned, no goroutine of it is left.
func TestParallelNoGoroutineLeft(t *testing.T) {
	const n = 6*parBlock + 1
	norm, err := NewLP(2, n)
	require.NoError(t, err)
	p := Problem{Oracle: tanhChain(n, 5), Norm: norm}
	before := runtime.NumGoroutine()
	for _, m := range []Method{Anderson{}, Picard{}} {
		_, err := Solve(context.Background(), p, make([]float64, n), &Settings{MaxIter: 20, Workers: 4}, m)
		require.NoError(t, err)
	}
	// A helper has called Done when the pass returns, and exits right
	// after: wait for the runtime to see it gone.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before)
}

// TestParallelHelpersPersist: a parallel starts its helpers at the first
// pass that needs them and wakes the same ones for every later pass (no
// goroutine per pass), and stop ends them.
func TestParallelHelpersPersist(t *testing.T) {
	const n = 5 * parBlock
	c := &blockCounter{n: n, calls: make([]atomic.Int32, blocks(n))}
	p := &parallel{workers: 3}
	before := runtime.NumGoroutine()
	p.run(parBlock, c) // one block: serial, no helper
	require.Equal(t, before, runtime.NumGoroutine())
	for range 4 {
		p.run(n, c)
		require.Equal(t, before+2, runtime.NumGoroutine())
	}
	p.stop()
	p.stop() // stopping again does nothing
	// stop returns once the helpers have signalled their exit; wait for
	// the runtime to see them gone.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before)
	// A stopped parallel starts helpers again when a pass needs them.
	p.run(n, c)
	p.stop()
	require.False(t, c.wrong.Load())
	require.EqualValues(t, 6, c.calls[0].Load(), "block 0: the one-block pass and five others")
	for b := 1; b < len(c.calls); b++ {
		require.EqualValues(t, 5, c.calls[b].Load(), "block %d", b)
	}
}

// TestWorkersDefault: a zero Settings.Workers means GOMAXPROCS workers from
// MinParallelLen on and one below, which Env.Settings reports; a positive
// value is kept.
func TestWorkersDefault(t *testing.T) {
	for _, c := range []struct {
		workers, n, want int
	}{
		{0, 1, 1},
		{0, MinParallelLen - 1, 1},
		{0, MinParallelLen, runtime.GOMAXPROCS(0)},
		{1, MinParallelLen, 1},
		{3, 10, 3},
	} {
		norm, err := NewLP(2, c.n)
		require.NoError(t, err)
		e := newEnv(context.Background(), Problem{Oracle: chain(c.n, 0.5, 1), Norm: norm}, make([]float64, c.n), Settings{Workers: c.workers})
		require.Equal(t, c.want, e.Settings().Workers, "Workers = %d, n = %d", c.workers, c.n)
	}
}
