package solver_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// stopOracle wraps an oracle: it cancels the solve's context from inside
// the call that makes stop true (an event of the run, not a timer) and
// counts the calls made after that one. It forwards the noise declarations
// of the oracle it wraps.
type stopOracle struct {
	solver.Oracle
	stop   func(calls int, s solver.Sample) bool
	cancel context.CancelFunc
	calls  int
	fired  bool
	after  int
}

var (
	_ solver.NoiseBound           = (*stopOracle)(nil)
	_ solver.VarianceBound        = (*stopOracle)(nil)
	_ solver.CoordinateNoiseBound = (*stopOracle)(nil)
)

func (o *stopOracle) Eval(dst, x []float64, s solver.Sample) (int, error) {
	o.calls++
	if o.fired {
		o.after++
	}
	n, err := o.Oracle.Eval(dst, x, s)
	if !o.fired && o.stop(o.calls, s) {
		o.fired = true
		o.cancel()
	}
	return n, err
}

func (o *stopOracle) NoiseBound(x []float64, norm solver.Norm) float64 {
	if b, ok := o.Oracle.(solver.NoiseBound); ok {
		return b.NoiseBound(x, norm)
	}
	return math.Inf(1)
}

func (o *stopOracle) NoiseVariance(x []float64, norm solver.Norm) float64 {
	if v, ok := o.Oracle.(solver.VarianceBound); ok {
		return v.NoiseVariance(x, norm)
	}
	return math.Inf(1)
}

func (o *stopOracle) CoordinateNoise(b, v, x []float64) bool {
	if c, ok := o.Oracle.(solver.CoordinateNoiseBound); ok {
		return c.CoordinateNoise(b, v, x)
	}
	return false
}

// atCall returns a stop rule that fires on call k.
func atCall(k int) func(int, solver.Sample) bool {
	return func(calls int, _ solver.Sample) bool { return calls == k }
}

// TestEveryMethodStopsWhenCanceled runs every method of the registry on a
// problem of the suite and cancels the context from inside its third
// oracle call: Solve returns Status Canceled with a nil error, the method
// makes no further call, only a deterministic oracle gets its exact
// certificate (one more evaluation at most), and X is a finite point.
func TestEveryMethodStopsWhenCanceled(t *testing.T) {
	for _, m := range solver.Methods() {
		t.Run(m.Name, func(t *testing.T) {
			p, err := problems.New(problems.Config{Name: "affine", Seed: 2})
			require.NoError(t, err)
			sp := p.ExactProblem()
			if m.Stochastic {
				sp = p.OracleProblem()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := &stopOracle{Oracle: sp.Oracle, stop: atCall(3), cancel: cancel}
			sp.Oracle = o
			method := m.New(solver.MethodOptions{Gamma: p.Gamma, Sigma2: p.Sigma * p.Sigma})
			res, err := solver.Solve(ctx, sp, p.X0, &solver.Settings{Tol: 1e-12, MaxIter: 1 << 20, Seed: 1}, method)
			require.NoError(t, err)
			require.True(t, o.fired, "the solve made fewer than 3 calls")
			require.Equal(t, solver.Canceled, res.Status)
			require.Len(t, res.X, len(p.X0))
			for i, v := range res.X {
				require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "X[%d] = %v", i, v)
			}
			if m.Stochastic {
				require.Zero(t, o.after, "calls after the cancellation")
				require.Nil(t, res.Certificate)
				return
			}
			require.LessOrEqual(t, o.after, 1, "calls after the cancellation")
			require.NotNil(t, res.Certificate)
			require.True(t, res.Certificate.Rule.Exact())
		})
	}
}

// TestMDPTinyToleranceReturns is the regression of a VR-GHAL solve of "mdp"
// at ε = 1e-8, which asked the oracle for ever larger samples until one
// call never returned. The context is canceled from inside the first call
// of more than 2⁴⁰ unit samples: Solve returns Canceled with its best
// point and no certificate, and makes no further call.
func TestMDPTinyToleranceReturns(t *testing.T) {
	p, err := problems.New(problems.Config{Name: "mdp", Seed: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := &stopOracle{Oracle: p.Oracle, cancel: cancel,
		stop: func(_ int, s solver.Sample) bool { return s.Size > 1<<40 }}
	sp := solver.Problem{Oracle: o, Norm: p.Norm}
	res, err := solver.Solve(ctx, sp, p.X0, &solver.Settings{Tol: 1e-8, Seed: 1, NoTrace: true}, solver.VRGHAL{Gamma: p.Gamma})
	require.NoError(t, err)
	require.True(t, o.fired)
	require.Equal(t, solver.Canceled, res.Status)
	require.Zero(t, o.after)
	require.Nil(t, res.Certificate)
	r, err := p.Residual(res.X)
	require.NoError(t, err)
	require.Less(t, r, 1e-3, "the best point so far is returned")
}

// TestMDPCertificateStopsWhenCanceled stops VR-GHAL on "mdp" after two
// epochs and asks for a certificate of 2⁶² unit samples, the size that
// hung: it draws in chunks, and the context canceled from inside its third
// chunk stops it there. Solve keeps the method's status and point, drops
// the certificate and returns no error.
func TestMDPCertificateStopsWhenCanceled(t *testing.T) {
	p, err := problems.New(problems.Config{Name: "mdp", Seed: 1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := &stopOracle{Oracle: p.Oracle, cancel: cancel}
	certCalls := 0
	o.stop = func(_ int, s solver.Sample) bool {
		if s.Size >= 1<<16 && s.Size&(s.Size-1) == 0 {
			certCalls++
		}
		return certCalls == 3
	}
	sp := solver.Problem{Oracle: o, Norm: p.Norm}
	s := &solver.Settings{Tol: 1e-8, Seed: 1, MaxIter: 2, Certify: solver.CertifySettings{Samples: 1 << 62}}
	// The method's own calls are not powers of two of at least 2¹⁶ here;
	// check that the stop rule fires in the certificate only.
	ref, err := solver.Solve(context.Background(), p.OracleProblem(), p.X0, &solver.Settings{Tol: 1e-8, Seed: 1, MaxIter: 2, Certify: solver.CertifySettings{Skip: true}}, solver.VRGHAL{Gamma: p.Gamma})
	require.NoError(t, err)
	res, err := solver.Solve(ctx, sp, p.X0, s, solver.VRGHAL{Gamma: p.Gamma})
	require.NoError(t, err)
	require.True(t, o.fired)
	require.Equal(t, ref.Stats.Calls+3, int64(o.calls), "the certificate made three chunk calls")
	require.Zero(t, o.after)
	require.Equal(t, solver.IterationLimit, res.Status)
	require.Equal(t, ref.X, res.X)
	require.Nil(t, res.Certificate)
}
