package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/train"
)

// sectionRegime maps where a sampled forward pays: term evaluations and
// seconds per certified solve of a mean-field DEQ cell, sampled against
// exact solvers.
const sectionRegime = "regime"

// regimeGrid is the grid of the regime section.
type regimeGrid struct {
	hidden, input, batch int
	units                []int
	eps                  []float64
	seeds                int
}

// grid returns the regime section's grid: hidden 64, input 64, batch 128,
// M ∈ {1024, 4096, 16384, 65536}, ε ∈ {1e-1, 1e-2, 1e-3}, 3 seeds of the
// sampled methods; when Quick, hidden 16, batch 16, M ∈ {256, 1024},
// ε ∈ {1e-1, 1e-2}, 2 seeds.
func (s *settings) regimeGrid() regimeGrid {
	if s.Quick {
		return regimeGrid{hidden: 16, input: 16, batch: 16, units: []int{256, 1024}, eps: []float64{1e-1, 1e-2}, seeds: 2}
	}
	return regimeGrid{hidden: 64, input: 64, batch: 128, units: []int{1024, 4096, 16384, 65536}, eps: []float64{1e-1, 1e-2, 1e-3}, seeds: 3}
}

// regimeCells are the kinds of cell of the regime section.
var regimeCells = []string{"fresh", "redundant", report.RegimeTrained}

// regimePrototypes is the number of prototype units of a redundant cell
// and regimeNoise the relative size of the noise around them.
const (
	regimePrototypes = 32
	regimeNoise      = 0.1
	// regimeInputScale is the standard deviation of the inputs' entries:
	// small enough that the injection xU + b (of norm about that of x)
	// does not swamp the recurrent average, so that a solver has work to
	// do beyond the start point.
	regimeInputScale = 0.1
)

// regime runs the regime section.
func regime(ctx context.Context, s *settings) (*report.RegimeReport, error) {
	g := s.regimeGrid()
	rep := &report.RegimeReport{Hidden: g.hidden, Input: g.input, Batch: g.batch, Seeds: g.seeds}
	if slices.Contains(regimeCells, report.RegimeTrained) {
		tr, err := s.regimeTrainingReport(g)
		if err != nil {
			return nil, err
		}
		rep.Trained = tr
	}
	for _, kind := range regimeCells {
		for _, m := range g.units {
			rows, err := regimeCell(ctx, s, g, kind, m)
			if err != nil {
				return nil, err
			}
			rep.Rows = append(rep.Rows, rows...)
		}
	}
	return rep, nil
}

// newRegimeCell returns the MeanField cell of kind with m units: freshly
// initialised, or with its units replaced by regimePrototypes prototypes
// (drawn as a fresh cell's) plus regimeNoise times as much noise, then
// projected.
func newRegimeCell(g regimeGrid, kind string, m int, seed uint64) (*layers.MeanField, error) {
	c, err := layers.NewMeanField(layers.MeanFieldConfig{Hidden: g.hidden, Input: g.input, Units: m, Activation: layers.Tanh, Seed: seed})
	if err != nil || kind == "fresh" {
		return c, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x3c6ef372fe94f82b))
	h := g.hidden
	ps := c.Params() // U, b, W (h×M), c (1×M), V (M×h)
	w, cb, v := ps[2].Data(), ps[3].Data(), ps[4].Data()
	pw := make([]float64, h*regimePrototypes)
	pc := make([]float64, regimePrototypes)
	pv := make([]float64, regimePrototypes*h)
	sd := 1 / math.Sqrt(float64(h))
	for i := range pw {
		pw[i] = sd * rng.NormFloat64()
	}
	for i := range pc {
		pc[i] = rng.NormFloat64()
	}
	for i := range pv {
		pv[i] = sd * rng.NormFloat64()
	}
	for u := range m {
		q := u % regimePrototypes
		for i := range h {
			w[i*m+u] = pw[i*regimePrototypes+q] + regimeNoise*sd*rng.NormFloat64()
			v[u*h+i] = pv[q*h+i] + regimeNoise*sd*rng.NormFloat64()
		}
		cb[u] = pc[q] + regimeNoise*rng.NormFloat64()
	}
	return c, c.Project()
}

// regimeMethod is a solver of the regime section: sampled methods run on
// the cell's stochastic oracle, the others on its exact average. A method
// with certDelta > 0 stops on sampled certificates at that failure
// probability (solver.CertifySettings.Sampled) instead of exact passes.
type regimeMethod struct {
	name      string
	sampled   bool
	method    func(gamma float64) solver.Method
	certDelta float64
}

// regimeCertDelta is δ of the methods that stop on sampled certificates.
const regimeCertDelta = 0.05

func regimeMethods(s *settings) []regimeMethod {
	gb := func(g float64) solver.Method { return solver.GrowingBatch{Gamma: g} }
	vr := func(g float64) solver.Method { return solver.VRGHAL{Gamma: g, SampleScale: s.SampleScale} }
	return []regimeMethod{
		{solver.Broyden{}.String(), false, func(float64) solver.Method { return solver.Broyden{} }, 0},
		{solver.Anderson{}.String(), false, func(float64) solver.Method { return solver.Anderson{} }, 0},
		{solver.GrowingBatch{}.String(), true, gb, 0},
		{solver.VRGHAL{}.String(), true, vr, 0},
		{solver.GrowingBatch{}.String() + "+sampled-cert", true, gb, regimeCertDelta},
		{solver.VRGHAL{}.String() + "+sampled-cert", true, vr, regimeCertDelta},
	}
}

