package solver

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// affineSum is the finite sum T(x) = (1/M) Σ_i (a_i x + c_i) of M affine
// terms with scalars |a_i| ≤ γ (so every term is γ-Lipschitz), drawn with
// replacement by Eval (Size ≥ M gives the exact average and reports M).
// It counts the unit samples it reports.
type affineSum struct {
	a       []float64
	c       [][]float64
	counted int64
}

func newAffineSum(m, n int, gamma float64, seed uint64) *affineSum {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := &affineSum{a: make([]float64, m), c: make([][]float64, m)}
	for i := range m {
		s.a[i] = gamma * (2*rng.Float64() - 1)
		s.c[i] = make([]float64, n)
		for j := range n {
			// Redundant terms: a shared direction plus noise.
			s.c[i][j] = 1 + 0.5*rng.NormFloat64()
		}
	}
	return s
}

func (s *affineSum) Len() int     { return len(s.c[0]) }
func (s *affineSum) Model() Model { return SamplewiseLipschitz }
func (s *affineSum) Terms() int   { return len(s.a) }

func (s *affineSum) add(dst, x []float64, i int, w float64) {
	for j := range dst {
		dst[j] += w * (s.a[i]*x[j] + s.c[i][j])
	}
}

func (s *affineSum) Eval(dst, x []float64, smp Sample) (int, error) {
	if smp.Size >= len(s.a) {
		return len(s.a), s.EvalExact(dst, x)
	}
	clear(dst)
	rng := rand.New(rand.NewPCG(smp.Seed, 2))
	for range smp.Size {
		s.add(dst, x, rng.IntN(len(s.a)), 1/float64(smp.Size))
	}
	s.counted += int64(smp.Size)
	return smp.Size, nil
}

func (s *affineSum) EvalExact(dst, x []float64) error {
	s.counted += int64(len(s.a))
	clear(dst)
	for i := range s.a {
		s.add(dst, x, i, 1/float64(len(s.a)))
	}
	return nil
}

// fixedPoint returns x* = c̄/(1 − ā).
func (s *affineSum) fixedPoint() []float64 {
	abar := 0.0
	for _, a := range s.a {
		abar += a
	}
	abar /= float64(len(s.a))
	x := make([]float64, s.Len())
	for _, c := range s.c {
		for j, v := range c {
			x[j] += v / float64(len(s.a)) / (1 - abar)
		}
	}
	return x
}

// requireCertifiedSum checks a solve of an affine finite sum s with a
// γ-contraction and tolerance tol: it stopped with Success, which the
// finite-sum certificate confirms (Bound ≤ tol); it lies within that
// certificate of the fixed point (‖x − x*‖ ≤ Bound/(1 − γ)); and the unit
// samples the oracle counted add up to Stats and the certificate's.
func requireCertifiedSum(t *testing.T, s *affineSum, counted int64, norm Norm, res *Result, err error, gamma, tol float64, msg string, args ...any) {
	t.Helper()
	require.NoError(t, err)
	require.Equal(t, Success, res.Status, append([]any{msg}, args...)...)
	require.Equal(t, RuleFiniteSum, res.Certificate.Rule)
	require.LessOrEqual(t, res.Certificate.Bound, tol)
	d := make([]float64, len(res.X))
	for i, v := range s.fixedPoint() {
		d[i] = res.X[i] - v
	}
	require.LessOrEqual(t, norm.Norm(d), res.Certificate.Bound/(1-gamma)*(1+1e-9))
	require.Equal(t, counted, res.Stats.Samples+res.Certificate.Samples)
}

// hidden hides every optional interface of an oracle.
type hidden struct{ Oracle }

