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

// SplitVJPer is an Evaluator whose VJP splits in two, so that the VJPs of
// evaluators of a cell and of its forks (Forker) can run at the same time:
// VJPPrepare computes dz, dx and the parameter gradients' terms into the
// evaluator's own memory, which evaluators may do concurrently, and
// VJPCommit then adds the terms to the shared parameter gradients, one
// evaluator at a time. A VJPPrepare followed by VJPCommit is VJP, bit for
// bit, so that committing in a fixed order gives the gradients of the
// VJPs made one after the other in that order.
type SplitVJPer interface {
	Evaluator
	// VJPPrepare is VJP without adding the parameter gradients, which it
	// keeps for VJPCommit. It reports false, and does nothing, when the
	// evaluator cannot split this VJP; the caller then calls VJP.
	VJPPrepare(dz, dx, z, g []float64) (bool, error)
	// VJPCommit adds the parameter gradients kept by the last successful
	// VJPPrepare, once; without one it does nothing. No other call of the
	// evaluator may come between them: a VJP drops the kept gradients.
	VJPCommit()
}

var _ SplitVJPer = (*denseEval)(nil)

// VJPPrepare implements SplitVJPer for the float32 cell's fused VJP; a
// float64 cell, or one running its gorgonia graphs, reports false.
func (e *denseEval) VJPPrepare(dz, dx, z, g []float64) (bool, error) {
	if e.f32 == nil || e.useGraph {
		return false, nil
	}
	if err := e.checkFull(dz, dx, z, g); err != nil {
		return false, err
	}
	e.affineVJP32Own(dz, dx, z, e.delta(z, g))
	e.prepared = true
	return true, nil
}

// VJPCommit implements SplitVJPer.
func (e *denseEval) VJPCommit() {
	if !e.prepared {
		return
	}
	e.prepared = false
	e.addGrads32(e.fused.delta)
	e.c.chainW()
}