// regimeBudget is the sample budget of VR-GHAL, in exact calls.
const regimeBudget = 32

// regimeCell measures one cell at every accuracy.
func regimeCell(ctx context.Context, s *settings, g regimeGrid, kind string, m int) ([]report.RegimeRow, error) {
	seed := s.Seed + uint64(m)
	var (
		ev    layers.Evaluator
		gamma float64
		acc   float64
		err   error
	)
	if kind == report.RegimeTrained {
		ev, gamma, acc, err = regimeTrainedInput(ctx, s, g, m)
	} else {
		ev, gamma, err = regimeSyntheticInput(g, kind, m, seed)
	}
	if err != nil {
		return nil, err
	}
	n := ev.Len()
	z0 := make([]float64, n)
	if err := ev.(layers.Injector).Injection(z0); err != nil {
		return nil, err
	}
	norm, err := solver.NewLP(2, n)
	if err != nil {
		return nil, err
	}
	exact := solver.Problem{Oracle: layers.ExactOracle(ev), Norm: norm}
	sampled := solver.Problem{Oracle: ev, Norm: norm}
	ref, err := solver.Solve(ctx, exact, z0, &solver.Settings{Tol: 1e-10 * norm.Norm(z0), MaxIter: 500, NoTrace: true}, solver.Broyden{})
	if err != nil {
		return nil, err
	}
	if ref.Status != solver.Success {
		return nil, fmt.Errorf("bench: regime: %s cell, M = %d: Broyden's reference solve stopped with %v", kind, m, ref.Status)
	}
	zs := ref.X
	rv, err := layers.TermRelVar(ev, zs, 0, 0)
	if err != nil {
		return nil, err
	}
	f0, fs := make([]float64, n), make([]float64, n)
	if err := ev.EvalExact(f0, z0); err != nil {
		return nil, err
	}
	if err := ev.EvalExact(fs, zs); err != nil {
		return nil, err
	}
	zn := norm.Norm(zs)
	rho := regimeDist(norm, f0, fs) / regimeDist(norm, z0, zs)
	var out []report.RegimeRow
	for _, eps := range g.eps {
		row := report.RegimeRow{Cell: kind, Units: m, Eps: eps, TermRelVar: rv, Contraction: rho, TestAcc: acc}
		tol := eps * zn
		for _, rm := range regimeMethods(s) {
			runs := 1
			p := exact
			if rm.sampled {
				runs, p = g.seeds, sampled
			}
			var terms, secs []float64
			certified := 0
			for r := range runs {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				st := &solver.Settings{Tol: tol, MaxIter: 200, Seed: seed + uint64(r)*0x9e37, NoTrace: true}
				// Success is proven by the method's own exact evaluation
				// (VR-GHAL's, on this undeclared finite sum, checks its
				// sampled bound with one), which the table counts; the
				// certificate adds nothing to it.
				st.Certify.Skip = true
				if rm.certDelta > 0 {
					// The method stops on a sampled certificate, which
					// Stats counts, at probability 1 − δ.
					st.Certify.Sampled, st.Certify.Delta = true, rm.certDelta
				}
				if _, ok := rm.method(gamma).(solver.VRGHAL); ok {
					st.MaxIter = 60
					st.MaxSamples = regimeBudget * int64(m)
				}
				start := time.Now()
				res, err := solver.Solve(ctx, p, z0, st, rm.method(gamma))
				if err != nil {
					return nil, fmt.Errorf("bench: regime: %s on the %s cell, M = %d, ε = %g: %w", rm.name, kind, m, eps, err)
				}
				secs = append(secs, time.Since(start).Seconds())
				t := float64(res.Stats.Samples)
				ok := res.Status == solver.Success
				if cert := res.Certificate; cert != nil {
					t += float64(cert.Samples)
					ok = cert.Rigorous() && cert.Bound <= tol
				}
				terms = append(terms, t)
				if ok {
					certified++
				}
			}
			mt := median(terms)
			row.Methods = append(row.Methods, report.RegimeMethod{
				Method: rm.name, Sampled: rm.sampled, TermEvals: mt, Exact: mt / float64(m), Seconds: median(secs), Certified: certified, Runs: runs,
			})
		}
		s.logf("regime: %s cell, M = %d, ε = %g, σ²/‖z*‖² = %.3g: %s", kind, m, eps, rv, regimeLine(row))
		out = append(out, row)
	}
	return out, nil
}

