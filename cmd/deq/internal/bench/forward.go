package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/solver"
)

// Forward-section defaults.
const (
	// defaultForwardBatches and defaultForwardBatch are the number and size
	// of the test-set batches solved (2 of 100 when Quick).
	defaultForwardBatches = 10
	defaultForwardBatch   = 500
	// defaultForwardMaxIter caps every forward solve's iterations.
	defaultForwardMaxIter = 500
)

// forwardTols returns the relative residuals the forward section measures,
// 1e-2, 1e-3 and 1e-4.
func forwardTols() []float64 { return []float64{1e-2, 1e-3, 1e-4} }

// forwardMethod is a deterministic method of the forward section.
type forwardMethod struct {
	name string
	m    func(gamma float64) solver.Method
}

// forwardMethods returns the methods of the forward section, built by the
// solver registry: Picard, Anderson, Broyden, Halpern and GHAL.
func forwardMethods() []forwardMethod {
	var out []forwardMethod
	for _, m := range []solver.Method{solver.Picard{}, solver.Anderson{}, solver.Broyden{}, solver.Halpern{}, solver.GHAL{}} {
		info, err := solver.LookupMethod(m.String())
		if err != nil {
			panic(err) // every solver.Method is in the registry
		}
		out = append(out, forwardMethod{info.Name, func(g float64) solver.Method { return info.New(solver.MethodOptions{Gamma: g}) }})
	}
	return out
}

// firstHits records, for each relative tolerance, the oracle calls and time
// when a solve's relative residual first reached it, and the curve of
// relative residual against calls.
type firstHits struct {
	tols   []float64
	r0     float64
	calls  []float64
	secs   []float64
	curveX []float64
	curveY []float64
}

func newFirstHits(tols []float64) *firstHits {
	h := &firstHits{tols: tols, r0: math.NaN(), calls: make([]float64, len(tols)), secs: make([]float64, len(tols))}
	for i := range tols {
		h.calls[i], h.secs[i] = math.Inf(1), math.Inf(1)
	}
	return h
}

// Record implements solver.Recorder.
func (h *firstHits) Record(p solver.TracePoint) error {
	if math.IsNaN(h.r0) {
		h.r0 = p.Residual
	}
	rel := p.Residual / h.r0
	h.curveX = append(h.curveX, float64(p.Calls))
	h.curveY = append(h.curveY, rel)
	for i, t := range h.tols {
		if math.IsInf(h.calls[i], 1) && rel <= t {
			h.calls[i], h.secs[i] = float64(p.Calls), p.Elapsed.Seconds()
		}
	}
	return nil
}

// forward runs the forward section.
func forward(ctx context.Context, s *settings) (*report.ForwardReport, error) {
	start := time.Now()
	ts := s.forwardSetup()
	d, err := ts.open(ctx, s.Seed)
	if err != nil {
		return nil, err
	}
	path := ""
	if s.CacheDir != "" {
		path = s.CacheDir + "/" + report.ForwardModelName
	}
	model, cached, err := cachedModel(ctx, s, ts, d, path)
	if err != nil {
		return nil, err
	}
	cell := model.Cell()
	gamma := cell.Gamma()
	nb, bs := defaultForwardBatches, defaultForwardBatch
	if s.Quick {
		nb, bs = 2, 100
	}
	bt, err := datasets.NewBatcher(d.Test, bs, nil)
	if err != nil {
		return nil, err
	}
	tols := forwardTols()
	rep := &report.ForwardReport{
		Data: d.Test.Name, TrainData: d.Train.Name, Cell: model.Config.Cell.String(), Hidden: model.Config.Hidden, Epochs: ts.epochs,
		Gamma: gamma, Norm: model.Config.Norm.String(), Cached: cached, Tols: tols, MaxIter: defaultForwardMaxIter,
	}
	ms := forwardMethods()
	hits := make([][]*firstHits, len(ms))
	for b := 0; b < nb && bt.Next(); b++ {
		batch := bt.Batch()
		n := batch.Len()
		e, err := model.Encode(batch.X.RawMatrix().Data, n)
		if err != nil {
			return nil, err
		}
		ev, err := cell.Evaluator(n)
		if err != nil {
			return nil, err
		}
		if err := ev.SetInput(e); err != nil {
			return nil, err
		}
		sh := cell.Shape()
		ex, err := model.Config.Norm.Norm(sh.Rows, sh.Hidden)
		if err != nil {
			return nil, err
		}
		norm, err := solver.NewBatched(ex, n)
		if err != nil {
			return nil, err
		}
		rep.Batches, rep.BatchSize = rep.Batches+1, n
		for i, fm := range ms {
			h := newFirstHits(tols)
			st := &solver.Settings{
				Tol: tols[len(tols)-1], Relative: true, MaxIter: defaultForwardMaxIter,
				Recorder: h, NoTrace: true, Certify: solver.CertifySettings{Skip: true},
			}
			z0 := make([]float64, ev.Len())
			if _, err := solver.Solve(ctx, solver.Problem{Oracle: ev, Norm: norm}, z0, st, fm.m(gamma)); err != nil {
				return nil, fmt.Errorf("bench: forward %s on batch %d: %w", fm.name, b, err)
			}
			hits[i] = append(hits[i], h)
		}
	}
	for i, fm := range ms {
		r := report.ForwardMethod{Method: fm.name}
		for j := range tols {
			calls := make([]float64, len(hits[i]))
			secs := make([]float64, len(hits[i]))
			reached := 0
			for k, h := range hits[i] {
				calls[k], secs[k] = h.calls[j], h.secs[j]
				if !math.IsInf(h.calls[j], 1) {
					reached++
				}
			}
			r.Tols = append(r.Tols, report.ForwardTol{
				Tol: tols[j], Reached: reached, Calls: report.Number(quantile(calls, 0.5)), Seconds: report.Number(quantile(secs, 0.5)),
			})
		}
		if len(hits[i]) > 0 {
			r.Curve = report.Curve{Budgets: hits[i][0].curveX}
			for _, y := range hits[i][0].curveY {
				r.Curve.Median = append(r.Curve.Median, report.Number(y))
			}
		}
		s.logf("forward: %s: median calls to 1e-3: %v", fm.name, float64(r.Tols[1].Calls))
		rep.Methods = append(rep.Methods, r)
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}
