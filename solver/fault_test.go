package solver_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// faultOracle answers its first `after` calls honestly and then starts
// returning garbage: value in one coordinate (which one rotates with the
// call), or, when overflow is set, ±MaxFloat64 in every coordinate, a finite
// answer whose residual overflows. It keeps a copy of every point at which it
// answered honestly.
type faultOracle struct {
	solver.Oracle
	after    int
	value    float64
	overflow bool
	calls    int
	honest   [][]float64
}

func (f *faultOracle) Eval(dst, x []float64, s solver.Sample) (int, error) {
	n, err := f.Oracle.Eval(dst, x, s)
	f.calls++
	switch {
	case err != nil:
	case f.calls <= f.after:
		f.honest = append(f.honest, slices.Clone(x))
	case f.overflow:
		for i := range dst {
			dst[i] = math.MaxFloat64
			if (i+f.calls)%2 == 0 {
				dst[i] = -math.MaxFloat64
			}
		}
	default:
		dst[f.calls%len(dst)] = f.value
	}
	return n, err
}

// TestOracleFaults makes the oracle of every method start returning NaN,
// +Inf or −Inf after k honest calls. Env.Eval must catch the fault on the
// first bad call (so that no call follows it, and no NaN or infinite
// residual reaches the trace, as it would if only Env.Record caught it), the
// method must stop with Status Diverged and an error wrapping
// ErrNonFinite that names the bad evaluation, and Result.X must be finite: the
// start point when nothing was recorded (always so when no call was honest),
// otherwise one of the honestly evaluated points — for the deterministic
// methods the one with the lowest residual recorded, whose exact residual
// Result.Residual is; for the stochastic baselines, which keep their last
// iterate, the last one recorded.
func TestOracleFaults(t *testing.T) {
	p := relNew(t, problems.Config{Name: "affine", Dim: 40, Gamma: 0.9, Noise: 0.5, Seed: 3})
	for _, m := range relMethods(p.Gamma, p.Sigma) {
		for _, k := range []int{0, 1, 2, 7, 30} {
			for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				t.Run(fmt.Sprintf("%s/after%d/%v", m.name, k, v), func(t *testing.T) {
					sp := m.problem(p)
					fo := &faultOracle{Oracle: sp.Oracle, after: k, value: v}
					// Tol is out of reach, so only the fault stops the
					// methods within MaxIter (in 40 dimensions Broyden,
					// which solves an affine map exactly within 2·40
					// iterations, cannot reach a zero residual by k = 30).
					s := &solver.Settings{Tol: 1e-300, MaxIter: 1000, Seed: 5, Certify: solver.CertifySettings{Skip: true}}
					res, err := solver.Solve(context.Background(), solver.Problem{Oracle: fo, Norm: sp.Norm}, p.X0, s, m.method)
					require.ErrorIs(t, err, solver.ErrNonFinite)
					require.ErrorContains(t, err, fmt.Sprintf("evaluation %d", k+1))
					require.NotNil(t, res)
					require.Equal(t, solver.Diverged, res.Status)
					require.Equal(t, int64(k+1), res.Stats.Calls, "stopped at the first bad call")
					relRequireFinite(t, res.X, m.name)
					for _, tp := range res.Stats.Trace {
						require.False(t, math.IsNaN(tp.Residual) || math.IsInf(tp.Residual, 0), "trace residual %v", tp.Residual)
					}
					if len(res.Stats.Trace) == 0 {
						// Nothing recorded: always so for k = 0, and for
						// methods that record once per epoch when the
						// fault comes within the first.
						require.Equal(t, p.X0, res.X)
						require.True(t, math.IsInf(res.Residual, 1), "no residual was measured")
						return
					}
					require.NotZero(t, k, "a residual recorded without an honest call")
					require.True(t, slices.ContainsFunc(fo.honest, func(x []float64) bool { return slices.Equal(x, res.X) }),
						"X is an honestly evaluated point")
					if m.stochastic {
						require.Equal(t, res.Stats.Trace[len(res.Stats.Trace)-1].Residual, res.Residual)
						return
					}
					best := math.Inf(1)
					for _, tp := range res.Stats.Trace {
						best = math.Min(best, tp.Residual)
					}
					require.Equal(t, best, res.Residual)
					exact, err := p.Residual(res.X)
					require.NoError(t, err)
					require.Equal(t, exact, res.Residual, "Residual is the exact residual of X")
				})
			}
		}
	}
}

// TestOracleOverflow: an oracle that starts answering ±MaxFloat64, finite
// values whose residual overflows, stops every method with Status Diverged
// and a finite Result.X that the oracle evaluated honestly.
func TestOracleOverflow(t *testing.T) {
	p := relNew(t, problems.Config{Name: "affine", Dim: 40, Gamma: 0.9, Noise: 0.5, Seed: 3})
	for _, m := range relMethods(p.Gamma, p.Sigma) {
		for _, k := range []int{1, 9} {
			sp := m.problem(p)
			fo := &faultOracle{Oracle: sp.Oracle, after: k, overflow: true}
			s := &solver.Settings{Tol: 1e-300, MaxIter: 1000, Seed: 5, Certify: solver.CertifySettings{Skip: true}}
			res, err := solver.Solve(context.Background(), solver.Problem{Oracle: fo, Norm: sp.Norm}, p.X0, s, m.method)
			require.NoError(t, err, m.name)
			require.Equal(t, solver.Diverged, res.Status, "%s after %d", m.name, k)
			relRequireFinite(t, res.X, m.name)
			require.False(t, math.IsNaN(res.Residual) || math.IsInf(res.Residual, 0), m.name)
			require.True(t, slices.ContainsFunc(fo.honest, func(x []float64) bool { return slices.Equal(x, res.X) }),
				"%s after %d: X is an honestly evaluated point", m.name, k)
		}
	}
}
