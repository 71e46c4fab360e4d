package deq

import (
	"math"
	"time"

	"github.com/deqgo/deq/solver"
)

// severity orders the statuses of a split batch's parts: the merged
// Status is the most severe of theirs, so that the batch succeeds only
// when every part does.
var severity = [...]solver.Status{
	solver.Success,
	solver.ToleranceEstimated,
	solver.IterationLimit,
	solver.SampleLimit,
	solver.Stagnated,
	solver.TimeLimit,
	solver.Canceled,
	solver.Diverged,
	solver.Failure,
	solver.NotTerminated,
}

// rank returns s's place in severity.
func rank(s solver.Status) int {
	for i, t := range severity {
		if t == s {
			return i
		}
	}
	return len(severity)
}

// mergeResults merges the results of the solves of a split batch's parts,
// in order, into the result of the batch, whose point is x (the parts'
// points one after the other) and whose solves took wall together:
//
//   - Status is the most severe of the parts' (Success only if every part
//     succeeded), Residual and Tol the largest;
//   - Stats.Iterations, Calls and Samples are the largest of the parts':
//     the parts evaluate concurrently, each on its share of the batch, so
//     that the k-th evaluations of all parts make one evaluation of the
//     whole batch; the trace's k-th point merges the parts' k-th points
//     (a part's last once it has stopped) the same way, with the largest
//     residual, and is nil if a part has none;
//   - the Certificate, nil if a part has none, bounds the batch's residual
//     in the Batched norm (the largest per-example norm) by the largest of
//     the parts' bounds; its failure probability is at most the sum of
//     theirs (a union bound); its Samples and Calls are the largest of
//     theirs, as the Stats' are. Its Rule is the parts' rule when they agree;
//     otherwise RuleEstimate if any part's is an estimate, and else the
//     first rule that is not exact.
func mergeResults(rs []*solver.Result, x []float64, wall time.Duration) *solver.Result {
	m := &solver.Result{X: x, Status: rs[0].Status, Stats: solver.Stats{Wall: wall}}
	for i, r := range rs {
		if i == 0 {
			m.Residual, m.Tol = r.Residual, r.Tol
		}
		m.Residual = max(m.Residual, r.Residual)
		m.Tol = max(m.Tol, r.Tol)
		if rank(r.Status) > rank(m.Status) {
			m.Status = r.Status
		}
		m.Stats.Iterations = max(m.Stats.Iterations, r.Stats.Iterations)
		m.Stats.Calls = max(m.Stats.Calls, r.Stats.Calls)
		m.Stats.Samples = max(m.Stats.Samples, r.Stats.Samples)
	}
	m.Stats.Trace = mergeTraces(rs)
	m.Certificate = mergeCertificates(rs)
	return m
}

// mergeTraces merges the parts' residual traces (see mergeResults).
func mergeTraces(rs []*solver.Result) []solver.TracePoint {
	n := 0
	for _, r := range rs {
		if len(r.Stats.Trace) == 0 {
			return nil
		}
		n = max(n, len(r.Stats.Trace))
	}
	t := make([]solver.TracePoint, n)
	for k := range t {
		p := &t[k]
		for _, r := range rs {
			q := r.Stats.Trace[min(k, len(r.Stats.Trace)-1)]
			p.Iter = max(p.Iter, q.Iter)
			p.Calls = max(p.Calls, q.Calls)
			p.Samples = max(p.Samples, q.Samples)
			p.Residual = max(p.Residual, q.Residual)
			p.Elapsed = max(p.Elapsed, q.Elapsed)
		}
	}
	return t
}

// mergeCertificates merges the parts' certificates (see mergeResults).
func mergeCertificates(rs []*solver.Result) *solver.Certificate {
	if rs[0].Certificate == nil {
		return nil
	}
	m := &solver.Certificate{Rule: rs[0].Certificate.Rule, Own: true}
	per := true
	for _, r := range rs {
		c := r.Certificate
		if c == nil {
			return nil
		}
		m.Estimate = max(m.Estimate, c.Estimate)
		m.Bound = max(m.Bound, c.Bound)
		m.Delta += c.Delta
		m.Samples = max(m.Samples, c.Samples)
		m.Calls = max(m.Calls, c.Calls)
		m.Own = m.Own && c.Own
		per = per && c.PerExample != nil
		if c.Rule == m.Rule {
			continue
		}
		switch {
		case !c.Rule.Rigorous() || !m.Rule.Rigorous():
			m.Rule = solver.RuleEstimate
		case m.Rule.Exact() && !c.Rule.Exact():
			m.Rule = c.Rule
		}
	}
	switch {
	case !m.Rule.Rigorous():
		m.Delta = math.NaN()
	case m.Rule.Exact():
		m.Delta = 0
	default:
		m.Delta = min(m.Delta, 1)
	}
	if per {
		for _, r := range rs {
			m.PerExample = append(m.PerExample, r.Certificate.PerExample...)
		}
	}
	return m
}
