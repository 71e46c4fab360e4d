package solver_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// badCallOracle answers honestly except on the calls listed in bad (from
// 1), where it writes value into coordinate 0.
type badCallOracle struct {
	solver.Oracle
	bad   map[int]bool
	value float64
	calls int
}

func (o *badCallOracle) Eval(dst, x []float64, s solver.Sample) (int, error) {
	n, err := o.Oracle.Eval(dst, x, s)
	o.calls++
	if err == nil && o.bad[o.calls] {
		dst[0] = o.value
	}
	return n, err
}

// TestSolveNonFiniteStart: a NaN or ±Inf in x0 is refused before any
// evaluation with an error wrapping ErrNonFinite that names the
// coordinate.
func TestSolveNonFiniteStart(t *testing.T) {
	p := relNew(t, problems.Config{Name: "affine", Dim: 8, Gamma: 0.9, Noise: 0.5, Seed: 3})
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			x0 := make([]float64, 8)
			x0[5] = v
			sp := p.ExactProblem()
			o := &badCallOracle{Oracle: sp.Oracle}
			res, err := solver.Solve(context.Background(), solver.Problem{Oracle: o, Norm: sp.Norm}, x0, nil, solver.Picard{})
			require.ErrorIs(t, err, solver.ErrNonFinite)
			require.ErrorContains(t, err, fmt.Sprintf("x0[5] = %v", v))
			require.Nil(t, res)
			require.Zero(t, o.calls, "no evaluation")
			_, err = solver.CertifyRadius(context.Background(), p.OracleProblem(), x0, 0.1, 10, nil)
			require.ErrorIs(t, err, solver.ErrNonFinite)
		})
	}
}

// TestSolveNonFiniteMidSolve: an oracle that returns NaN or ±Inf on its
// third call stops every method there with Status Diverged and an error
// wrapping ErrNonFinite that names the evaluation; the Result holds a
// finite point, and its certificate, drawn at that point where the oracle
// answers honestly again, has a finite bound. When the oracle also fails
// in the certificate's evaluations, the certificate is nil (never a NaN
// bound) and the error still wraps ErrNonFinite.
func TestSolveNonFiniteMidSolve(t *testing.T) {
	p := relNew(t, problems.Config{Name: "affine", Dim: 20, Gamma: 0.9, Noise: 0.5, Seed: 3})
	for _, m := range relMethods(p.Gamma, p.Sigma) {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			for _, certBad := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/certBad=%v", m.name, v, certBad), func(t *testing.T) {
					sp := m.problem(p)
					o := &badCallOracle{Oracle: sp.Oracle, value: v, bad: map[int]bool{3: true}}
					if certBad {
						for c := 4; c < 200; c++ {
							o.bad[c] = true
						}
					}
					s := &solver.Settings{Tol: 1e-300, MaxIter: 1000, Seed: 7, Certify: solver.CertifySettings{Calls: 3, Samples: 4}}
					res, err := solver.Solve(context.Background(), solver.Problem{Oracle: o, Norm: sp.Norm}, p.X0, s, m.method)
					require.ErrorIs(t, err, solver.ErrNonFinite)
					require.ErrorContains(t, err, "evaluation 3")
					require.NotNil(t, res)
					require.Equal(t, solver.Diverged, res.Status)
					require.Equal(t, int64(3), res.Stats.Calls)
					relRequireFinite(t, res.X, m.name)
					if certBad {
						require.Nil(t, res.Certificate)
						return
					}
					require.NotNil(t, res.Certificate)
					require.False(t, math.IsNaN(res.Certificate.Bound) || math.IsInf(res.Certificate.Bound, 0), res.Certificate.Guarantee())
				})
			}
		}
	}
}

// TestSolveNonFiniteEverywhere is Forward on a NaN input in miniature: an
// oracle that is NaN everywhere stops at its first evaluation with an
// error wrapping ErrNonFinite, returns x0, and reports no certificate
// rather than one claiming "≤ NaN".
func TestSolveNonFiniteEverywhere(t *testing.T) {
	norm, err := solver.NewLP(2, 3)
	require.NoError(t, err)
	o := solver.Func{N: 3, F: func(dst, x []float64) {
		for i := range dst {
			dst[i] = math.NaN()
		}
	}}
	for _, m := range []solver.Method{solver.Picard{}, solver.Anderson{}, solver.Broyden{}} {
		t.Run(m.String(), func(t *testing.T) {
			res, err := solver.Solve(context.Background(), solver.Problem{Oracle: o, Norm: norm}, []float64{1, 2, 3}, nil, m)
			require.ErrorIs(t, err, solver.ErrNonFinite)
			require.Equal(t, solver.Diverged, res.Status)
			require.Equal(t, []float64{1, 2, 3}, res.X)
			require.Nil(t, res.Certificate)
		})
	}
}

// TestSolveOverflowIsDivergence: finite evaluations whose residual
// overflows to +Inf are a divergence, not a non-finite value: Status
// Diverged without an error.
func TestSolveOverflowIsDivergence(t *testing.T) {
	norm, err := solver.NewLP(2, 2)
	require.NoError(t, err)
	o := solver.Func{N: 2, F: func(dst, x []float64) {
		dst[0], dst[1] = math.MaxFloat64, -math.MaxFloat64
	}}
	res, err := solver.Solve(context.Background(), solver.Problem{Oracle: o, Norm: norm}, []float64{0, 0}, &solver.Settings{Certify: solver.CertifySettings{Skip: true}}, solver.Picard{})
	require.NoError(t, err)
	require.Equal(t, solver.Diverged, res.Status)
}
