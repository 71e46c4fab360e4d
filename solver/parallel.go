package solver

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/deqgo/deq/internal/numeric"
)

// MinParallelLen is the smallest problem dimension for which a zero
// Settings.Workers splits the vector passes between goroutines. Measured
// with Anderson on the chain on two idle cores (go test ./solver -run '^$'
// -bench AndersonWorkers -count 3, medians of three), two workers took
// 1.21 times as long per iteration as one at 2^14 entries, were level at
// 2^15 (1.03 times faster) and gained 1.20, 1.23 and 1.51 times at 2^16,
// 2^17 and 2^18: shorter vectors sit in cache, where a pass is too short to
// pay for waking a helper.
const MinParallelLen = 1 << 16

// parBlock is the length of the blocks into which the parallel vector
// passes cut their vectors. Work is handed out a block at a time and a
// reduction keeps one partial result per block, summed in block order, so
// that every result is a function of the data alone: block b always holds
// entries [b·parBlock, (b+1)·parBlock), whichever goroutine computes it.
// Changing it changes the rounding of the reductions of every vector longer
// than one block; it is a multiple of every kernel's unrolling, so that
// only the last block of a vector has a scalar tail.
const parBlock = 1 << 12

// workersFor returns the number of goroutines that share the vector passes
// of a solve of dimension n under Settings.Workers = workers ≥ 0.
func workersFor(workers, n int) int {
	switch {
	case workers > 0:
		return workers
	case n >= MinParallelLen:
		return runtime.GOMAXPROCS(0)
	}
	return 1
}

// blockTask is one vector pass of a parallel: block b covers the entries
// [lo, hi) of its vectors. Blocks of one pass are computed concurrently and
// in any order, so block must write nothing that another block reads or
// writes.
type blockTask interface {
	block(b, lo, hi int)
}

// parallel runs vector passes block by block on the calling goroutine and
// workers − 1 helpers. The helpers are persistent: started at the first
// pass that needs them, woken for each pass by a token on a buffered
// channel (so that waking them allocates nothing and the caller does not
// wait for them to start), and stopped by stop, which Solve calls when the
// solve ends. Every helper woken for a pass has finished its blocks when
// the pass returns, so none touches a vector after its pass. A parallel
// lives in a Workspace and serves one pass at a time. The zero value runs
// passes serially.
type parallel struct {
	workers int // goroutines per pass, the caller included

	task  blockTask // the pass in progress
	n, nb int       // its length and number of blocks
	next  atomic.Int64
	wg    sync.WaitGroup // the helpers of the pass in progress
	wake  chan struct{}  // a token per helper a pass wakes; nil when no helper runs
	exit  sync.WaitGroup // the running helpers

	// Reusable tasks of the Env's own passes.
	cp   copyTask
	cf   copyFiniteTask
	fin  finiteTask
	sub  subTask
	axpy axpyTask // Env.AddScaled's
}

// blocks returns the number of blocks of a vector of length n.
func blocks(n int) int { return (n + parBlock - 1) / parBlock }

// run computes every block of a pass of length n. With one worker, or one
// block, it runs them in order on the calling goroutine.
func (p *parallel) run(n int, t blockTask) {
	nb := blocks(n)
	w := min(p.workers, nb)
	if w <= 1 {
		for b := range nb {
			lo := b * parBlock
			t.block(b, lo, min(lo+parBlock, n))
		}
		return
	}
	if p.wake == nil {
		p.start()
	}
	p.task, p.n, p.nb = t, n, nb
	p.next.Store(0)
	p.wg.Add(w - 1)
	for range w - 1 {
		p.wake <- struct{}{}
	}
	p.work()
	p.wg.Wait()
	p.task = nil
}

// start starts the workers − 1 helpers.
func (p *parallel) start() {
	p.wake = make(chan struct{}, p.workers-1)
	p.exit.Add(p.workers - 1)
	for range p.workers - 1 {
		go p.help(p.wake)
	}
}

