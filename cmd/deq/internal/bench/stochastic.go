package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/solver"
)

// errReached stops a run once its true residual reaches the target.
var errReached = errors.New("bench: target accuracy reached")

// hitRecorder is a solver.PointRecorder that measures the true residual of
// every recorded point with the exact operator. It notes the samples drawn
// when each accuracy is first reached, keeps the residual against samples on
// a grid, and stops the run once the target is reached.
type hitRecorder struct {
	exact    solver.Exact
	norm     solver.Norm
	tx, diff []float64
	eps      []float64
	hits     []float64 // samples at the first hit of eps[i]; +Inf if none
	target   float64
	reached  bool
	grid     []float64 // sample counts, ascending
	curve    []float64 // curve[g]: residual of the last point recorded with at most grid[g] samples
	gi       int
	last     float64 // residual of the last recorded point (of x0 before any)
	err      error   // a failure of the exact operator
}

var _ solver.PointRecorder = (*hitRecorder)(nil)

func newHitRecorder(o exactOracle, norm solver.Norm, x0, eps []float64, target float64, grid []float64) (*hitRecorder, error) {
	n := o.Len()
	r := &hitRecorder{
		exact: o, norm: norm, tx: make([]float64, n), diff: make([]float64, n),
		eps: eps, hits: make([]float64, len(eps)), target: target,
		grid: grid, curve: make([]float64, len(grid)),
	}
	for i := range r.hits {
		r.hits[i] = math.Inf(1)
	}
	var err error
	r.last, err = r.residual(x0)
	return r, err
}

// residual returns ‖T(x) − x‖ with the exact operator.
func (r *hitRecorder) residual(x []float64) (float64, error) {
	if err := r.exact.EvalExact(r.tx, x); err != nil {
		return math.NaN(), err
	}
	for i := range r.diff {
		r.diff[i] = r.tx[i] - x[i]
	}
	return r.norm.Norm(r.diff), nil
}

// Record implements solver.Recorder; Solve calls RecordPoint instead.
func (r *hitRecorder) Record(solver.TracePoint) error {
	return errors.New("bench: hitRecorder needs the recorded point")
}

// RecordPoint implements solver.PointRecorder.
func (r *hitRecorder) RecordPoint(p solver.TracePoint, x []float64) error {
	res, err := r.residual(x)
	if err != nil {
		r.err = err
		return err
	}
	s := float64(p.Samples)
	r.fill(s)
	r.last = res
	for i, e := range r.eps {
		if math.IsInf(r.hits[i], 1) && res <= e {
			r.hits[i] = s
		}
	}
	if res <= r.target {
		r.reached = true
		return errReached
	}
	return nil
}

// fill sets the grid points below s samples to the last residual.
func (r *hitRecorder) fill(s float64) {
	for r.gi < len(r.grid) && r.grid[r.gi] < s {
		r.curve[r.gi] = r.last
		r.gi++
	}
}

// finish carries the last residual to the rest of the grid.
func (r *hitRecorder) finish() { r.fill(math.Inf(1)) }

// sampleGrid returns sample counts from 1 to budget, eight per decade.
func sampleGrid(budget int64) []float64 {
	var g []float64
	for i := 0; ; i++ {
		v := math.Pow(10, float64(i)/8)
		if v >= float64(budget) {
			return append(g, float64(budget))
		}
		g = append(g, v)
	}
}

// task is one run of the stochastic section.
type task struct {
	prob, method, eps, seed int
}

// outcome is what one run measured.
type outcome struct {
	hits []float64
	// cert holds the samples to a certified ε (see certRecorder); +Inf if
	// never certified.
	cert    []float64
	curve   []float64
	status  string
	seconds float64
}

