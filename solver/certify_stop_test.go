package solver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// cancelOracle is a certOracle that cancels a context from inside its
// call number at and counts the calls made after that one.
type cancelOracle struct {
	*certOracle
	cancel context.CancelFunc
	at     int
	calls  int
	after  int
	sizes  []int
}

func (o *cancelOracle) Eval(dst, x []float64, s Sample) (int, error) {
	o.calls++
	o.sizes = append(o.sizes, s.Size)
	if o.calls > o.at {
		o.after++
	}
	n, err := o.certOracle.Eval(dst, x, s)
	if o.calls == o.at {
		o.cancel()
	}
	return n, err
}

// TestCertificateRulesStopWhenCanceled draws each stochastic certificate
// rule with calls of 2²⁰ unit samples (the truncated rule sizes its calls
// by its plan), which it splits into chunks of 2¹⁶, 2¹⁶, 2¹⁷, …:
// uncanceled, the chunks add up to the samples the rule reports; canceled from inside the second chunk, the rule makes no further
// oracle call and returns an error wrapping context.Canceled.
func TestCertificateRulesStopWhenCanceled(t *testing.T) {
	const size = 1 << 20
	l2, err := NewLP(2, 3)
	require.NoError(t, err)
	linf, err := NewLInf(3)
	require.NoError(t, err)
	for _, tc := range []struct {
		rule              CertRule
		law               certLaw
		norm              Norm
		calls             int
		declVar, declBond bool
	}{
		{RuleBoundedNoise, lawRademacher, linf, 0, false, true},
		{RuleVarianceMoM, lawGaussian, l2, 3, true, false},
		{RuleVarianceTruncated, lawGaussian, l2, 0, true, false},
		{RuleEstimate, lawGaussian, l2, 0, false, false},
	} {
		t.Run(tc.rule.String(), func(t *testing.T) {
			x := []float64{0.1, -0.2, 0.3}
			s := Settings{Seed: 3, Certify: CertifySettings{Delta: 0.05, Calls: tc.calls, Samples: size}}
			sd, err := s.withDefaults()
			require.NoError(t, err)
			newOracle := func(cancel context.CancelFunc, at int) *cancelOracle {
				o := newCertOracle(3, []float64{0.2, 0, -0.1}, tc.law, 0)
				o.declareVar, o.declareBound = tc.declVar, tc.declBond
				return &cancelOracle{certOracle: o, cancel: cancel, at: at}
			}

			whole := newOracle(func() {}, 0)
			c, err := certify(context.Background(), Problem{Oracle: whole, Norm: tc.norm}, &Result{X: x}, &sd, 0, nil)
			require.NoError(t, err)
			require.Equal(t, tc.rule, c.Rule)
			if tc.rule != RuleVarianceTruncated { // its plan sizes its own calls
				require.Equal(t, int64(whole.calls), 5*c.Calls, "2²⁰ in chunks of 2¹⁶, 2¹⁶, 2¹⁷, 2¹⁸, 2¹⁹")
			}
			sum := int64(0)
			for _, n := range whole.sizes {
				require.LessOrEqual(t, n, size/2)
				sum += int64(n)
			}
			require.Equal(t, c.Samples, sum)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := newOracle(cancel, 2)
			c, err = certify(ctx, Problem{Oracle: o, Norm: tc.norm}, &Result{X: x}, &sd, 0, nil)
			require.Error(t, err)
			require.True(t, errors.Is(err, context.Canceled), "%v", err)
			require.Nil(t, c)
			require.Equal(t, 2, o.calls)
			require.Zero(t, o.after)
		})
	}
}

// TestCertifyRadiusStopsWhenCanceled asks CertifyRadius for a radius that
// needs about 10¹⁶ unit samples and cancels from inside its third oracle
// call: it returns no certificate, an error wrapping context.Canceled, and
// makes no further call.
func TestCertifyRadiusStopsWhenCanceled(t *testing.T) {
	linf, err := NewLInf(2)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	co := newCertOracle(2, []float64{0.2, 0}, lawGaussian, 0)
	co.declareVar = true
	o := &cancelOracle{certOracle: co, cancel: cancel, at: 3}
	c, err := CertifyRadius(ctx, Problem{Oracle: o, Norm: linf}, []float64{0, 0}, 1e-8, 1, nil)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.Nil(t, c)
	require.Equal(t, 3, o.calls)
	require.Zero(t, o.after)
}

// TestSolveDropsInterruptedCertificate stops a solve normally (iteration
// limit) and cancels the context from inside the certificate's second
// chunk: Solve keeps the method's status and point, returns no
// certificate and no error, and makes no further call.
func TestSolveDropsInterruptedCertificate(t *testing.T) {
	l2, err := NewLP(2, 3)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	co := newCertOracle(3, []float64{0.2, 0, -0.1}, lawGaussian, 0)
	co.declareVar = true
	o := &cancelOracle{certOracle: co, cancel: cancel}
	s := Settings{Tol: 1e-9, MaxIter: 3, Seed: 1, Certify: CertifySettings{Samples: 1 << 20, Skip: true}}
	ref, err := Solve(context.Background(), Problem{Oracle: o, Norm: l2}, make([]float64, 3), &s, MinibatchKM{})
	require.NoError(t, err)
	o.at = o.calls + 2 // the certificate's second oracle call
	o.calls, o.after = 0, 0
	s.Certify.Skip = false
	res, err := Solve(ctx, Problem{Oracle: o, Norm: l2}, make([]float64, 3), &s, MinibatchKM{})
	require.NoError(t, err)
	require.Greater(t, o.calls, o.at-1, "the certificate began")
	require.Equal(t, IterationLimit, res.Status)
	require.Equal(t, ref.X, res.X)
	require.Nil(t, res.Certificate)
	require.Zero(t, o.after)
}
