package solver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVRGHALWarmStart: a start point from a previous solve is honoured: the
// warm solves to a tighter tolerance draw fewer samples in all than the
// same solves from the cold start (over eight seeds: on a single seed the
// two can tie within a fraction of a percent, as both end with the same
// planned last epochs), and all end with a proven bound.
func TestVRGHALWarmStart(t *testing.T) {
	o := vrDeclared{newVRAffine(3, vrDim, 0.9, false, 0.3, vrGaussian, SamplewiseLipschitz), vrDim * 0.3 * 0.3}
	p := Problem{Oracle: o, Norm: vrNorm(t, false, vrDim)}
	m := VRGHAL{Gamma: 0.9}
	var cold, warm int64
	for seed := range uint64(8) {
		solve := func(x0 []float64, tol float64) *Result {
			res, err := Solve(context.Background(), p, x0, &Settings{Tol: tol, MaxIter: 40, Seed: seed, Certify: CertifySettings{Skip: true}}, m)
			require.NoError(t, err)
			return res
		}
		first := solve(make([]float64, vrDim), 0.05)
		c := solve(make([]float64, vrDim), 0.01)
		w := solve(first.X, 0.01)
		require.Equal(t, Success, c.Status, "seed %d", seed)
		require.Equal(t, Success, w.Status, "seed %d", seed)
		t.Logf("seed %d: cold %d samples, warm %d (+%d for the first solve)", seed, c.Stats.Samples, w.Stats.Samples, first.Stats.Samples)
		cold += c.Stats.Samples
		warm += w.Stats.Samples
	}
	require.Less(t, warm, cold)
}

// TestVRGHALConstantsValidate: an unknown Constants value is an error
// naming the field.
func TestVRGHALConstantsValidate(t *testing.T) {
	_, err := VRGHAL{Constants: VRConstants(7)}.config(SamplewiseLipschitz)
	require.ErrorContains(t, err, "VRGHAL.Constants")
	require.Equal(t, "tuned", TunedConstants.String())
	require.Equal(t, "paper", PaperConstants.String())
}

// TestGeometricMedianRobust: the geometric median of points with a minority
// of outliers stays near the majority, where the mean does not.
func TestGeometricMedianRobust(t *testing.T) {
	pts := [][]float64{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0.5, 0.5}, {100, 100}, {-100, 100}}
	z := GeometricMedian(make([]float64, 2), pts, 200)
	require.InDelta(t, 0.5, z[0], 0.3)
	require.InDelta(t, 0.6, z[1], 0.4)
}

// vrDeclared declares the unit variance bound v of a Gaussian vrAffine
// (E‖g‖₂² = d·s² for d coordinates of standard deviation s).
type vrDeclared struct {
	*vrAffine
	v float64
}

func (o vrDeclared) NoiseVariance(_ []float64, _ Norm) float64 { return o.v }

// TestVRGHALSampledFiniteSum: on a finite sum that declares no variance,
// VR-GHAL runs in sampled mode: sampled epoch starts sized to the epoch's
// target, inner batches from the measured difference variance, and one
// exact evaluation checking a sampled bound. It stops with Success, which
// the finite-sum certificate confirms, lands within that certificate of
// the fixed point, pays less than two exact calls besides the certificate's
// (one exact check and less than M sampled), and the unit samples the oracle saw add up to
// Stats and the certificate's.
func TestVRGHALSampledFiniteSum(t *testing.T) {
	// M large enough that a sampled estimate at the final accuracy (about
	// 1e4 unit samples here) costs well under half an exact call.
	requireCertifiedSums(t, 1<<16, func(gamma float64) Method { return VRGHAL{Gamma: gamma} }, nil)
}

// TestVRGHALSampledExactStarts: far below what sampling reaches, the epoch
// starts and inner steps become exact evaluations (once their size would
// reach M) and the run still ends with an exact, certified residual; the
// samples add up, every exact evaluation counting M.
func TestVRGHALSampledExactStarts(t *testing.T) {
	const gamma, tol = 0.5, 1e-9
	o := newAffineSum(256, 4, gamma, 3)
	p := Problem{Oracle: o, Norm: LP{p: 2, d: 4}}
	res, err := Solve(context.Background(), p, make([]float64, 4), &Settings{Tol: tol, Seed: 1, MaxIter: 200}, VRGHAL{Gamma: gamma})
	require.NoError(t, err)
	require.Equal(t, Success, res.Status)
	require.LessOrEqual(t, res.Certificate.Bound, tol)
	require.Equal(t, o.counted, res.Stats.Samples+res.Certificate.Samples)
	// Sampled estimates never reach half an exact call: the run is a few
	// exact calls plus less than half a call per epoch.
	require.Less(t, res.Stats.Samples, int64(o.Terms())*int64(res.Stats.Iterations+2))
}

