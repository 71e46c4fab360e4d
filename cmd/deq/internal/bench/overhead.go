package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/solver"
)

// timedOracle adds up the wall time spent in an oracle's Eval.
type timedOracle struct {
	o       solver.Oracle
	elapsed time.Duration
}

var _ solver.Oracle = (*timedOracle)(nil)

func (t *timedOracle) Len() int            { return t.o.Len() }
func (t *timedOracle) Model() solver.Model { return t.o.Model() }

func (t *timedOracle) Eval(dst, x []float64, s solver.Sample) (int, error) {
	start := time.Now()
	n, err := t.o.Eval(dst, x, s)
	t.elapsed += time.Since(start)
	return n, err
}

// overheadProblems names the problems of the overhead section.
var overheadProblems = []string{"deq-experts", "averaged"}

// overhead runs the overhead section: VR-GHAL under the problem's own oracle
// model solves each problem to an estimated residual of ε_min/2 within the
// stochastic section's budget, Config.OverheadRuns times, timing its oracle.
func overhead(ctx context.Context, s *settings) (*report.OverheadReport, error) {
	rep := &report.OverheadReport{}
	specs := problemSpecs()
	for _, name := range overheadProblems {
		i := slices.IndexFunc(specs, func(sp problemSpec) bool { return sp.name == name })
		sp := specs[i]
		c, err := calibrate(sp, deriveSeed(s.Seed, 1, uint64(i)), s.SigmaDraws, s.NoiseLevel, s.StartDistance)
		if err != nil {
			return nil, err
		}
		m := c.model
		method := solver.VRGHAL{Gamma: c.gamma, Delta: s.Delta, SampleScale: s.SampleScale, Model: m}
		r := report.OverheadResult{Problem: sp.name, Method: report.VRGHALName(m), Budget: s.budget(), Tol: s.epsMin() / 2, Runs: s.OverheadRuns}
		var oracle, total, frac, calls, samples []float64
		for run := range s.OverheadRuns {
			o, in, err := c.build()
			if err != nil {
				return nil, err
			}
			t := &timedOracle{o: o}
			st := &solver.Settings{
				Tol: r.Tol, MaxSamples: r.Budget, MaxTime: s.MaxRunTime,
				Seed: deriveSeed(s.Seed, 3, uint64(run)), NoTrace: true, Certify: solver.CertifySettings{Skip: true},
			}
			res, err := solver.Solve(ctx, solver.Problem{Oracle: t, Norm: in.norm}, in.x0, st, method)
			if err != nil {
				return nil, fmt.Errorf("bench: overhead on %s: %w", sp.name, err)
			}
			if res.Status == solver.Canceled {
				return nil, ctx.Err()
			}
			oracle = append(oracle, t.elapsed.Seconds())
			total = append(total, res.Stats.Wall.Seconds())
			f := math.NaN() // no oracle call fitted in the budget
			if t.elapsed > 0 {
				f = (res.Stats.Wall.Seconds() - t.elapsed.Seconds()) / t.elapsed.Seconds()
			}
			frac = append(frac, f)
			calls = append(calls, float64(res.Stats.Calls))
			samples = append(samples, float64(res.Stats.Samples))
		}
		r.Calls, r.Samples = int64(quantile(calls, 0.5)), int64(quantile(samples, 0.5))
		r.OracleSeconds, r.TotalSeconds = quantile(oracle, 0.5), quantile(total, 0.5)
		r.Overhead = quantile(frac, 0.5)
		s.logf("overhead: %s: oracle %.3g s of %.3g s, overhead %.1f%%", sp.name, r.OracleSeconds, r.TotalSeconds, 100*r.Overhead)
		rep.Problems = append(rep.Problems, r)
	}
	return rep, nil
}
