package problems

import (
	"math"
	"testing"

	"github.com/deqgo/deq/solver"
)

// TestMDPLarge: the suite's larger Bellman problem has at least 200
// state–action pairs, γ = 0.95, a generative-model oracle whose unit sample
// respects its declared almost-sure bound, and an exact fixed point from
// policy iteration.
func TestMDPLarge(t *testing.T) {
	p, err := New(Config{Name: "mdp-large", Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	n := p.Oracle.Len()
	if n < 200 || p.Gamma != 0.95 || p.Norm.String() != "linf" {
		t.Fatalf("len %d, γ %v, norm %v", n, p.Gamma, p.Norm)
	}
	if r, _ := p.Residual(p.FixedPoint); r > 1e-9 {
		t.Fatalf("residual of Q* = %g", r)
	}
	nb, ok := p.Oracle.(solver.NoiseBound)
	if !ok {
		t.Fatal("mdp-large declares no NoiseBound")
	}
	q := make([]float64, n)
	for i := range q {
		q[i] = math.Sin(float64(i))
	}
	b := nb.NoiseBound(q, p.Norm)
	tq, tau, d := make([]float64, n), make([]float64, n), make([]float64, n)
	if err := p.Oracle.EvalExact(tq, q); err != nil {
		t.Fatal(err)
	}
	for s := range uint64(200) {
		used, err := p.Oracle.Eval(tau, q, solver.Sample{Seed: s, Size: 1})
		if err != nil || used != 1 {
			t.Fatalf("used %d, err %v", used, err)
		}
		for i := range d {
			d[i] = tau[i] - tq[i]
		}
		if got := p.Norm.Norm(d); got > b*(1+1e-12) {
			t.Fatalf("unit deviation %g above the declared bound %g", got, b)
		}
	}
}