// stochastic runs the stochastic section.
func stochastic(ctx context.Context, s *settings) (*report.StochasticReport, error) {
	start := time.Now()
	methods := methodSpecs()
	var cals []*calibration
	for i, sp := range problemSpecs() {
		if len(s.Problems) > 0 && !slices.Contains(s.Problems, sp.name) {
			continue
		}
		// The seed depends on the problem's place in the full list, so
		// that a subset reproduces the same instances.
		c, err := calibrate(sp, deriveSeed(s.Seed, 1, uint64(i)), s.SigmaDraws, s.NoiseLevel, s.StartDistance)
		if err != nil {
			return nil, err
		}
		cals = append(cals, c)
		s.logf("stochastic: %s: len %d, κ = %.3g, σ̂ = %.4g, scale %.4g, ‖T(x0) − x0‖ = %.3g, ‖A‖ = %.3g", sp.name, c.len, c.kappa, c.sigmaNative, c.scale, c.r0, c.lipschitz)
	}
	budget := s.budget()
	grid := sampleGrid(budget)
	last := len(s.Eps) - 1
	var tasks []task
	for p, c := range cals {
		for m, ms := range methods {
			if ms.needs > c.model {
				continue
			}
			for e := last; e >= 0; e-- {
				if e != last && !ms.perEps {
					continue
				}
				for k := range s.Seeds {
					tasks = append(tasks, task{prob: p, method: m, eps: e, seed: k})
				}
			}
		}
	}
	outs := make([]outcome, len(tasks))
	progress := newGroupProgress(s, tasks, cals, methods)
	err := parallel(ctx, s.Workers, len(tasks), func(ctx context.Context, i int) error {
		t := tasks[i]
		o, err := runTask(ctx, s, cals[t.prob], methods[t.method], t, budget, grid)
		if err != nil {
			return fmt.Errorf("bench: %s on %s, seed %d: %w", methods[t.method].name, cals[t.prob].spec.name, t.seed, err)
		}
		outs[i] = o
		progress.done(t, o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep := &report.StochasticReport{}
	certOuts := make([]outcome, len(outs))
	for i, o := range outs {
		certOuts[i] = o
		certOuts[i].hits = o.cert
	}
	for p, c := range cals {
		pr := problemResult(s, c, budget)
		for m, ms := range methods {
			pr.Methods = append(pr.Methods, methodResult(s, c, ms, p, m, tasks, outs, grid))
		}
		// The same runs, counted to a certified ε (see certRecorder).
		for m, ms := range methods {
			cs := ms
			cs.name = certifiedName(ms.name)
			pr.Methods = append(pr.Methods, methodResult(s, c, cs, p, m, tasks, certOuts, grid))
		}
		rep.Problems = append(rep.Problems, pr)
	}
	for _, o := range outs {
		if o.status == solver.TimeLimit.String() {
			rep.TimeLimited++
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// runTask runs one method on one problem from one seed.
func runTask(ctx context.Context, s *settings, c *calibration, ms methodSpec, t task, budget int64, grid []float64) (outcome, error) {
	o, in, err := c.build()
	if err != nil {
		return outcome{}, err
	}
	target := s.Eps[t.eps]
	do := declaring(o)
	hr, err := newHitRecorder(do, in.norm, in.x0, s.Eps, target, grid)
	if err != nil {
		return outcome{}, err
	}
	st := runSettings(s, t, budget)
	rec := newCertRecorder(ctx, hr, solver.Problem{Oracle: do, Norm: in.norm}, s, t, ms)
	st.Recorder = rec
	res, err := solver.Solve(ctx, solver.Problem{Oracle: do, Norm: in.norm}, in.x0, st, ms.make(c, s, target))
	if err != nil {
		return outcome{}, err
	}
	if hr.err != nil {
		return outcome{}, fmt.Errorf("exact operator: %w", hr.err)
	}
	if rec.err != nil {
		return outcome{}, fmt.Errorf("certificate: %w", rec.err)
	}
	if res.Status == solver.Success {
		// Success is a rigorous bound ≤ Tol = target at the last point.
		rec.cert[t.eps] = math.Min(rec.cert[t.eps], float64(res.Stats.Samples))
	}
	hr.finish()
	out := outcome{hits: hr.hits, cert: rec.cert, curve: hr.curve, status: res.Status.String(), seconds: res.Stats.Wall.Seconds()}
	if rec.done() {
		out.status = "certified"
	} else if hr.reached {
		out.status = "reached"
	}
	if res.Status == solver.Canceled {
		return out, ctx.Err()
	}
	return out, nil
}

// runSettings returns the solver settings of task t, without a recorder.
// VR-GHAL gets Tol = its target ε, so that its own rigorous bound stops
// it with Success (see certRecorder).
func runSettings(s *settings, t task, budget int64) *solver.Settings {
	tol := s.epsMin() * 1e-6
	if methodSpecs()[t.method].vr {
		tol = s.Eps[t.eps]
	}
	return &solver.Settings{
		// The baselines' own stopping rules compare estimates with Tol;
		// keep them out of the way so that the true residual decides.
		Tol:        tol,
		MaxIter:    1 << 20,
		MaxSamples: budget,
		MaxTime:    s.MaxRunTime,
		Seed:       deriveSeed(s.Seed, 2, uint64(t.seed)),
		NoTrace:    true,
		Certify:    solver.CertifySettings{Skip: true},
	}
}

// problemResult describes a calibrated problem.
func problemResult(s *settings, c *calibration, budget int64) report.ProblemResult {
	pr := report.ProblemResult{
		Name: c.spec.name, Summary: c.spec.summary, Len: c.len, Norm: c.norm, Model: c.model.String(),
		Gamma: c.gamma, Terms: c.terms, Kappa: c.kappa, SigmaNative: c.sigmaNative, SigmaL2: report.Number(math.NaN()),
		Scale: c.scale, Sigma: c.sigma(), R0: c.r0, Dist0: c.dist0, ExactLipschitz: report.Number(c.lipschitz), Eps: s.Eps, Budget: budget,
		FixedPoint: "computed by Picard iteration on the exact operator to a relative residual of 1e-13",
	}
	if c.sigmaL2 > 0 {
		pr.SigmaL2 = report.Number(c.sigmaL2)
	}
	if c.xstarKnown {
		pr.FixedPoint = "exact, from package problems (LU solve or policy iteration)"
	}
	for _, e := range s.Eps {
		pr.Floor = append(pr.Floor, c.floor(e, s.Delta))
	}
	return pr
}

// methodResult aggregates the runs of method m on problem p.
func methodResult(s *settings, c *calibration, ms methodSpec, p, m int, tasks []task, outs []outcome, grid []float64) report.MethodResult {
	mr := report.MethodResult{
		Method: ms.name, VRGHAL: ms.vr, PerEps: ms.perEps, Settings: ms.settings(c, s),
		Slope: report.Number(math.NaN()), Statuses: map[string]int{},
	}
	if ms.needs > c.model {
		mr.NotApplicable = fmt.Sprintf("needs an oracle model %v or stronger; the problem's is %v", ms.needs, c.model)
		return mr
	}
	last := len(s.Eps) - 1
	samples := make([][]float64, len(s.Eps))
	curves := make([][]float64, len(grid))
	for i, t := range tasks {
		if t.prob != p || t.method != m {
			continue
		}
		o := outs[i]
		mr.Runs++
		mr.Seconds += o.seconds
		mr.Statuses[o.status]++
		for e := range s.Eps {
			if t.eps == e || (!ms.perEps && t.eps == last) {
				samples[e] = append(samples[e], o.hits[e])
			}
		}
		if t.eps == last {
			for g, v := range o.curve {
				curves[g] = append(curves[g], v)
			}
		}
	}
	var inv, med []float64 // the accuracies below R0 for the slope
	for e, eps := range s.Eps {
		er := report.EpsResult{Eps: eps, Floor: c.floor(eps, s.Delta)}
		for _, v := range samples[e] {
			er.Samples = append(er.Samples, report.Number(v))
			if !math.IsInf(v, 1) {
				er.Reached++
			}
		}
		md, p90 := quantile(samples[e], 0.5), quantile(samples[e], 0.9)
		er.Median, er.P90 = report.Number(md), report.Number(p90)
		er.RatioToFloor = report.Number(md / er.Floor)
		mr.Eps = append(mr.Eps, er)
		if eps < c.r0 {
			inv = append(inv, 1/eps)
			med = append(med, md)
		}
	}
	slope, n := fitSlope(inv, med)
	mr.Slope, mr.SlopePoints = report.Number(slope), n
	mr.Curve.Budgets = grid
	for _, vs := range curves {
		mr.Curve.Median = append(mr.Curve.Median, report.Number(quantile(vs, 0.5)))
		mr.Curve.P10 = append(mr.Curve.P10, report.Number(quantile(vs, 0.1)))
		mr.Curve.P90 = append(mr.Curve.P90, report.Number(quantile(vs, 0.9)))
	}
	return mr
}

// groupProgress logs a line when all runs of a (problem, method) pair are
// done.
type groupProgress struct {
	s       *settings
	cals    []*calibration
	methods []methodSpec
	mu      sync.Mutex
	left    map[[2]int]int
	reached map[[2]int]int
	secs    map[[2]int]float64
}

func newGroupProgress(s *settings, tasks []task, cals []*calibration, methods []methodSpec) *groupProgress {
	g := &groupProgress{s: s, cals: cals, methods: methods, left: map[[2]int]int{}, reached: map[[2]int]int{}, secs: map[[2]int]float64{}}
	for _, t := range tasks {
		g.left[[2]int{t.prob, t.method}]++
	}
	return g
}

func (g *groupProgress) done(t task, o outcome) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := [2]int{t.prob, t.method}
	g.left[k]--
	g.secs[k] += o.seconds
	if o.status == "reached" {
		g.reached[k]++
	}
	if g.left[k] == 0 {
		g.s.logf("stochastic: %s %s: %d runs reached their target, %.1f s", g.cals[t.prob].spec.name, g.methods[t.method].name, g.reached[k], g.secs[k])
	}
}

// parallel calls f(ctx, i) for i in [0, n) on the given number of workers
// and returns the first error, canceling the others.
func parallel(ctx context.Context, workers, n int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range max(1, min(workers, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
loop:
	for i := range n {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break loop
		}
	}
	close(jobs)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
