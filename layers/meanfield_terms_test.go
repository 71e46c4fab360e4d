package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/deqgo/deq/solver"
)

// TestMeanFieldTermBlocks: for both activations, EvalTerms and VJPTerms
// of a block of units (with a repeated index) write what EvalTerm and
// VJPTerm write for each unit, and refuse an index outside [0, M) and a
// dst of the wrong length.
func TestMeanFieldTermBlocks(t *testing.T) {
	for _, act := range []Activation{ReLU, Tanh} {
		e, z := termBoundCase(t, "meanfield", act, 64, 7)
		te := e.(solver.TermEvaluator)
		tes := e.(solver.TermsEvaluator)
		vb := e.(VJPTermBounder)
		vbs := e.(VJPTermsEvaluator)
		d := e.Len()
		g := make([]float64, d)
		for i := range g {
			g[i] = math.Cos(float64(i))
		}
		idx := []int{5, 0, 63, 5, 17}
		block, vjps := make([]float64, len(idx)*d), make([]float64, len(idx)*d)
		if err := tes.EvalTerms(block, z, idx); err != nil {
			t.Fatal(err)
		}
		if err := vbs.VJPTerms(vjps, z, g, idx); err != nil {
			t.Fatal(err)
		}
		one, vjp := make([]float64, d), make([]float64, d)
		for j, m := range idx {
			if err := te.EvalTerm(one, z, m); err != nil {
				t.Fatal(err)
			}
			if err := vb.VJPTerm(vjp, z, g, m); err != nil {
				t.Fatal(err)
			}
			for i := range d {
				if x, y := block[j*d+i], one[i]; math.Abs(x-y) > 1e-12*(1+math.Abs(y)) {
					t.Fatalf("%v term %d coordinate %d: block %v, single %v", act, m, i, x, y)
				}
				if x, y := vjps[j*d+i], vjp[i]; math.Abs(x-y) > 1e-12*(1+math.Abs(y)) {
					t.Fatalf("%v VJP %d coordinate %d: block %v, single %v", act, m, i, x, y)
				}
			}
		}
		if err := tes.EvalTerms(block, z, []int{0, 1, 2, 3, 64}); err == nil {
			t.Error("index 64 of 64 accepted")
		}
		if err := tes.EvalTerms(block[:d], z, idx); err == nil {
			t.Error("short dst accepted")
		}
		if err := vbs.VJPTerms(vjps, z, g, []int{-1, 0, 1, 2, 3}); err == nil {
			t.Error("index -1 accepted")
		}
	}
}

