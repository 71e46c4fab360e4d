package cputime

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// spin burns processor time until at least d of it has passed on the wall
// clock.
func spin(d time.Duration) (x float64) {
	for start := time.Now(); time.Since(start) < d; {
		for i := range 1000 {
			x += float64(i) * 1e-9
		}
	}
	return x
}

// TestProcessCountsEveryThread: Process never decreases, and two
// goroutines spinning at once add the processor time of both (at least
// what one would, whatever the load of the machine, since each spins for
// its own wall time and gets at least some of it; the test asks only for
// growth and for no more than the wall time of every core).
func TestProcessCountsEveryThread(t *testing.T) {
	if !Supported {
		require.Zero(t, Process())
		t.Skip("processor time is not read on this platform")
	}
	before := Process()
	start := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _ = spin(50 * time.Millisecond) })
	}
	wg.Wait()
	wall := time.Since(start)
	used := Process() - before
	require.Positive(t, used)
	// getrusage rounds to its tick; allow one on top of two busy threads
	// for the whole wall time and the test's own overhead.
	require.LessOrEqual(t, used, 2*wall+50*time.Millisecond)
}
