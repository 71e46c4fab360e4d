package solver

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// blockSum is a termSum that also evaluates blocks of terms, counting its
// EvalTerms calls.
type blockSum struct {
	*termSum
	blocks int
}

var _ TermsEvaluator = (*blockSum)(nil)

func (t *blockSum) EvalTerms(dst, x []float64, idx []int) error {
	t.blocks++
	d := len(x)
	for j, m := range idx {
		if err := t.EvalTerm(dst[j*d:(j+1)*d], x, m); err != nil {
			return err
		}
	}
	return nil
}

// TestSampledBlockCoverage is TestSampledCertificateCoverage for terms
// drawn in blocks (TermsEvaluator): 400 certificates per case, both rules'
// norms, δ ∈ {0.05, 0.01}, the adversarial term sets, failures ≤
// δN + 3√(Nδ(1 − δ)); and every certificate drew its terms in blocks.
func TestSampledBlockCoverage(t *testing.T) {
	const draws, m, d = 400, 1024, 4
	l2, _ := NewLP(2, d)
	linf, _ := NewLInf(d)
	for _, norm := range []Norm{l2, linf} {
		for _, kind := range []string{"normal", "outlier", "few-large", "low-spread"} {
			scale := 1.0
			if kind == "low-spread" {
				scale = 1000
			}
			bs := &blockSum{termSum: newTermSum(0, scale, termSet(kind, m, d, 11))}
			x := append([]float64(nil), bs.mean...)
			x[0] += 0.05
			truth := make([]float64, d)
			subInto(truth, bs.mean, x)
			res := norm.Norm(truth)
			for _, delta := range []float64{0.05, 0.01} {
				for _, n := range []int{64, 256, 768} {
					fails := 0
					rng := rand.New(rand.NewPCG(uint64(n), 5))
					for range draws {
						bs.blocks = 0
						c, _, err := sampledCertificate(context.Background(), bs, x, norm, math.Inf(1), delta, n, rng)
						if err != nil {
							t.Fatal(err)
						}
						if c == nil {
							t.Fatalf("%v %s n=%d: no certificate", norm, kind, n)
						}
						if want := (n + sampledBlock - 1) / sampledBlock; bs.blocks != want || c.Calls != int64(want) || c.Samples != int64(n) {
							t.Fatalf("%v %s n=%d: %d blocks, %d calls, %d samples; want %d blocks of %d terms", norm, kind, n, bs.blocks, c.Calls, c.Samples, want, n)
						}
						if c.Bound < res {
							fails++
						}
					}
					if lim := coverageLimit(draws, delta); float64(fails) > lim {
						t.Errorf("%v %s δ=%v n=%d: %d/%d failures > %.1f", norm, kind, delta, n, fails, draws, lim)
					}
				}
			}
		}
	}
}

