package solver

import "gonum.org/v1/gonum/floats"

// This file holds the part of Env that a Method written outside the
// package uses for its vectors: scratch buffers from the solve's Workspace
// and the vector passes that Settings.Workers splits between goroutines.
// Each pass is deterministic (every entry is computed by the same
// arithmetic whichever goroutine computes it) and allocates nothing.

// Buffer returns a scratch vector of length n from the solve's Workspace.
// Successive calls during one solve return distinct vectors; a later solve
// through the same Workspace (Settings.Workspace) reuses them, so a method
// that takes its vectors from Buffer allocates nothing once the Workspace
// has grown. The contents are unspecified: the method writes every element
// before reading it. The vectors belong to the solve and must not be kept
// after Run returns; the point a method records is copied by the Env.
func (e *Env) Buffer(n int) []float64 {
	if n < 0 {
		panic("solver: Env.Buffer: negative length")
	}
	return e.buffer(n)
}

// Copy copies src into dst, which must have the same length.
func (e *Env) Copy(dst, src []float64) {
	checkSameLen("Env.Copy", dst, src)
	e.par.copy(dst, src)
}

// Sub sets dst to a − b; the three vectors must have the same length. dst
// may alias a or b.
func (e *Env) Sub(dst, a, b []float64) {
	checkSameLen("Env.Sub", dst, a)
	checkSameLen("Env.Sub", dst, b)
	e.par.subInto(dst, a, b)
}

// AddScaled sets dst to dst + alpha·s (the BLAS axpy); the vectors must
// have the same length.
func (e *Env) AddScaled(dst []float64, alpha float64, s []float64) {
	checkSameLen("Env.AddScaled", dst, s)
	if e.par.serial(len(dst)) {
		floats.AddScaled(dst, alpha, s)
		return
	}
	e.par.axpy = axpyTask{dst: dst, alpha: alpha, s: s}
	e.par.run(len(dst), &e.par.axpy)
	e.par.axpy = axpyTask{}
}

// axpyTask is Env.AddScaled's pass.
type axpyTask struct {
	dst, s []float64
	alpha  float64
}

func (t *axpyTask) block(_, lo, hi int) { floats.AddScaled(t.dst[lo:hi], t.alpha, t.s[lo:hi]) }

func checkSameLen(what string, a, b []float64) {
	if len(a) != len(b) {
		panic("solver: " + what + ": vectors of different lengths")
	}
}
