package solver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCertificateReusesLastExactEvaluation checks that a deterministic
// solve whose returned point is the last one it evaluated pays no extra
// call for its certificate, and that the reused certificate is the exact
// residual at that point.
func TestCertificateReusesLastExactEvaluation(t *testing.T) {
	p := newAffineL2(t, 3, 12, 0.7)
	for _, m := range []Method{Picard{}, KrasnoselskiiMann{}, Anderson{}, Broyden{}} {
		calls := 0
		f := p.oracle()
		inner := f.F
		f.F = func(dst, x []float64) { calls++; inner(dst, x) }
		res, err := Solve(context.Background(), Problem{Oracle: f, Norm: p.norm}, make([]float64, 12), &Settings{Tol: 1e-8}, m)
		require.NoError(t, err, "%v", m)
		require.Equal(t, Success, res.Status, "%v", m)
		c := res.Certificate
		require.Equal(t, RuleExact, c.Rule, "%v", m)
		require.Zero(t, c.Calls, "%v", m)
		require.Zero(t, c.Samples, "%v", m)
		require.Equal(t, int64(calls), res.Stats.Calls, "%v: the certificate made a call of its own", m)
		tx := make([]float64, 12)
		inner(tx, res.X)
		subInto(tx, tx, res.X)
		want := p.norm.Norm(tx)
		require.InDelta(t, want, c.Bound, 1e-12*(1+want), "%v", m)
		require.LessOrEqual(t, c.Bound, 1e-8, "%v", m)
	}
}

// TestLastExactMatchesOnlyItsPoint checks the Env's memory of its last
// exact evaluation: it answers only for the very point evaluated (bit for
// bit), survives an oracle that writes T(x) over x, and is off when the
// certificate is skipped.
func TestLastExactMatchesOnlyItsPoint(t *testing.T) {
	double := Func{N: 2, F: func(dst, x []float64) {
		for i := range dst {
			dst[i] = 2 * x[i]
		}
	}}
	norm, err := NewLP(2, 2)
	require.NoError(t, err)
	s, err := (&Settings{}).withDefaults()
	require.NoError(t, err)
	e := newEnv(context.Background(), Problem{Oracle: double, Norm: norm}, []float64{0, 0}, s)
	require.Nil(t, e.lastExact([]float64{1, 2}), "nothing evaluated yet")
	x := []float64{1, 2}
	require.NoError(t, e.Eval(x, x, Sample{Size: 1})) // in place: x becomes T(x)
	require.Equal(t, []float64{2, 4}, e.lastExact([]float64{1, 2}))
	require.Nil(t, e.lastExact([]float64{1, 2.0000000000000004}))
	require.Nil(t, e.lastExact([]float64{2, 4}))

	s.Certify.Skip = true
	e = newEnv(context.Background(), Problem{Oracle: double, Norm: norm}, []float64{0, 0}, s)
	require.NoError(t, e.Eval(make([]float64, 2), []float64{1, 2}, Sample{Size: 1}))
	require.Nil(t, e.lastExact([]float64{1, 2}))
}

// TestResultTolIsTheToleranceInForce checks Result.Tol: the configured
// tolerance, or under Relative that times the first recorded residual.
func TestResultTolIsTheToleranceInForce(t *testing.T) {
	p := newAffineL2(t, 5, 6, 0.5)
	x0 := make([]float64, 6)
	res, err := Solve(context.Background(), Problem{Oracle: p.oracle(), Norm: p.norm}, x0, &Settings{Tol: 1e-6}, Picard{})
	require.NoError(t, err)
	require.Equal(t, 1e-6, res.Tol)
	res, err = Solve(context.Background(), Problem{Oracle: p.oracle(), Norm: p.norm}, x0, &Settings{Tol: 1e-3, Relative: true}, Picard{})
	require.NoError(t, err)
	require.Equal(t, Success, res.Status)
	first := res.Stats.Trace[0].Residual
	require.InDelta(t, 1e-3*first, res.Tol, 1e-15*first)
	require.LessOrEqual(t, res.Certificate.Bound, res.Tol)
}