// help is the body of a helper goroutine: a pass's blocks per token, until
// the channel is closed.
func (p *parallel) help(wake <-chan struct{}) {
	defer p.exit.Done()
	for range wake {
		p.work()
		p.wg.Done()
	}
}

// stop stops the helpers, if any run, and returns once they have exited.
func (p *parallel) stop() {
	if p.wake == nil {
		return
	}
	close(p.wake)
	p.wake = nil
	p.exit.Wait()
}

// work computes blocks of the current pass until none is left. Blocks are
// claimed one at a time, so that a goroutine the scheduler delays leaves
// its share to the others.
func (p *parallel) work() {
	for {
		b := int(p.next.Add(1) - 1)
		if b >= p.nb {
			return
		}
		lo := b * parBlock
		p.task.block(b, lo, min(lo+parBlock, p.n))
	}
}

// serial reports whether a pass of length n runs on the calling goroutine
// alone, so that the Env's passes can skip handing out blocks.
func (p *parallel) serial(n int) bool { return p.workers <= 1 || n <= parBlock }

// copy is the built-in copy(dst, src) for slices of equal length.
func (p *parallel) copy(dst, src []float64) {
	if p.serial(len(dst)) {
		copy(dst, src)
		return
	}
	p.cp = copyTask{dst: dst, src: src}
	p.run(len(dst), &p.cp)
	p.cp = copyTask{}
}

// allFinite reports whether x holds no NaN and no ±Inf.
func (p *parallel) allFinite(x []float64) bool {
	if p.serial(len(x)) {
		return numeric.AllFinite(x)
	}
	p.fin.x = x
	p.fin.bad.Store(false)
	p.run(len(x), &p.fin)
	p.fin.x = nil
	return !p.fin.bad.Load()
}

// copyFinite copies src into dst, of equal length, and reports whether src
// holds no NaN and no ±Inf, in one pass over src.
func (p *parallel) copyFinite(dst, src []float64) bool {
	if p.serial(len(dst)) {
		copy(dst, src)
		return numeric.AllFinite(src)
	}
	p.cf.dst, p.cf.src = dst, src
	p.cf.bad.Store(false)
	p.run(len(dst), &p.cf)
	p.cf.dst, p.cf.src = nil, nil
	return !p.cf.bad.Load()
}

// subInto sets dst to a − b.
func (p *parallel) subInto(dst, a, b []float64) {
	if p.serial(len(dst)) {
		subInto(dst, a, b)
		return
	}
	p.sub = subTask{dst: dst, a: a, b: b}
	p.run(len(dst), &p.sub)
	p.sub = subTask{}
}

// copyTask is parallel.copy's pass.
type copyTask struct{ dst, src []float64 }

func (t *copyTask) block(_, lo, hi int) { copy(t.dst[lo:hi], t.src[lo:hi]) }

// finiteTask is parallel.allFinite's pass.
type finiteTask struct {
	x   []float64
	bad atomic.Bool
}

func (t *finiteTask) block(_, lo, hi int) {
	if !numeric.AllFinite(t.x[lo:hi]) {
		t.bad.Store(true)
	}
}

// copyFiniteTask is parallel.copyFinite's pass; a block of src is checked
// while it is in cache.
type copyFiniteTask struct {
	dst, src []float64
	bad      atomic.Bool
}

func (t *copyFiniteTask) block(_, lo, hi int) {
	copy(t.dst[lo:hi], t.src[lo:hi])
	if !numeric.AllFinite(t.src[lo:hi]) {
		t.bad.Store(true)
	}
}

// subTask is parallel.subInto's pass.
type subTask struct{ dst, a, b []float64 }

func (t *subTask) block(_, lo, hi int) { subInto(t.dst[lo:hi], t.a[lo:hi], t.b[lo:hi]) }

// firstNonFinite returns the index of the first NaN or ±Inf in x, or −1.
func firstNonFinite(x []float64) int {
	for i, v := range x {
		if v-v != 0 { // NaN or ±Inf, as numeric.AllFinite tests
			return i
		}
	}
	return -1
}
