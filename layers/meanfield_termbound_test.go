package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/deqgo/deq/solver"
)

// termBoundCase builds a MeanField evaluator of 2 examples with M units and
// activation act, its input set, and a random state z, from seed.
func termBoundCase(t *testing.T, act Activation, m int, seed uint64) (Evaluator, []float64) {
	t.Helper()
	c, err := NewMeanField(MeanFieldConfig{Hidden: 3, Input: 2, Units: m, Rows: 2, Activation: act, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Evaluator(2)
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

// TestMeanFieldTermBound: the declared bound is at least the largest
// deviation of a term (EvalTerm) from the exact average, for both
// activations and in ℓ2 and ℓ∞ per example, and EvalTerm agrees with the
// average: the mean of all M terms is EvalExact.
func TestMeanFieldTermBound(t *testing.T) {
	for _, act := range []Activation{ReLU, Tanh} {
		e, z := termBoundCase(t, act, 64, 3)
		tb := e.(solver.TermBound)
		te := e.(solver.TermEvaluator)
		exact := make([]float64, e.Len())
		if err := e.EvalExact(exact, z); err != nil {
			t.Fatal(err)
		}
		term, mean, diff := make([]float64, e.Len()), make([]float64, e.Len()), make([]float64, e.Len())
		for _, norm := range termNorms() {
			b := tb.TermBound(z, norm)
			worst := 0.0
			for i := range mean {
				mean[i] = 0
			}
			for m := range e.Terms() {
				if err := te.EvalTerm(term, z, m); err != nil {
					t.Fatal(err)
				}
				for i, v := range term {
					diff[i] = v - exact[i]
					mean[i] += v / float64(e.Terms())
				}
				worst = math.Max(worst, norm.Norm(diff))
			}
			if !(worst <= b) || math.IsInf(b, 1) {
				t.Errorf("%v %v: largest deviation %v exceeds the declared bound %v", act, norm, worst, b)
			}
			for i := range mean {
				if math.Abs(mean[i]-exact[i]) > 1e-9*(1+math.Abs(exact[i])) {
					t.Fatalf("%v: mean of the terms %v ≠ exact %v at %d", act, mean[i], exact[i], i)
				}
			}
			t.Logf("%v %v: largest deviation %.3g, bound %.3g", act, norm, worst, b)
		}
	}
}

// TestMeanFieldSampledCertificateCoverage draws 400 sampled certificates
// per activation, norm and δ ∈ {0.05, 0.01} on a MeanField cell of
// M = 4096 units (a Solve whose start point meets a loose tolerance, so
// that its certificate is drawn there from a first stage of 256 terms) and
// requires failures (Bound below the exact residual) ≤ δN + 3√(Nδ(1 − δ)).
func TestMeanFieldSampledCertificateCoverage(t *testing.T) {
	const draws = 400
	for _, act := range []Activation{ReLU, Tanh} {
		e, z := termBoundCase(t, act, 4096, 5)
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
					s := &solver.Settings{Tol: 1e3, Seed: seed, Certify: solver.CertifySettings{Sampled: true, Delta: delta, Samples: 256}}
					r, err := solver.Solve(t.Context(), solver.Problem{Oracle: e, Norm: norm}, z, s, solver.GrowingBatch{})
					if err != nil {
						t.Fatal(err)
					}
					c := r.Certificate
					if c == nil || c.Rule.Exact() || !c.Rigorous() {
						t.Fatalf("%v %v: certificate %+v, want a sampled one", act, norm, c)
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
					t.Errorf("%v %v δ=%v: %d/%d failures > %.1f", act, norm, delta, fails, draws, lim)
				}
				t.Logf("%v %v δ=%v: %d/%d failures (residual at the start %.3g)", act, norm, delta, fails, draws, res)
			}
		}
	}
}