// TestSampledBlockDistinct: without replacement, the terms of a block
// path certificate of n = M/2 terms are distinct (the permutation is
// shared across blocks).
func TestSampledBlockDistinct(t *testing.T) {
	const m, d = 1000, 2
	linf, _ := NewLInf(d)
	b := make([][]float64, m)
	for j := range b {
		b[j] = []float64{float64(j), 0}
	}
	bs := &blockSum{termSum: newTermSum(0, 1, b)}
	s, err := newSampler(context.Background(), bs, bs.mean, linf, RuleSampledSerfling, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.grow(m/2, 1e3); err != nil {
		t.Fatal(err)
	}
	seen := make(map[int]bool)
	for _, j := range s.perm[:m/2] {
		if seen[j] {
			t.Fatalf("term %d drawn twice", j)
		}
		seen[j] = true
	}
	// The sample mean is the mean of the drawn terms.
	want := 0.0
	for _, j := range s.perm[:m/2] {
		want += float64(j) / float64(m/2)
	}
	if math.Abs(s.mean[0]-want) > 1e-9*want {
		t.Errorf("sample mean %v, want %v", s.mean[0], want)
	}
}

// TestSampledBlockAllocs: growing a sample in blocks allocates nothing.
func TestSampledBlockAllocs(t *testing.T) {
	const m, d = 4096, 8
	l2, _ := NewLP(2, d)
	bs := &blockSum{termSum: newTermSum(0, 1, termSet("normal", m, d, 1))}
	s, err := newSampler(context.Background(), bs, bs.mean, l2, RuleSampledBernstein, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if a := testing.AllocsPerRun(10, func() {
		n += 512
		if err := s.grow(n, 10); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per grow", a)
	}
}

// TestSampledStagedCoverage: staged certificates (a finite tolerance, so
// that the stage the data selects varies, the largest stages taking the
// largest shares of δ) drawn in blocks and singly, 400 per case, both
// rules' norms, δ ∈ {0.05, 0.01}: failures (a returned certificate whose
// Bound is below the exact residual) ≤ δN + 3√(Nδ(1 − δ)), and some
// certificates stop at a stage after the first.
func TestSampledStagedCoverage(t *testing.T) {
	const draws, m, d = 400, 4096, 4
	l2, _ := NewLP(2, d)
	linf, _ := NewLInf(d)
	for _, norm := range []Norm{l2, linf} {
		for _, block := range []bool{false, true} {
			ts := newTermSum(0, 1, termSet("normal", m, d, 13))
			var o Oracle = ts
			if block {
				o = &blockSum{termSum: ts}
			}
			// x̂ at 0.25B from the average along a coordinate: a
			// certificate fails when the sample mean's error along it
			// exceeds the radius, and meets 0.3B only at a late stage.
			b := ts.TermBound(ts.mean, norm)
			x := append([]float64(nil), ts.mean...)
			x[0] += 0.25 * b
			truth := make([]float64, d)
			subInto(truth, ts.mean, x)
			res := norm.Norm(truth)
			for _, delta := range []float64{0.05, 0.01} {
				fails, late, got := 0, 0, 0
				rng := rand.New(rand.NewPCG(17, 5))
				for range draws {
					c, _, err := sampledCertificate(context.Background(), o, x, norm, 0.3*b, delta, 0, rng)
					if err != nil {
						t.Fatal(err)
					}
					if c == nil {
						continue
					}
					got++
					if c.Samples > sampledFirst {
						late++
					}
					if c.Bound < res {
						fails++
					}
				}
				t.Logf("%v block=%v δ=%v: %d certificates, %d after the first stage, %d failures", norm, block, delta, got, late, fails)
				if lim := coverageLimit(draws, delta); float64(fails) > lim {
					t.Errorf("%v block=%v δ=%v: %d/%d failures > %.1f", norm, block, delta, fails, got, lim)
				}
				if late == 0 {
					t.Errorf("%v block=%v δ=%v: %d certificates, %d after the first stage", norm, block, delta, got, late)
				}
			}
		}
	}
}

// TestSampledCertificateFutility: at a point whose residual is just below
// the tolerance, so that no stage below M can prove it, the certificate
// chooses the exact pass before the largest stage: it returns nil with
// fewer than M/2 terms spent; and at a point whose residual is well below
// the tolerance it still returns a sampled certificate.
func TestSampledCertificateFutility(t *testing.T) {
	const m, d = 1 << 15, 4
	l2, _ := NewLP(2, d)
	ts := newTermSum(0, 1, termSet("normal", m, d, 21))
	b := ts.TermBound(ts.mean, l2)
	tol := 0.02 * b
	far := append([]float64(nil), ts.mean...)
	far[0] += 0.95 * tol
	c, spent, err := sampledCertificate(context.Background(), ts, far, l2, tol, 0.05, 0, rand.New(rand.NewPCG(2, 3)))
	if err != nil || c != nil {
		t.Fatalf("got %v, %v; want the exact pass", c, err)
	}
	if spent.samples >= m/2 || spent.samples == 0 {
		t.Errorf("spent %d terms before the exact pass, want some and fewer than %d", spent.samples, m/2)
	}
	near := append([]float64(nil), ts.mean...)
	near[0] += 0.1 * tol
	c, _, err = sampledCertificate(context.Background(), ts, near, l2, tol, 0.05, 0, rand.New(rand.NewPCG(2, 3)))
	if err != nil || c == nil || !(c.Bound <= tol) {
		t.Fatalf("near point: %v, %v; want a sampled certificate within %v", c, err, tol)
	}
	t.Logf("far: exact pass after %d terms; near: certificate of %d terms", spent.samples, c.Samples)
}
