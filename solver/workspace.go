package solver

// Workspace is scratch memory that a solve's Env and the methods of this
// package (Broyden, Anderson) reuse from one solve to the next: repeated
// solves of problems of one dimension through one Workspace allocate
// nothing besides their Result and trace. Set it as Settings.Workspace; a
// nil Settings.Workspace gives every solve a fresh one.
//
// A Workspace serves one solve at a time: solves that run concurrently
// need one each, and sharing one between them is a data race. Nothing in a
// Workspace outlives the solve that used it (Result.X is always freshly
// allocated), so a caller that runs its solves one after another, such as
// a DEQ layer for one batch size, can keep a single Workspace for all of
// them. It also holds the state of the solve's parallel vector passes
// (Settings.Workers), whose helper goroutines run only during a pass. The
// zero value is ready to use.
type Workspace struct {
	bufs [][]float64
	next int
	par  parallel
}

// reset starts a solve: the buffers are handed out again from the first.
func (w *Workspace) reset() { w.next = 0 }

// floats returns the next buffer of the solve, of length n, growing the
// workspace on first use. Its contents are unspecified: the caller writes
// every element before reading it.
func (w *Workspace) floats(n int) []float64 {
	if w.next == len(w.bufs) {
		w.bufs = append(w.bufs, nil)
	}
	b := w.bufs[w.next]
	if cap(b) < n {
		b = make([]float64, n)
		w.bufs[w.next] = b
	}
	w.next++
	return b[:n]
}
