package solver

import (
	"context"
	"math"
	"slices"
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
	z := geometricMedian(make([]float64, 2), pts, 200)
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
	require.NotNil(t, mk(o).sampled)
	require.Nil(t, mk(declaredSum{o, 1}).sampled)
	require.Nil(t, mk(hidden{o}).sampled, "not a finite sum")
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

// newVRCyclic returns T(x) = Rx + b on R^d in ℓ2, R the signed cyclic shift
// ((Rx)_0 = −x_{d−1}, (Rx)_i = x_{i−1}), an isometry with R^d = −I, so
// T is nonexpansive but no contraction, and sharp: ‖x − x*‖ ≤ S‖T(x) − x‖
// with S = ‖(I − R)^{-1}‖ = 1/(2 sin(π/(2d))). The noise is additive
// N(0, s²I) (the same at every point for the same Sample: samplewise
// Lipschitz), with its unit variance d·s² declared.
func newVRCyclic(seed uint64, d int, s float64) vrDeclared {
	o := newVRAffine(seed, d, 1, false, s, vrGaussian, SamplewiseLipschitz)
	clear(o.a)
	o.a[d-1] = -1
	for i := 1; i < d; i++ {
		o.a[i*d+i-1] = 1
	}
	return vrDeclared{o, float64(d) * s * s}
}

// runTuned runs VR-GHAL with TunedConstants on p from x0 as Solve would and
// returns the run, its status, the certificate it offers for its last point
// and that point.
func runTuned(t *testing.T, p Problem, x0 []float64, st *Settings, m VRGHAL) (*tunedRun, Status, *Certificate, []float64) {
	return runTunedRestarts(t, p, x0, st, m, true)
}

// runTunedRestarts is runTuned with restarts on or off.
func runTunedRestarts(t *testing.T, p Problem, x0 []float64, st *Settings, m VRGHAL, restart bool) (*tunedRun, Status, *Certificate, []float64) {
	t.Helper()
	s, err := st.withDefaults()
	require.NoError(t, err)
	e := newEnv(context.Background(), p, x0, s)
	c, err := m.config(p.Oracle.Model())
	require.NoError(t, err)
	r := newTunedRun(e, c)
	if _, ok := r.rules.schedule.(*restartAtHalving); ok && !restart {
		r.rules.schedule = fixedSchedule{}
	}
	status, ok := StopStatus(r.run())
	require.True(t, ok)
	return r, status, e.ownCertificate(e.best), e.best
}

// vrRestarts returns the restarts a tuned run made.
func vrRestarts(r *tunedRun) int {
	if s, ok := r.rules.schedule.(*restartAtHalving); ok {
		return s.restarts
	}
	return 0
}

// TestVRGHALRestartsOnShift: on the sharp nonexpansive shift the tuned run
// restarts its schedule at least once on every seed, keeps the δ shares of
// the pilot and every epoch it ran within δ (Σ w_k ≤ 1 with one global
// epoch counter), stops with Success on its own rigorous bound, which Solve
// reports as its own certificate, and that bound holds at the returned
// point: over 40 seeds at most 7 bounds are below the true residual (each
// fails with probability at most 0.9δ = 0.045, so more than 7 failures
// would have probability below 1e-3).
func TestVRGHALRestartsOnShift(t *testing.T) {
	const seeds, d, tol = 40, 8, 0.02
	fails := 0
	for seed := range uint64(seeds) {
		o := newVRCyclic(seed, d, 0.1)
		p := Problem{Oracle: o, Norm: vrNorm(t, false, d)}
		st := &Settings{Tol: tol, Seed: seed}
		r, status, cert, x := runTuned(t, p, make([]float64, d), st, VRGHAL{SampleScale: 0.1})
		require.Equal(t, Success, status, "seed %d", seed)
		require.Positive(t, vrRestarts(r), "seed %d: no restart", seed)
		require.NotNil(t, cert, "seed %d", seed)
		require.True(t, cert.Own, "seed %d", seed)
		// Only a variance is declared: the own bound is one of the two
		// variance rules, whichever its plan found cheaper.
		require.Contains(t, []CertRule{RuleVarianceMoM, RuleVarianceTruncated}, cert.Rule, "seed %d", seed)
		require.LessOrEqual(t, cert.Bound, tol, "seed %d", seed)
		if vrTrueResidual(o, p.Norm, x) > cert.Bound {
			fails++
		}
		// Solve takes the same path and reports the same certificate.
		res, err := Solve(context.Background(), p, make([]float64, d), st, VRGHAL{SampleScale: 0.1})
		require.NoError(t, err)
		require.Equal(t, Success, res.Status, "seed %d", seed)
		require.Equal(t, x, res.X, "seed %d", seed)
		require.Equal(t, *cert, *res.Certificate, "seed %d", seed)
	}
	t.Logf("%d of %d own certificates below the true residual", fails, seeds)
	require.LessOrEqual(t, fails, 7, "own certificates below the true residual")
}

// TestVRGHALRestartsSaveSamples: on the sharp shift started far from its
// fixed point with little noise, where the residual follows the anchoring
// term and the paper's accuracy schedule runs far ahead of it, restarts
// reach the run's own bound Tol = 0.1·‖T(x0) − x0‖ with fewer samples on
// every seed than the same run without restarts (which may stop at the
// sample cap instead).
func TestVRGHALRestartsSaveSamples(t *testing.T) {
	const d, seeds = 8, 5
	for seed := range uint64(seeds) {
		o := newVRCyclic(seed, d, 0.01)
		p := Problem{Oracle: o, Norm: vrNorm(t, false, d)}
		x0 := make([]float64, d)
		for i := range x0 {
			x0[i] = 3
		}
		st := &Settings{Tol: 0.1 * vrTrueResidual(o, p.Norm, x0), Seed: seed, MaxSamples: 1e9}
		var samples [2]int64
		for i, restart := range []bool{true, false} {
			r, status, _, _ := runTunedRestarts(t, p, x0, st, VRGHAL{SampleScale: 0.1}, restart)
			samples[i] = r.e.Stats().Samples
			if restart {
				require.Equal(t, Success, status, "seed %d", seed)
			}
		}
		t.Logf("seed %d: %d samples with restarts, %d without", seed, samples[0], samples[1])
		require.Less(t, samples[0], samples[1], "seed %d", seed)
	}
}

// TestVRGHALRepeatNearTol: in the contractive regime, a bound that misses
// Tol by at most vrRepeatFactor at or past the planned epoch repeats the
// accuracy level once; over 40 seeds of a declared affine contraction at
// Tol = 0.002 the repeat happens (on one seed), every run stops with
// Success on its own rigorous bound within its δ shares, and no bound is
// below the true residual more than 7 times (each fails with probability
// at most 0.045).
func TestVRGHALRepeatNearTol(t *testing.T) {
	const seeds, tol = 40, 0.002
	repeats, fails := 0, 0
	for seed := range uint64(seeds) {
		o := vrDeclared{newVRAffine(seed, vrDim, 0.9, false, 0.3, vrGaussian, SamplewiseLipschitz), vrDim * 0.3 * 0.3}
		p := Problem{Oracle: o, Norm: vrNorm(t, false, vrDim)}
		r, status, cert, x := runTuned(t, p, make([]float64, vrDim), &Settings{Tol: tol, Seed: seed}, VRGHAL{Gamma: 0.9, SampleScale: 0.1})
		require.Equal(t, Success, status, "seed %d", seed)
		require.Zero(t, vrRestarts(r), "seed %d: the γ̄ = 1 restarts are off in the contractive regime", seed)
		require.NotNil(t, cert, "seed %d", seed)
		require.LessOrEqual(t, cert.Bound, tol, "seed %d", seed)
		if r.rules.schedule.(*repeatNearTol).repeated > 0 {
			repeats++
		}
		if vrTrueResidual(o, p.Norm, x) > cert.Bound {
			fails++
		}
	}
	t.Logf("%d of %d runs repeated a level; %d own bounds below the true residual", repeats, seeds, fails)
	require.Positive(t, repeats)
	require.LessOrEqual(t, fails, 7)
}

// TestVRTruncatedEstimateDoesNotAllocate: VR-GHAL's truncated epoch-start
// estimate draws into the run's bucket storage, like the median of means it
// replaces, so that a run allocates nothing per estimate once that storage
// is large enough.
func TestVRTruncatedEstimateDoesNotAllocate(t *testing.T) {
	o := vrDeclared{newVRAffine(3, vrDim, 0.9, false, 0.3, vrGaussian, SamplewiseLipschitz), vrDim * 0.3 * 0.3}
	p := Problem{Oracle: o, Norm: vrNorm(t, false, vrDim)}
	r, _, _, _ := runTuned(t, p, make([]float64, vrDim), &Settings{Tol: 0.05, Seed: 1, MaxSamples: 1e12}, VRGHAL{Gamma: 0.9, SampleScale: 0.1})
	dst, x := make([]float64, vrDim), slices.Clone(r.xhat)
	const a, delta = 0.05, 1e-3
	draw := func() {
		est, ok, err := r.truncatedEstimate(dst, x, a, delta, o.v, math.Inf(1), 1)
		require.NoError(t, err)
		require.True(t, ok, "the truncated rule is the cheaper at δ = %g", delta)
		require.Equal(t, RuleVarianceTruncated, est.rule)
	}
	draw()
	require.Zero(t, testing.AllocsPerRun(5, draw))
}

// TestVRGHALAnchoringAcrossRestarts: the anchoring λ̄_k of a γ̄ = 1 run is
// the paper's λ̄₀β^k while no restart is made; after one it never grows,
// holds after an epoch whose anchoring term stayed within the accuracy of
// its estimate, shrinks by β after one whose term exceeded it, and never
// exceeds λ̄₀β^ℓ at level ℓ (so λ̄_k/ε_k ≤ λ̄₀/ε₀); a run on the sharp shift
// restarts and stops with Success.
func TestVRGHALAnchoringAcrossRestarts(t *testing.T) {
	const d = 8
	o := newVRCyclic(1, d, 0.1)
	p := Problem{Oracle: o, Norm: vrNorm(t, false, d)}
	s, err := (&Settings{Tol: 0.01, Seed: 1}).withDefaults()
	require.NoError(t, err)
	c, err := VRGHAL{SampleScale: 0.1}.config(o.Model())
	require.NoError(t, err)
	r := newTunedRun(newEnv(context.Background(), p, make([]float64, d), s), c)
	r.eps0 = 1
	anchor := r.rules.anchor.(*heldAnchoring)
	ratio := r.lbar0 / r.eps0
	prev := math.Inf(1)
	// Epochs 1–4 from x0, a restart before epoch 5 at level 2 (epoch 4's
	// point is the anchor), epochs 5–9 at levels 2 … 6; the anchoring term
	// of epochs 5 and 7 exceeds their accuracy.
	for k := 1; k <= 9; k++ {
		if k == 5 {
			r.cycle, r.level0 = 4, 1
		}
		anchor.observe(k == 6 || k == 8) // the term of epoch k − 1
		lbar := anchor.lambdaBar(r, k)
		epsK := r.eps0 * math.Pow(r.c.beta, float64(r.level(k)))
		switch {
		case k <= 4:
			require.InDelta(t, r.lbar0*math.Pow(r.c.beta, float64(k)), lbar, 1e-15, "epoch %d", k)
		case k == 5 || k == 7:
			require.Equal(t, prev, lbar, "epoch %d: held", k)
		case k == 6 || k == 8:
			require.InDelta(t, prev*r.c.beta, lbar, 1e-15, "epoch %d: shrunk", k)
		case k == 9:
			require.InDelta(t, r.lbar0*math.Pow(r.c.beta, 6), lbar, 1e-15, "epoch 9: the level's λ̄₀β^ℓ")
		}
		require.LessOrEqual(t, lbar, prev, "epoch %d: λ̄ grew", k)
		require.LessOrEqual(t, lbar/epsK, ratio*(1+1e-12), "epoch %d", k)
		prev = lbar
	}

	run, status, _, _ := runTuned(t, p, make([]float64, d), &Settings{Tol: 0.01, Seed: 1}, VRGHAL{SampleScale: 0.1})
	require.Equal(t, Success, status)
	require.Positive(t, vrRestarts(run))
}

// TestVRGHALFinalEpochsRunLong: the final epochs (at or past the planned
// level K* in the contractive regime, from K* − vrLongLead with γ̄ = 1) run
// their inner steps until the running residual is at most
// min{βR̃_{k−1}, θ·Tol} (longFinalEpochs). Over 20 seeds of a declared affine
// contraction in ℓ∞ and in ℓ2 at Tol = 0.002, and of the declared cyclic
// shift (nonexpansive, restarts on) in ℓ2 at Tol = 0.01, every run stops
// with Success on its own bound within its δ shares, no bound is below the
// true residual more than 4 times per problem (each fails with probability
// at most 0.045), and the runs draw fewer samples in all than the same runs
// with the rule switched off.
func TestVRGHALFinalEpochsRunLong(t *testing.T) {
	const seeds = 20
	cases := []struct {
		name  string
		linf  bool
		gamma float64
		tol   float64
		make  func(seed uint64) vrDeclared
	}{
		{"affine-linf", true, 0.9, 0.002, func(seed uint64) vrDeclared {
			return vrDeclared{newVRAffine(seed, vrDim, 0.9, true, 0.3, vrGaussian, SamplewiseLipschitz), vrDim * 0.3 * 0.3}
		}},
		{"affine-l2", false, 0.9, 0.002, func(seed uint64) vrDeclared {
			return vrDeclared{newVRAffine(seed, vrDim, 0.9, false, 0.3, vrGaussian, SamplewiseLipschitz), vrDim * 0.3 * 0.3}
		}},
		{"shift-l2", false, 1, 0.01, func(seed uint64) vrDeclared { return newVRCyclic(seed, vrDim, 0.1) }},
	}
	for _, tc := range cases {
		var on, off int64
		fails := 0
		for seed := range uint64(seeds) {
			o := tc.make(seed)
			p := Problem{Oracle: o, Norm: vrNorm(t, tc.linf, vrDim)}
			for _, long := range []bool{true, false} {
				n, below := vrToggledRun(t, o, p, tc.gamma, tc.tol, seed, func(r *tunedRun) {
					if !long {
						r.rules.length = paperLength{}
					}
				})
				if !long {
					off += n
					continue
				}
				on += n
				if below {
					fails++
				}
			}
		}
		t.Logf("%s: %d samples with the long final epochs, %d without; %d own bounds below the true residual", tc.name, on, off, fails)
		require.Less(t, on, off, tc.name)
		require.LessOrEqual(t, fails, 4, tc.name)
	}
}

// TestVRGHALBalancedAim checks balanceEstimates.aim's arithmetic: the aim a when an
// estimate at a would cost at least vrEstShare of the epoch's inner
// samples (or nothing is known of the last estimate); otherwise the radius
// at which the last estimate's cost, scaled by (its aim/radius)², is that
// share, whatever the budget left (the run's path must not depend on
// MaxSamples).
func TestVRGHALBalancedAim(t *testing.T) {
	o := vrDeclared{newVRAffine(1, vrDim, 0.9, false, 0.3, vrGaussian, BoundedVariance), vrDim * 0.3 * 0.3}
	p := Problem{Oracle: o, Norm: vrNorm(t, false, vrDim)}
	s, err := (&Settings{Tol: 0.01, MaxSamples: 1 << 20}).withDefaults()
	require.NoError(t, err)
	c, err := VRGHAL{}.config(p.Oracle.Model())
	require.NoError(t, err)
	r := newTunedRun(newEnv(context.Background(), p, make([]float64, vrDim), s), c)
	require.IsType(t, balanceEstimates{}, r.rules.balance, "on under BoundedVariance")
	require.Equal(t, 0.02, r.rules.balance.aim(r, 0.02, 1e5), "no last estimate")
	r.lastEst, r.lastAim = 1000, 0.04 // an estimate at 0.02 costs 4000
	require.Equal(t, 0.02, r.rules.balance.aim(r, 0.02, 4e4), "4000 is the share 0.1 of 4e4")
	require.Equal(t, 0.02, r.rules.balance.aim(r, 0.02, 1e4), "cheap inner steps")
	aim := r.rules.balance.aim(r, 0.02, 1.6e5) // the share is 16000: 4× the cost, half the radius
	require.InDelta(t, 0.01, aim, 1e-15)
	require.InDelta(t, 1.6e4, r.lastEst*(r.lastAim/aim)*(r.lastAim/aim), 1e-6)
	require.InDelta(t, 0.02/32, r.rules.balance.aim(r, 0.02, 4.096e7), 1e-15, "the share 4.096e6, whatever the budget (MaxSamples 2^20 is not consulted)")
	for _, m := range []Model{LipschitzInExpectation, SamplewiseLipschitz} {
		c, err := VRGHAL{Model: m}.config(SamplewiseLipschitz)
		require.NoError(t, err)
		o := vrDeclared{newVRAffine(1, vrDim, 0.9, false, 0.3, vrGaussian, SamplewiseLipschitz), vrDim * 0.3 * 0.3}
		r := newTunedRun(newEnv(context.Background(), Problem{Oracle: o, Norm: p.Norm}, make([]float64, vrDim), s), c)
		require.IsType(t, balanceInner{}, r.rules.balance, "%v: the inner steps are balanced instead", m)
	}
}

// TestVRGHALBalancedEstimates runs VR-GHAL under BoundedVariance on 20
// seeds of a declared affine contraction in ℓ2 with and without the
// balanced closing estimates: every run must stop with Success, the own
// bounds with balancing must stay above the true residual (up to the
// run's δ), and the closing estimates' larger share must cost fewer
// samples in all (about 4% fewer here; 2.7 times fewer at noise 0.02).
func TestVRGHALBalancedEstimates(t *testing.T) {
	const seeds = 20
	const tol = 0.005
	const noise = 0.05 // estimates well below a tenth of the inner steps
	var on, off int64
	fails := 0
	for seed := range uint64(seeds) {
		o := vrDeclared{newVRAffine(seed, vrDim, 0.9, false, noise, vrGaussian, BoundedVariance), vrDim * noise * noise}
		p := Problem{Oracle: o, Norm: vrNorm(t, false, vrDim)}
		for _, balance := range []bool{true, false} {
			n, below := vrToggledRun(t, o, p, 0.9, tol, seed, func(r *tunedRun) {
				if !balance {
					r.rules.balance = noBalance{}
				}
			})
			if !balance {
				off += n
				continue
			}
			on += n
			if below {
				fails++
			}
		}
	}
	t.Logf("%d samples with balanced estimates, %d without; %d own bounds below the true residual", on, off, fails)
	require.Less(t, on, off)
	require.LessOrEqual(t, fails, 4)
}

// vrToggledRun runs VR-GHAL (TunedConstants, Gamma gamma, SampleScale 0.1)
// on p from 0 to Tol = tol with seed, after set has adjusted the tuned
// run, requires Success with an own certificate whose Bound is at most
// tol, and returns the samples drawn and whether that Bound lies below the
// true residual of the returned point.
func vrToggledRun(t *testing.T, o vrExactOracle, p Problem, gamma, tol float64, seed uint64, set func(*tunedRun)) (int64, bool) {
	t.Helper()
	s, err := (&Settings{Tol: tol, Seed: seed}).withDefaults()
	require.NoError(t, err)
	e := newEnv(context.Background(), p, make([]float64, vrDim), s)
	c, err := VRGHAL{Gamma: gamma, SampleScale: 0.1}.config(p.Oracle.Model())
	require.NoError(t, err)
	r := newTunedRun(e, c)
	set(r)
	status, ok := StopStatus(r.run())
	require.True(t, ok)
	require.Equal(t, Success, status, "seed %d", seed)
	cert := e.ownCertificate(e.best)
	require.NotNil(t, cert)
	require.LessOrEqual(t, cert.Bound, tol)
	return e.Stats().Samples, vrTrueResidual(o, p.Norm, e.best) > cert.Bound
}
