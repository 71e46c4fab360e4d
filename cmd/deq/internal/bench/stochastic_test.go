package bench

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/solver"
)

// normOracle has T(x) = 0, so that the true residual of x is ‖x‖.
type normOracle struct{ n int }

func (o normOracle) Len() int            { return o.n }
func (o normOracle) Model() solver.Model { return solver.SamplewiseLipschitz }
func (o normOracle) Eval(dst, _ []float64, s solver.Sample) (int, error) {
	clear(dst)
	return s.Size, nil
}
func (o normOracle) EvalExact(dst, _ []float64) error { clear(dst); return nil }

func TestHitRecorderFirstHitsAndCurve(t *testing.T) {
	norm, err := solver.NewLP(2, 1)
	require.NoError(t, err)
	grid := []float64{1, 20, 50, 80, 100, 200}
	r, err := newHitRecorder(normOracle{1}, norm, []float64{1}, []float64{0.1, 0.01}, 0.01, grid)
	require.NoError(t, err)
	for _, p := range []struct {
		samples int64
		x       float64
	}{{10, 0.5}, {30, -0.05}, {60, 0.2}} {
		require.NoError(t, r.RecordPoint(solver.TracePoint{Samples: p.samples}, []float64{p.x}))
	}
	require.ErrorIs(t, r.RecordPoint(solver.TracePoint{Samples: 100}, []float64{0.009}), errReached)
	require.True(t, r.reached)
	r.finish()
	// ε = 0.1 first met at 30 samples (not again at 60), ε = 0.01 at 100.
	require.Equal(t, []float64{30, 100}, r.hits)
	// The residual of the last point recorded with at most B samples, the
	// start point's (1) before any record.
	require.Equal(t, []float64{1, 0.5, 0.05, 0.2, 0.009, 0.009}, r.curve)
}

func TestHitRecorderUnreached(t *testing.T) {
	norm, err := solver.NewLP(2, 1)
	require.NoError(t, err)
	r, err := newHitRecorder(normOracle{1}, norm, []float64{2}, []float64{0.1}, 0.1, []float64{1, 10})
	require.NoError(t, err)
	require.NoError(t, r.RecordPoint(solver.TracePoint{Samples: 5}, []float64{0.5}))
	r.finish()
	require.True(t, math.IsInf(r.hits[0], 1))
	require.Equal(t, []float64{2, 0.5}, r.curve)
}

// detNormOracle is normOracle with an exact (deterministic) oracle, so that
// every certificate is exact and rigorous.
type detNormOracle struct{ normOracle }

func (detNormOracle) Model() solver.Model { return solver.Deterministic }

// TestCertRecorderLetsOwnBoundStop: when the bench certifies the point at
// which a method with its own rigorous bound (VR-GHAL) may stop with
// Success, the recorder lets the solve go on to that check (so that the
// method's own samples count alone) and stops the run at the next point;
// a baseline is stopped at once.
func TestCertRecorderLetsOwnBoundStop(t *testing.T) {
	norm, err := solver.NewLP(2, 1)
	require.NoError(t, err)
	s, err := Config{Sections: []string{sectionStochastic}, Eps: []float64{0.01}}.withDefaults()
	require.NoError(t, err)
	o := detNormOracle{normOracle{1}}
	for _, vr := range []bool{true, false} {
		hit, err := newHitRecorder(o, norm, []float64{1}, s.Eps, 0.01, []float64{1})
		require.NoError(t, err)
		r := newCertRecorder(context.Background(), hit, solver.Problem{Oracle: o, Norm: norm}, s, task{}, methodSpec{vr: vr, perEps: true})
		require.NoError(t, r.RecordPoint(solver.TracePoint{Samples: 10}, []float64{0.5}))
		err = r.RecordPoint(solver.TracePoint{Samples: 20}, []float64{0.005})
		require.Equal(t, 21.0, r.cert[0], "the method's samples and the exact certificate's one evaluation")
		if vr {
			require.NoError(t, err)
			require.ErrorIs(t, r.RecordPoint(solver.TracePoint{Samples: 30}, []float64{0.004}), errReached)
			require.Equal(t, 21.0, r.cert[0])
		} else {
			require.ErrorIs(t, err, errReached)
		}
	}
}

func TestSampleGrid(t *testing.T) {
	g := sampleGrid(1000)
	require.Equal(t, 1.0, g[0])
	require.Equal(t, 1000.0, g[len(g)-1])
	require.Len(t, g, 25) // 10^{i/8}, i < 24, then the budget
	for i := 1; i < len(g); i++ {
		require.Greater(t, g[i], g[i-1])
	}
}

// tinyConfig is a configuration small enough for unit tests.
func tinyConfig(sections ...string) Config {
	return Config{
		Sections: sections, Seeds: 2, Eps: []float64{0.1, 0.03}, BudgetFactor: 30,
		SigmaDraws: 200, OverheadRuns: 1, TimeTarget: 2 * time.Millisecond, Shape: report.Shape{Batch: 4, Hidden: 8, Input: 8},
	}
}

