package layers

import "github.com/deqgo/deq/internal/mru"

// Forker is a Cell that can be forked: Fork returns a cell that shares the
// receiver's parameters (the same *Param values), configuration and
// Lipschitz constraint, but builds and caches evaluators of its own. The
// evaluators of a cell and of its forks may then run on different
// goroutines at the same time, as long as nothing changes the parameters
// meanwhile and their SetInput calls are not concurrent (SetInput may
// bring a reparameterised weight up to date, which writes shared memory).
// Their VJPs add into the same parameter gradients, so they must not run
// concurrently either.
//
// Package deq forks a cell to solve groups of a batch's examples
// concurrently (deq.Settings.Split). Dense is a Forker.
type Forker interface {
	Cell
	// Fork returns a cell sharing the receiver's parameters, with
	// evaluators of its own. Its Project projects the shared parameters.
	Fork() Cell
}

var _ Forker = (*Dense)(nil)

// Fork implements Forker. The fork is a *Dense: it is Referenced as the
// receiver is, with reference evaluators of its own too.
func (c *Dense) Fork() Cell {
	f := *c
	f.evals = mru.Cache[int, *denseEval]{Max: MaxCachedBatches}
	f.refs = mru.Cache[int, *denseEval]{Max: MaxCachedBatches}
	return &f
}