// TestVRGHALSampledModeOnlyUndeclared: a variance declaration keeps the
// rigorous epoch-start estimator (sampled mode is off), and a finite sum
// without one turns it on.
func TestVRGHALSampledModeOnlyUndeclared(t *testing.T) {
	mk := func(o Oracle) *tunedRun {
		e := newEnv(context.Background(), Problem{Oracle: o, Norm: LP{p: 2, d: 8}}, make([]float64, 8), Settings{})
		c, err := VRGHAL{Gamma: 0.5}.config(o.Model())
		require.NoError(t, err)
		return newTunedRun(e, c)
	}
	o := newAffineSum(64, 8, 0.5, 1)
	require.True(t, mk(o).sampled)
	require.False(t, mk(declaredSum{o, 1}).sampled)
	require.False(t, mk(hidden{o}).sampled, "not a finite sum")
}

// declaredSum declares a unit variance bound for an affineSum.
type declaredSum struct {
	*affineSum
	v float64
}

func (o declaredSum) NoiseVariance(_ []float64, _ Norm) float64 { return o.v }

// exactCounted counts the exact evaluations of an affineSum (EvalExact, or
// an Eval whose size reaches M).
type exactCounted struct {
	*affineSum
	exact int
}

func (o *exactCounted) EvalExact(dst, x []float64) error {
	o.exact++
	return o.affineSum.EvalExact(dst, x)
}

func (o *exactCounted) Eval(dst, x []float64, smp Sample) (int, error) {
	if smp.Size >= o.Terms() {
		o.exact++
	}
	return o.affineSum.Eval(dst, x, smp)
}

// TestVRGHALSampledTwoExactCalls: where no sampled estimate can reach Tol
// (a standard error of Tol/2 would need hundreds of times M unit samples)
// and the map contracts strongly (terms a_i x + c_i with a_i within 0.02 of
// 0.008, so ā ≈ 0.008, far below the declared γ̄ = 0.5; one exact step from
// the warm-up's first point is not enough), the sampled warm-up ends at its
// floor and two exact calls certify, from a start near the fixed point and
// from a far one (where the warm-up measures the contraction): VR-GHAL
// stops with Success after at most two exact evaluations and fewer than M
// sampled unit samples, the finite-sum certificate confirms the bound, and
// the point lies within it (divided by 1 − γ̄) of the exact fixed point.
func TestVRGHALSampledTwoExactCalls(t *testing.T) {
	const gamma, spread, shift, tol, m = 0.5, 0.02, 0.008, 1e-3, 4096
	for _, norm := range []Norm{LP{p: 2, d: 8}, LInf{d: 8}} {
		for _, start := range []float64{0, 100} {
			for seed := uint64(1); seed <= 5; seed++ {
				o := &exactCounted{affineSum: newAffineSum(m, 8, spread, seed)}
				for i := range o.a {
					o.a[i] += shift
				}
				p := Problem{Oracle: o, Norm: norm}
				x0 := make([]float64, 8)
				for i := range x0 {
					x0[i] = start
				}
				res, err := Solve(context.Background(), p, x0, &Settings{Tol: tol, Seed: seed}, VRGHAL{Gamma: gamma})
				requireCertifiedSum(t, o.affineSum, o.counted, norm, res, err, gamma, tol, "start %v seed %d", start, seed)
				exact := o.exact
				if res.Certificate.Samples > 0 {
					exact-- // the certificate's own call, when it could not reuse the run's
				}
				sampled := res.Stats.Samples - int64(exact)*m
				t.Logf("%s start %v seed %d: %d exact calls, %d sampled unit samples", norm, start, seed, exact, sampled)
				require.LessOrEqual(t, exact, 2, "start %v seed %d", start, seed)
				require.Less(t, sampled, int64(m), "start %v seed %d", start, seed)
			}
		}
	}
}

// TestVRTunedDeltaWeights checks that the δ shares of the tuned schedule
// sum to at most 1 over the pilot and every epoch, whatever the plan K*,
// so that the union of all the run's events fails with probability at
// most δ.
func TestVRTunedDeltaWeights(t *testing.T) {
	for _, plan := range []int{0, 1, 2, 5, 12, 40} {
		r := &tunedRun{vrRun: &vrRun{c: vrConfig{delta: 0.05}}, plan: plan}
		// The pilot is sized before K* is known: its weight must not
		// depend on the plan.
		sum := r.weight(0)
		if sum != vrPilotWeight {
			t.Errorf("K* = %d: pilot weight %v, want %v", plan, sum, vrPilotWeight)
		}
		for k := 1; k <= plan+1_000_000; k++ {
			sum += r.weight(k)
		}
		// The tail beyond the loop is below c/1e6, c = r.weight(plan+1);
		// the sum is at most 1 − 2^{−(K*+1)} analytically, so a rounding
		// slack of 1e-9 still catches any share that does not fit.
		if sum+r.weight(plan+1)/1e6 > 1+1e-9 {
			t.Errorf("K* = %d: Σ w_k = %v exceeds 1", plan, sum)
		}
	}
}