// TestCountIsSmallestBudget checks the meaning of a count against the
// solver itself: under a budget of exactly the count, the method returns a
// point whose true residual meets ε; one sample less, it does not.
func TestCountIsSmallestBudget(t *testing.T) {
	cfg := tinyConfig(sectionStochastic)
	cfg.Eps, cfg.BudgetFactor, cfg.StartDistance = []float64{0.1, 0.05, 0.02}, 3000, 0.3
	s, err := cfg.withDefaults()
	require.NoError(t, err)
	c, err := calibrate(specByName(t, "shift"), 4, 500, s.NoiseLevel, s.StartDistance)
	require.NoError(t, err)
	budget := s.budget()
	grid := sampleGrid(budget)
	checked := map[string]int{}
	for m, ms := range methodSpecs() {
		// Anytime methods run once to the smallest ε; the others, which
		// run once per ε, are checked at every ε.
		first := len(s.Eps) - 1
		if ms.perEps {
			first = 0
		}
		for te := first; te < len(s.Eps); te++ {
			tk := task{method: m, eps: te, seed: 1}
			out, err := runTask(context.Background(), s, c, ms, tk, budget, grid)
			require.NoError(t, err, ms.name)
			for e, eps := range s.Eps {
				if math.IsInf(out.hits[e], 1) || (ms.perEps && e != tk.eps) || eps >= c.r0 {
					continue
				}
				h := int64(out.hits[e])
				for _, b := range []int64{h, h - 1} {
					o, in, err := c.build()
					require.NoError(t, err)
					st := runSettings(s, tk, budget)
					st.MaxSamples = b
					res, err := solver.Solve(context.Background(), solver.Problem{Oracle: declaring(o), Norm: in.norm}, in.x0, st, ms.make(c, s, s.Eps[tk.eps]))
					require.NoError(t, err)
					tx := make([]float64, len(res.X))
					require.NoError(t, o.EvalExact(tx, res.X))
					r := dist(in.norm, tx, res.X)
					if b == h {
						require.LessOrEqual(t, r, eps, "%s, ε = %g, budget %d", ms.name, eps, b)
					} else {
						require.Greater(t, r, eps, "%s, ε = %g, budget %d", ms.name, eps, b)
					}
				}
				checked[ms.name]++
			}
		}
	}
	// Every method is checked at some accuracy.
	require.Len(t, checked, len(methodSpecs()), "%v", checked)
}

func TestRunReproducibleAcrossWorkers(t *testing.T) {
	cfg := tinyConfig(sectionStochastic)
	cfg.Workers = 1
	a, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	cfg.Workers = 3
	b, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, a.Stochastic.Problems, len(problemSpecs()))
	floor := func(eps float64) float64 { return 2 * 0.01 * math.Log(20) / (eps * eps) }
	for i, pa := range a.Stochastic.Problems {
		pb := b.Stochastic.Problems[i]
		require.Equal(t, pa.Name, pb.Name)
		require.Len(t, pa.Methods, 2*len(methodSpecs()), "every method twice: to a true and to a certified ε")
		for e, eps := range pa.Eps {
			require.InEpsilon(t, floor(eps), pa.Floor[e], 1e-9)
		}
		for j, ma := range pa.Methods {
			mb := pb.Methods[j]
			require.Empty(t, ma.NotApplicable, "every problem is samplewise-Lipschitz")
			require.Equal(t, ma.Statuses, mb.Statuses, "%s %s", pa.Name, ma.Method)
			for e := range ma.Eps {
				require.Len(t, ma.Eps[e].Samples, 2)
				require.Equal(t, numbersString(ma.Eps[e].Samples), numbersString(mb.Eps[e].Samples), "%s %s ε = %g", pa.Name, ma.Method, ma.Eps[e].Eps)
			}
		}
	}
	// A subset of the problems reproduces their counts.
	cfg.Problems = []string{"shift"}
	sub, err := Run(context.Background(), cfg)
	require.NoError(t, err)
	require.Len(t, sub.Stochastic.Problems, 1)
	var full report.ProblemResult
	for _, pr := range a.Stochastic.Problems {
		if pr.Name == "shift" {
			full = pr
		}
	}
	for j, m := range sub.Stochastic.Problems[0].Methods {
		for e := range m.Eps {
			require.Equal(t, numbersString(full.Methods[j].Eps[e].Samples), numbersString(m.Eps[e].Samples))
		}
	}
	names := []string{}
	for _, tg := range a.Targets {
		names = append(names, tg.Name)
	}
	require.Equal(t, []string{"speedup", "exponent"}, names)
}

// numbersString renders Numbers so that unreached (+Inf) entries compare.
func numbersString(ns []report.Number) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		b, _ := n.MarshalJSON()
		out[i] = string(b)
	}
	return out
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, tinyConfig(sectionStochastic))
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}

func TestParallelFirstError(t *testing.T) {
	boom := errors.New("boom")
	err := parallel(context.Background(), 3, 50, func(ctx context.Context, i int) error {
		if i == 7 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.NoError(t, parallel(context.Background(), 2, 0, func(context.Context, int) error { return boom }))
}
