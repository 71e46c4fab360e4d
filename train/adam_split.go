package train

import (
	"runtime"

	"github.com/deqgo/deq/internal/team"
)

// adamSplitMin is the smallest number of elements whose Update an
// adamSplit divides between goroutines.
const adamSplitMin = 1 << 15

// adamSplit divides an Adam Update's elements between the goroutines of
// a team, with its method bound once so that a split Update allocates
// nothing.
type adamSplit struct {
	team *team.Team
	call adamCall
	part func(p, lo, hi int)
}

// splitAdam makes a's Updates of at least adamSplitMin elements run on one
// goroutine per core; it does nothing on one core.
func splitAdam(a *Adam) {
	parts := runtime.GOMAXPROCS(0)
	if parts < 2 {
		return
	}
	s := &adamSplit{team: team.New(parts)}
	s.part = func(_, lo, hi int) { a.updateRange(&s.call, lo, hi) }
	runtime.AddCleanup(s, (*team.Team).Close, s.team)
	a.split = s
}
