package train

import (
	"runtime"

	"github.com/deqgo/deq/internal/team"
	"github.com/deqgo/deq/layers"
)

// adamSplitMin is the smallest number of elements whose Update an
// adamSplit divides between goroutines.
const adamSplitMin = 1 << 15

// adamSplit divides an Adam Update's elements between the goroutines of
// a team, with its methods bound once so that a split Update allocates
// nothing.
type adamSplit struct {
	team *team.Team
	call adamCall
	part func(p, lo, hi int)

	// The operands of updateThen: the first element of the tail, its
	// end, the function to run after the tail's update and its error.
	from, total int
	then        func() error
	err         error
	pair        func(p, lo, hi int)
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
	s.pair = func(p, _, _ int) {
		if p == 0 {
			a.updateRange(&s.call, s.from, s.total)
			s.err = s.then()
			return
		}
		a.updateRange(&s.call, 0, s.from)
	}
	runtime.AddCleanup(s, (*team.Team).Close, s.team)
	a.split = s
}

// updateThen is Update followed by then (the cell's projection), which
// needs only the parameters ws[k:] updated: on a split Adam, one goroutine
// updates ws[k:] and then runs then while another updates ws[:k]. Each
// element's update is Update's, so the result is Update's, bit for bit,
// followed by then's; with k = 0 it is Update, then then. It returns
// Update's error, or else then's.
func (a *Adam) updateThen(ws, gs [][]float64, k int, then func() error) error {
	c, total, err := a.begin(ws, gs)
	if err != nil {
		return err
	}
	from := 0
	for _, w := range ws[:k] {
		from += len(w)
	}
	s := a.split
	if s == nil || total < adamSplitMin || from == 0 {
		a.update(&c, total)
		return then()
	}
	s.call, s.from, s.total, s.then = c, from, total, then
	s.team.Run(2, s.pair)
	err = s.err
	s.call, s.then, s.err = adamCall{}, nil, nil
	return err
}

// cellTail returns the index in vals of the first of the cell's
// parameters ps when they are vals' last entries, in order and over the
// same memory, and 0 otherwise (Adam.updateThen then updates every
// parameter before the projection).
func cellTail(vals [][]float64, ps []*layers.Param) int {
	k := len(vals) - len(ps)
	if k < 0 {
		return 0
	}
	for i, p := range ps {
		v, d := vals[k+i], p.Data()
		if len(v) != len(d) || (len(d) > 0 && &v[0] != &d[0]) {
			return 0
		}
	}
	return k
}
