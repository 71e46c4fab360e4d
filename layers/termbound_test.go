package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/deqgo/deq/solver"
)

// termCell returns a stochastic cell of kind "meanfield" or "experts"
// with M terms, 2 rows of 3 hidden features and 2 inputs per row.
func termCell(t *testing.T, kind string, act Activation, m int, seed uint64) Cell {
	t.Helper()
	var c Cell
	var err error
	if kind == "experts" {
		c, err = NewExperts(ExpertsConfig{Hidden: 3, Input: 2, Experts: m, Rows: 2, Activation: act, Seed: seed})
	} else {
		c, err = NewMeanField(MeanFieldConfig{Hidden: 3, Input: 2, Units: m, Rows: 2, Activation: act, Seed: seed})
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// termBoundCase builds the evaluator of a termCell for 2 examples, its
// input set, and a random state z, from seed.
func termBoundCase(t *testing.T, kind string, act Activation, m int, seed uint64) (Evaluator, []float64) {
	t.Helper()
	e, err := termCell(t, kind, act, m, seed).Evaluator(2)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float64, 2*2*2)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	if err := e.SetInput(x); err != nil {
		t.Fatal(err)
	}
	z := make([]float64, e.Len())
	for i := range z {
		z[i] = 2 * rng.NormFloat64()
	}
	return e, z
}

// termNorms returns the per-example ℓ2 and ℓ∞ norms under AggMax for a
// 2-example MeanField state of 2×3 rows.
func termNorms() []solver.Norm {
	l2, _ := solver.NewLP(2, 6)
	linf, _ := solver.NewLInf(6)
	return []solver.Norm{
		&solver.Batched{Example: l2, Examples: 2, Agg: solver.AggMax},
		&solver.Batched{Example: linf, Examples: 2, Agg: solver.AggMax},
	}
}

// TestTermBounds: for both stochastic cells and activations, in ℓ2 and
// ℓ∞ per example, the declared bounds are at least the largest deviation
// of a term (EvalTerm) from the exact average and of a term's VJP
// (VJPTerm) from the exact VJP, and the terms average to EvalExact.
func TestTermBounds(t *testing.T) {
	for _, kind := range []string{"meanfield", "experts"} {
		for _, act := range []Activation{ReLU, Tanh} {
			e, z := termBoundCase(t, kind, act, 64, 3)
			tb := e.(solver.TermBound)
			te := e.(solver.TermEvaluator)
			vb := e.(VJPTermBounder)
			g := make([]float64, e.Len())
			for i := range g {
				g[i] = math.Sin(float64(i))
			}
			exact, exactVJP := make([]float64, e.Len()), make([]float64, e.Len())
			if err := e.EvalExact(exact, z); err != nil {
				t.Fatal(err)
			}
			if _, err := e.VJPHidden(exactVJP, z, g, solver.Sample{Size: e.Terms()}); err != nil {
				t.Fatal(err)
			}
			term, mean, diff := make([]float64, e.Len()), make([]float64, e.Len()), make([]float64, e.Len())
			for _, norm := range termNorms() {
				for _, vjp := range []bool{false, true} {
					b, ref := tb.TermBound(z, norm), exact
					if vjp {
						b, ref = vb.VJPTermBound(z, g, norm), exactVJP
					}
					worst := 0.0
					clear(mean)
					for m := range e.Terms() {
						var err error
						if vjp {
							err = vb.VJPTerm(term, z, g, m)
						} else {
							err = te.EvalTerm(term, z, m)
						}
						if err != nil {
							t.Fatal(err)
						}
						for i, v := range term {
							diff[i] = v - ref[i]
							mean[i] += v / float64(e.Terms())
						}
						worst = math.Max(worst, norm.Norm(diff))
					}
					if !(worst <= b) || math.IsInf(b, 1) {
						t.Errorf("%s %v %v vjp=%v: largest deviation %v exceeds the declared bound %v", kind, act, norm, vjp, worst, b)
					}
					for i := range mean {
						if math.Abs(mean[i]-ref[i]) > 1e-9*(1+math.Abs(ref[i])) {
							t.Fatalf("%s %v vjp=%v: mean of the terms %v ≠ exact %v at %d", kind, act, vjp, mean[i], ref[i], i)
						}
					}
					t.Logf("%s %v %v vjp=%v: largest deviation %.3g, bound %.3g", kind, act, norm, vjp, worst, b)
				}
			}
		}
	}
}

// TestSampledCertificateCoverage draws 400 sampled certificates per
// cell, activation, norm and δ ∈ {0.05, 0.01} on a MeanField cell of
// M = 4096 units and an Experts cell of M = 1024 experts (a Solve whose start point meets a loose tolerance, so
// that its certificate is drawn there from a first stage of 64 terms) and
// requires failures (Bound below the exact residual) ≤ δN + 3√(Nδ(1 − δ)).
func TestSampledCertificateCoverage(t *testing.T) {
	const draws = 400
	for _, tc := range []struct {
		kind string
		act  Activation
		m    int
	}{{"meanfield", ReLU, 4096}, {"meanfield", Tanh, 4096}, {"experts", ReLU, 1024}, {"experts", Tanh, 1024}} {
		kind, act := tc.kind, tc.act
		e, z := termBoundCase(t, kind, act, tc.m, 5)
		tx := make([]float64, e.Len())
		if err := e.EvalExact(tx, z); err != nil {
			t.Fatal(err)
		}
		for _, norm := range termNorms() {
			diff := make([]float64, e.Len())
			for i := range diff {
				diff[i] = tx[i] - z[i]
			}
			res := norm.Norm(diff)
			for _, delta := range []float64{0.05, 0.01} {
				fails := 0
				for seed := range uint64(draws) {
					s := &solver.Settings{Tol: 1e3, Seed: seed, Certify: solver.CertifySettings{Sampled: true, Delta: delta, Samples: 64}}
					r, err := solver.Solve(t.Context(), solver.Problem{Oracle: e, Norm: norm}, z, s, solver.GrowingBatch{})
					if err != nil {
						t.Fatal(err)
					}
					c := r.Certificate
					if c == nil || c.Rule.Exact() || !c.Rigorous() {
						t.Fatalf("%s %v %v: certificate %+v, want a sampled one", kind, act, norm, c)
					}
					for i := range diff {
						diff[i] = 0
					}
					if err := e.EvalExact(diff, r.X); err != nil {
						t.Fatal(err)
					}
					for i := range diff {
						diff[i] -= r.X[i]
					}
					if norm.Norm(diff) > c.Bound {
						fails++
					}
				}
				lim := delta*draws + 3*math.Sqrt(draws*delta*(1-delta))
				if float64(fails) > lim {
					t.Errorf("%s %v %v δ=%v: %d/%d failures > %.1f", kind, act, norm, delta, fails, draws, lim)
				}
				t.Logf("%s %v %v δ=%v: %d/%d failures (residual at the start %.3g)", kind, act, norm, delta, fails, draws, res)
			}
		}
	}
}
