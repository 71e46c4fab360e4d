package team

import "runtime"

// Team splits loops over [0, n) between the calling goroutine and
// persistent helper goroutines, without allocating per call. Its owner
// calls Close when it is done with it (or registers Close with
// runtime.AddCleanup on itself: the helpers hold only the team's channels,
// never the owner, so an unreachable owner is collected).
type Team struct {
	parts int
	jobs  chan *teamJob
	done  chan struct{}
	slots []teamJob
}

type teamJob struct {
	fn     func(part, lo, hi int)
	part   int
	lo, hi int
}

// New returns a team of parts ≥ 1 parts (parts − 1 helper goroutines).
// Zero means runtime.GOMAXPROCS(0).
func New(parts int) *Team {
	if parts < 1 {
		parts = runtime.GOMAXPROCS(0)
	}
	t := &Team{
		parts: parts,
		jobs:  make(chan *teamJob, parts),
		done:  make(chan struct{}, parts),
		slots: make([]teamJob, parts),
	}
	for range parts - 1 {
		go work(t.jobs, t.done)
	}
	return t
}

func work(jobs <-chan *teamJob, done chan<- struct{}) {
	for j := range jobs {
		j.fn(j.part, j.lo, j.hi)
		j.fn = nil
		done <- struct{}{}
	}
}

// Parts returns the number of parts the team splits a loop into.
func (t *Team) Parts() int { return t.parts }

// Run calls fn(p, lo, hi) for the parts p of [0, n) (consecutive ranges of
// near-equal sizes; fewer than Parts() when n is smaller), part 0 on the
// calling goroutine, and returns when all have returned. It returns the
// number of parts used. fn must not panic.
func (t *Team) Run(n int, fn func(part, lo, hi int)) int {
	p := max(min(t.parts, n), 1)
	for i := 1; i < p; i++ {
		s := &t.slots[i]
		s.fn, s.part, s.lo, s.hi = fn, i, i*n/p, (i+1)*n/p
		t.jobs <- s
	}
	fn(0, 0, n/p)
	for i := 1; i < p; i++ {
		<-t.done
	}
	return p
}

// Close stops the helpers. The team must not be used afterwards.
func (t *Team) Close() { close(t.jobs) }