// requireCertifiedSums solves affine finite sums of m terms in dimension 8
// (a ½-contraction, seeds 1 to 5, ℓ2 and ℓ∞) with the method newMethod
// builds for γ̄ = ½, to tolerance 5e-2 from zero. It checks every solve with
// requireCertifiedSum and that sampling paid: fewer than two exact calls'
// worth of unit samples besides the certificate's. more, if not nil, checks
// a solve further.
func requireCertifiedSums(t *testing.T, m int, newMethod func(gamma float64) Method, more func(res *Result)) {
	t.Helper()
	const gamma, tol = 0.5, 5e-2
	for _, norm := range []Norm{LP{p: 2, d: 8}, LInf{d: 8}} {
		for seed := uint64(1); seed <= 5; seed++ {
			o := newAffineSum(m, 8, gamma, seed)
			p := Problem{Oracle: o, Norm: norm}
			res, err := Solve(context.Background(), p, make([]float64, 8), &Settings{Tol: tol, Seed: seed}, newMethod(gamma))
			requireCertifiedSum(t, o, o.counted, norm, res, err, gamma, tol, "seed %d", seed)
			require.Less(t, res.Stats.Samples, int64(2*o.Terms()), "seed %d", seed)
			if more != nil {
				more(res)
			}
		}
	}
}

func TestGrowingBatchCertifiedStop(t *testing.T) {
	// Sampling pays on this redundant sum (see requireCertifiedSums), and
	// the certificate reuses the method's certifying exact call at the
	// returned point and costs nothing more.
	requireCertifiedSums(t, 1<<14, func(gamma float64) Method { return GrowingBatch{Gamma: gamma} }, func(res *Result) {
		require.Zero(t, res.Certificate.Samples)
		require.Zero(t, res.Certificate.Calls)
	})
}

func TestGrowingBatchExactAndDeterministic(t *testing.T) {
	// A tiny sum is evaluated exactly from the first step: exact Picard.
	o := newAffineSum(4, 3, 0.5, 1)
	res, err := Solve(context.Background(), Problem{Oracle: o, Norm: LP{p: 2, d: 3}}, make([]float64, 3), &Settings{Tol: 1e-10, Certify: CertifySettings{Skip: true}}, GrowingBatch{})
	require.NoError(t, err)
	require.Equal(t, Success, res.Status)
	require.Equal(t, res.Stats.Calls*4, res.Stats.Samples)
	// A deterministic oracle: one evaluation per step.
	f := Func{N: 2, F: func(dst, x []float64) { dst[0], dst[1] = 0.5*x[1]+1, 0.5*x[0] }}
	res, err = Solve(context.Background(), Problem{Oracle: f, Norm: LP{p: 2, d: 2}}, make([]float64, 2), &Settings{Tol: 1e-9}, GrowingBatch{Alpha: 0.5})
	require.NoError(t, err)
	require.Equal(t, Success, res.Status)
	require.Equal(t, res.Stats.Calls, res.Stats.Samples)
}

func TestGrowingBatchWithoutFiniteSum(t *testing.T) {
	o := newAffineSum(1<<14, 4, 0.5, 3)
	res, err := Solve(context.Background(), Problem{Oracle: hidden{o}, Norm: LP{p: 2, d: 4}}, make([]float64, 4), &Settings{Tol: 1e-2, Seed: 2}, GrowingBatch{Gamma: 0.5})
	require.NoError(t, err)
	require.Equal(t, ToleranceEstimated, res.Status, "an estimate proves nothing")
	require.Equal(t, RuleEstimate, res.Certificate.Rule)
	tx := make([]float64, 4)
	require.NoError(t, o.EvalExact(tx, res.X))
	require.Less(t, (LP{p: 2, d: 4}).Norm(subVec(tx, res.X)), 0.1)
}

func TestGrowingBatchLimitsAndValidate(t *testing.T) {
	o := newAffineSum(1<<14, 4, 0.5, 3)
	p := Problem{Oracle: o, Norm: LP{p: 2, d: 4}}
	res, err := Solve(context.Background(), p, make([]float64, 4), &Settings{Tol: 1e-9, MaxSamples: 100}, GrowingBatch{})
	require.NoError(t, err)
	require.Equal(t, SampleLimit, res.Status)
	require.LessOrEqual(t, res.Stats.Samples, int64(100))
	for _, m := range []GrowingBatch{{Alpha: 2}, {Alpha: math.NaN()}, {Gamma: -1}, {Batch: -1}, {Growth: 1}, {Growth: math.Inf(1)}, {Z: -1}, {MaxBatch: -1}} {
		require.Error(t, m.Validate(p), "%+v", m)
	}
	require.NoError(t, GrowingBatch{Alpha: 0.5, Growth: 16, Gamma: 0.9, Z: 3}.Validate(p))
}

func subVec(a, b []float64) []float64 {
	d := make([]float64, len(a))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return d
}