// regimeSyntheticInput returns the evaluator of the fresh or redundant
// cell with m units on g.batch random inputs of standard deviation
// regimeInputScale, and the cell's bound γ̄.
func regimeSyntheticInput(g regimeGrid, kind string, m int, seed uint64) (layers.Evaluator, float64, error) {
	c, err := newRegimeCell(g, kind, m, seed)
	if err != nil {
		return nil, 0, err
	}
	ev, err := c.Evaluator(g.batch)
	if err != nil {
		return nil, 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x510e527fade682d1))
	x := make([]float64, g.batch*g.input)
	for i := range x {
		x[i] = regimeInputScale * rng.NormFloat64()
	}
	if err := ev.SetInput(x); err != nil {
		return nil, 0, err
	}
	return ev, c.Gamma(), nil
}

// regimeTraining returns the training of the regime section's trained
// cells: a mean-field classifier (hidden g.hidden, the encoder as wide, M
// units, the rest at the defaults of deq train --cell meanfield, Broyden
// forward) trained for one epoch on 4000 synthetic digits in batches of
// 128 (256 in batches of 64 when Quick), tested on g.batch held-out ones.
func (s *settings) regimeTraining(g regimeGrid) trainedSetup {
	if s.Quick {
		return trainedSetup{data: datasets.SyntheticName, trainLimit: 256, testLimit: g.batch, hidden: g.hidden, epochs: 1, batch: 64, lr: 2e-3}
	}
	return trainedSetup{data: datasets.SyntheticName, trainLimit: 4000, testLimit: g.batch, hidden: g.hidden, epochs: 1, batch: 128, lr: 2e-3}
}

// meanField returns the training configuration of ts for a mean-field
// cell of m units.
func (ts trainedSetup) meanField(m int, seed uint64) train.Config {
	c := ts.config(seed)
	c.Model.Cell, c.Model.Units = train.MeanFieldCell, m
	return c
}

// regimeTrainingReport describes the training of s.regimeTraining(g).
func (s *settings) regimeTrainingReport(g regimeGrid) (*report.RegimeTraining, error) {
	ts := s.regimeTraining(g)
	cfg, err := ts.meanField(g.units[0], 0).Defaults()
	if err != nil {
		return nil, err
	}
	return &report.RegimeTraining{
		Data: ts.data, Images: ts.trainLimit, Epochs: cfg.Epochs, BatchSize: cfg.BatchSize, LR: cfg.LR,
		Activation: cfg.Model.Activation.String(), Forward: cfg.Forward.Method.String(),
	}, nil
}

// regimeTrainedInput trains the mean-field classifier of
// s.regimeTraining with m units and returns its cell's evaluator on the
// encoder features of g.batch held-out images, the cell's bound γ̄ and the
// model's test accuracy on them.
func regimeTrainedInput(ctx context.Context, s *settings, g regimeGrid, m int) (layers.Evaluator, float64, float64, error) {
	ts := s.regimeTraining(g)
	d, err := ts.open(ctx, deriveSeed(s.Seed, 7))
	seed := deriveSeed(s.Seed, 7, uint64(m))
	if err != nil {
		return nil, 0, 0, err
	}
	tr, err := train.New(ts.meanField(m, seed), d.Train, d.Test, nil)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("bench: regime: training the M = %d cell: %w", m, err)
	}
	start := time.Now()
	res, err := tr.Run(ctx)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("bench: regime: training the M = %d cell: %w", m, err)
	}
	f := res.Final()
	if f == nil {
		return nil, 0, 0, fmt.Errorf("bench: regime: training the M = %d cell ran no epoch", m)
	}
	s.logf("regime: trained the M = %d cell on %d %s images in %.1fs: test accuracy %.4f", m, d.Train.Len(), d.Train.Name, time.Since(start).Seconds(), f.TestAcc)
	bt, err := datasets.NewBatcher(d.Test, g.batch, nil)
	if err != nil {
		return nil, 0, 0, err
	}
	if !bt.Next() {
		return nil, 0, 0, fmt.Errorf("bench: regime: no held-out batch of %d images", g.batch)
	}
	b := bt.Batch()
	model := tr.Model()
	e, err := model.Encode(b.X.RawMatrix().Data, b.Len())
	if err != nil {
		return nil, 0, 0, err
	}
	cell := model.Cell()
	ev, err := cell.Evaluator(b.Len())
	if err != nil {
		return nil, 0, 0, err
	}
	if err := ev.SetInput(e); err != nil {
		return nil, 0, 0, err
	}
	return ev, cell.Gamma(), f.TestAcc, nil
}

// regimeLine summarises a row for the progress output.
func regimeLine(r report.RegimeRow) string {
	var s string
	for _, m := range r.Methods {
		s += fmt.Sprintf("%s %.2f calls %.2fs (%d/%d)  ", m.Method, m.Exact, m.Seconds, m.Certified, m.Runs)
	}
	return s
}

// regimeDist returns ‖a − b‖.
func regimeDist(n solver.Norm, a, b []float64) float64 {
	d := make([]float64, len(a))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return n.Norm(d)
}

// median returns the median of v (the mean of the two middle values for
// an even count).
func median(v []float64) float64 {
	w := slices.Clone(v)
	slices.Sort(w)
	k := len(w)
	if k%2 == 1 {
		return w[k/2]
	}
	return (w[k/2-1] + w[k/2]) / 2
}
