package problems

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestLogBinomialPMF compares the saddle-point log mass with the log-gamma
// formula where the latter is accurate.
func TestLogBinomialPMF(t *testing.T) {
	for _, tc := range []struct{ n, p float64 }{{20, 0.3}, {1000, 0.5}, {1e5, 0.01}} {
		for _, k := range []float64{0, 1, 7, math.Floor(tc.n * tc.p), tc.n - 1, tc.n} {
			g, _ := math.Lgamma(tc.n + 1)
			g1, _ := math.Lgamma(k + 1)
			g2, _ := math.Lgamma(tc.n - k + 1)
			want := g - g1 - g2 + k*math.Log(tc.p) + (tc.n-k)*math.Log1p(-tc.p)
			got := logBinomialPMF(k, tc.n, tc.p)
			require.InDelta(t, want, got, 1e-9*math.Max(1, math.Abs(want)), "n %v p %v k %v", tc.n, tc.p, k)
		}
	}
}

// TestBinomialHugeTrials draws Binomial(n, p) for n far beyond gonum's
// accurate range, where its sampler never accepts: every draw returns, lies
// in [0, n], and the sample mean lies within 6 standard errors of np.
func TestBinomialHugeTrials(t *testing.T) {
	const draws = 2000
	for _, tc := range []struct{ n, p float64 }{
		{binomialDirect + 1, 0.3}, {1e15, 0.7}, {MDPMaxSample, 0.25}, {MDPMaxSample, 1e-12}, {MDPMaxSample, 1e-17},
	} {
		ns := newNoiseSource(7)
		ns.reset(11)
		sum := 0.0
		for range draws {
			x := binomial(tc.n, tc.p, &ns)
			require.True(t, x >= 0 && x <= tc.n && x == math.Floor(x), "n %v p %v: %v", tc.n, tc.p, x)
			sum += x
		}
		mean, sd := tc.n*tc.p, math.Sqrt(tc.n*tc.p*(1-tc.p)/draws)
		require.InDelta(t, mean, sum/draws, 6*sd+1e-9*mean, "n %v p %v", tc.n, tc.p)
	}
}

// TestMDPHugeSample evaluates "mdp" at the largest Sample.Size: it returns
// (it looped forever in the binomial sampler before), reports MDPMaxSample
// unit samples, and its average is within the concentration radius of the
// exact operator.
func TestMDPHugeSample(t *testing.T) {
	p, err := New(Config{Name: "mdp", Seed: 3})
	require.NoError(t, err)
	o := p.Oracle
	q := make([]float64, o.Len())
	for i := range q {
		q[i] = float64(i%7) / 7
	}
	got, want := make([]float64, len(q)), make([]float64, len(q))
	require.NoError(t, o.EvalExact(want, q))
	n, err := o.Eval(got, q, solver.Sample{Seed: 5, Size: math.MaxInt})
	require.NoError(t, err)
	require.Equal(t, MDPMaxSample, n)
	for i := range got {
		// |η| ≤ γ·span ≤ 1 per unit sample; 1e-6 is over 10⁶ standard errors
		// at 2⁵³ samples and far below the spread of one sample.
		require.InDelta(t, want[i], got[i], 1e-6, "entry %d", i)
	}
}

// TestAveragedHugeSample evaluates "averaged" at the largest Sample.Size:
// it returns the exact average at once and reports its M terms.
func TestAveragedHugeSample(t *testing.T) {
	p, err := New(Config{Name: "averaged", Seed: 3})
	require.NoError(t, err)
	x := make([]float64, p.Oracle.Len())
	for i := range x {
		x[i] = float64(i%5) - 2
	}
	got, want := make([]float64, len(x)), make([]float64, len(x))
	require.NoError(t, p.Oracle.EvalExact(want, x))
	n, err := p.Oracle.Eval(got, x, solver.Sample{Seed: 5, Size: math.MaxInt})
	require.NoError(t, err)
	require.Equal(t, DefaultTerms, n)
	require.Equal(t, want, got)
}