// benchTermBlocks measures, for a mean-field cell of M units, batch 128,
// hidden 64 (one row per example), the oracle work of a sampled
// certificate of n terms drawn in blocks of 64 (block) or one EvalTerm
// call each (single), against one exact pass (exact). b.N counts
// certificates (or passes); ns/op compares them directly.
func benchTermBlocks(b *testing.B, m int, mode string) {
	const batch, hidden, n = 128, 64, 4096
	c, err := NewMeanField(MeanFieldConfig{Hidden: hidden, Input: 16, Units: m, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	e, err := c.Evaluator(batch)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, batch*16)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	if err := e.SetInput(x); err != nil {
		b.Fatal(err)
	}
	d := e.Len()
	z := make([]float64, d)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	const blk = 64
	dst := make([]float64, blk*d)
	idx := make([]int, blk)
	tes, te := e.(solver.TermsEvaluator), e.(solver.TermEvaluator)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		switch mode {
		case "exact":
			if err := e.EvalExact(dst[:d], z); err != nil {
				b.Fatal(err)
			}
		case "block":
			for k := 0; k < n; k += blk {
				for j := range idx {
					idx[j] = rng.IntN(m)
				}
				if err := tes.EvalTerms(dst, z, idx); err != nil {
					b.Fatal(err)
				}
			}
		case "single":
			for range n {
				if err := te.EvalTerm(dst[:d], z, rng.IntN(m)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

func BenchmarkMeanFieldTerms16384Exact(b *testing.B)     { benchTermBlocks(b, 16384, "exact") }
func BenchmarkMeanFieldTerms16384Block4096(b *testing.B) { benchTermBlocks(b, 16384, "block") }
func BenchmarkMeanFieldTerms16384Single4096(b *testing.B) {
	benchTermBlocks(b, 16384, "single")
}
func BenchmarkMeanFieldTerms65536Exact(b *testing.B)     { benchTermBlocks(b, 65536, "exact") }
func BenchmarkMeanFieldTerms65536Block4096(b *testing.B) { benchTermBlocks(b, 65536, "block") }
func BenchmarkMeanFieldTerms65536Single4096(b *testing.B) {
	benchTermBlocks(b, 65536, "single")
}

// TestMeanTermBound: for both activations and several states, the
// second-moment bound on the units' average is at least the largest
// per-example ‖φ̄(z)_e‖_F (EvalExact minus the injection), and for ReLU
// at a wide cell it is below the average of the units' Cauchy–Schwarz
// bounds it replaces.
func TestMeanTermBound(t *testing.T) {
	for _, act := range []Activation{ReLU, Tanh} {
		for seed := range uint64(4) {
			e, z := termBoundCase(t, "meanfield", act, 256, 20+seed)
			mf := e.(*mfEval)
			exact := make([]float64, e.Len())
			if err := e.EvalExact(exact, z); err != nil {
				t.Fatal(err)
			}
			de := e.Len() / 2
			truth := 0.0
			for ex := range 2 {
				s := 0.0
				for i := ex * de; i < (ex+1)*de; i++ {
					d := exact[i] - mf.inj[i]
					s += d * d
				}
				truth = math.Max(truth, math.Sqrt(s))
			}
			if got := mf.meanTermBound(z); !(got >= truth) {
				t.Errorf("%v seed %d: mean bound %v below ‖φ̄_e‖ = %v", act, seed, got, truth)
			}
		}
	}
	c, err := NewMeanField(MeanFieldConfig{Hidden: 64, Input: 4, Units: 1024, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Evaluator(4)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, 4*4)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	if err := e.SetInput(x); err != nil {
		t.Fatal(err)
	}
	z := make([]float64, e.Len())
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	mf := e.(*mfEval)
	h, m := 64, 1024
	zs := largestExample(z, 4, 1, h, false)
	w, v, cc := c.w.Data(), c.v.Data(), c.c.Data()
	_, avg := termParts(m, func(u int) float64 {
		wn, vn := 0.0, 0.0
		for i := range h {
			wn += w[i*m+u] * w[i*m+u]
			vn += v[u*h+i] * v[u*h+i]
		}
		return (zs*math.Sqrt(wn) + math.Abs(cc[u])) * math.Sqrt(vn)
	})
	if got := mf.meanTermBound(z); !(got < avg/2) {
		t.Errorf("second-moment bound %v not below half the Cauchy–Schwarz average %v", got, avg)
	}
}

// TestMeanVJPBound: for both activations and several states and
// cotangents, the second-moment bound on the average VJP is at least the
// largest per-example Frobenius norm of the exact VJP (the average of
// VJPTerm over all units).
func TestMeanVJPBound(t *testing.T) {
	for _, act := range []Activation{ReLU, Tanh} {
		for seed := range uint64(4) {
			e, z := termBoundCase(t, "meanfield", act, 256, 40+seed)
			mf := e.(*mfEval)
			g := make([]float64, e.Len())
			rng := rand.New(rand.NewPCG(seed, 9))
			for i := range g {
				g[i] = rng.NormFloat64()
			}
			exact, one := make([]float64, e.Len()), make([]float64, e.Len())
			for u := range mf.c.m {
				if err := mf.VJPTerm(one, z, g, u); err != nil {
					t.Fatal(err)
				}
				for i, x := range one {
					exact[i] += x / float64(mf.c.m)
				}
			}
			de := e.Len() / 2
			truth := 0.0
			for ex := range 2 {
				s := 0.0
				for _, d := range exact[ex*de : (ex+1)*de] {
					s += d * d
				}
				truth = math.Max(truth, math.Sqrt(s))
			}
			if got := mf.meanVJPBound(g); !(got >= truth) {
				t.Errorf("%v seed %d: mean VJP bound %v below %v", act, seed, got, truth)
			}
		}
	}
}

// TestMeanBoundsFollowParameters: the second moments behind meanTermBound
// and meanVJPBound are kept between calls, and after a change of W, c or
// V (as an optimiser step makes) both bounds are those of a fresh
// evaluator of the changed cell, not of the cached moments.
func TestMeanBoundsFollowParameters(t *testing.T) {
	for _, p := range []struct {
		name  string
		param func(c *MeanField) *Param
	}{{"w", func(c *MeanField) *Param { return c.w }}, {"c", func(c *MeanField) *Param { return c.c }}, {"v", func(c *MeanField) *Param { return c.v }}} {
		e, z := termBoundCase(t, "meanfield", ReLU, 128, 60)
		mf := e.(*mfEval)
		g := make([]float64, e.Len())
		for i := range g {
			g[i] = math.Cos(float64(i))
		}
		before, beforeVJP := mf.meanTermBound(z), mf.meanVJPBound(g)
		for i, x := range p.param(mf.c).Data() {
			p.param(mf.c).Data()[i] = 3*x + 0.5
		}
		fresh, err := mf.c.Evaluator(2)
		if err != nil {
			t.Fatal(err)
		}
		want, wantVJP := fresh.(*mfEval).meanTermBound(z), fresh.(*mfEval).meanVJPBound(g)
		got, gotVJP := mf.meanTermBound(z), mf.meanVJPBound(g)
		for _, c := range []struct {
			what                string
			before, got, wanted float64
		}{{"term", before, got, want}, {"VJP", beforeVJP, gotVJP, wantVJP}} {
			if math.Abs(c.got-c.wanted) > 1e-12*c.wanted {
				t.Errorf("%s changed: %s bound %v after the change, a fresh evaluator's %v (before the change %v)", p.name, c.what, c.got, c.wanted, c.before)
			}
		}
		if p.name != "v" && !(math.Abs(want-before) > 1e-6*want) {
			t.Errorf("%s changed: the term bound did not move (%v before, %v after): the test does not exercise the cache", p.name, before, want)
		}
	}
}

// TestParamSnapshotReusesStorage: recording changed values of unchanged
// lengths allocates nothing, and the record follows the values.
func TestParamSnapshotReusesStorage(t *testing.T) {
	a, b := make([]float64, 64), make([]float64, 8)
	var s paramSnapshot
	if !s.changed(a, b) {
		t.Fatal("the first call reports no change")
	}
	if s.changed(a, b) {
		t.Fatal("unchanged values reported changed")
	}
	allocs := testing.AllocsPerRun(20, func() {
		a[3]++
		if !s.changed(a, b) {
			t.Fatal("a change went unnoticed")
		}
	})
	if allocs != 0 {
		t.Errorf("recording a change allocates %v times", allocs)
	}
}
