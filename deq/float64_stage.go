package deq

import (
	"context"

	"github.com/deqgo/deq/solver"
)

// finishes reports whether a first-stage status leaves the solve to the
// float64 stage: it stopped on its own (converged or at a limit of its
// own iterations or samples), not because the caller's context or time
// limit ended it, the map diverged or the oracle failed.
func finishes(s solver.Status) bool {
	switch s {
	case solver.Canceled, solver.TimeLimit, solver.Diverged, solver.Failure:
		return false
	}
	return true
}

// float64Stage runs the second stage of a Settings.CertifyFloat64 solve:
// the forward method on the float64 reference map from the first stage's
// point, with the first stage's absolute tolerance and the rest of fs. The
// result's Stats hold both stages' work: the trace is the first stage's
// followed by the second's, with the second's calls, samples and times
// counted from the end of the first.
func (l *Layer) float64Stage(ctx context.Context, b *batch, first *solver.Result, fs solver.Settings) (*solver.Result, error) {
	s := fs
	if s.Relative {
		s.Relative, s.Tol = false, first.Tol
	}
	s.Seed = fs.Seed ^ 0x6a09e667f3bcc909 // fresh draws for a stochastic cell
	res, err := solver.Solve(ctx, solver.Problem{Oracle: b.refFwd, Norm: b.norm}, first.X, &s, l.s.Forward)
	if res == nil {
		return nil, err
	}
	f, st := first.Stats, res.Stats
	trace := f.Trace // appended to: first's own view keeps its length
	for _, p := range st.Trace {
		p.Iter += f.Iterations
		p.Calls += f.Calls
		p.Samples += f.Samples
		p.Elapsed += f.Wall
		trace = append(trace, p)
	}
	res.Stats = solver.Stats{
		Iterations: f.Iterations + st.Iterations,
		Calls:      f.Calls + st.Calls,
		Samples:    f.Samples + st.Samples,
		Trace:      trace,
		Wall:       f.Wall + st.Wall,
	}
	if s.NoTrace {
		res.Stats.Trace = nil
	}
	return res, err
}
