package solver

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVRGHALSettingsErrors(t *testing.T) {
	o := newVRAffine(1, 3, 0.5, false, 0.1, vrGaussian, LipschitzInExpectation)
	p := Problem{Oracle: o, Norm: vrNorm(t, false, 3)}
	for _, tc := range []struct {
		m     VRGHAL
		field string
	}{
		{VRGHAL{Delta: 1}, "VRGHAL.Delta"},
		{VRGHAL{Delta: -0.1}, "VRGHAL.Delta"},
		{VRGHAL{Delta: math.NaN()}, "VRGHAL.Delta"},
		{VRGHAL{Gamma: 1.01}, "VRGHAL.Gamma"},
		{VRGHAL{Gamma: -1}, "VRGHAL.Gamma"},
		{VRGHAL{Beta: 1}, "VRGHAL.Beta"},
		{VRGHAL{Beta: -0.5}, "VRGHAL.Beta"},
		{VRGHAL{SampleScale: -1}, "VRGHAL.SampleScale"},
		{VRGHAL{SampleScale: math.Inf(1)}, "VRGHAL.SampleScale"},
		{VRGHAL{Eps0: -1}, "VRGHAL.Eps0"},
		{VRGHAL{Lambda0: -2}, "VRGHAL.Lambda0"},
		{VRGHAL{Model: SamplewiseLipschitz}, "VRGHAL.Model"},
		{VRGHAL{Model: Deterministic}, "VRGHAL.Model"},
		{VRGHAL{Model: Model(9)}, "VRGHAL.Model"},
	} {
		err := tc.m.Validate(p)
		require.ErrorContains(t, err, tc.field, "%+v", tc.m)
		_, err = Solve(context.Background(), p, make([]float64, 3), nil, tc.m)
		require.ErrorContains(t, err, tc.field, "%+v", tc.m)
	}
	// Zero values are the defaults; weaker models than the oracle's and the
	// boundary γ̄ = 1 are allowed.
	for _, m := range []VRGHAL{{}, {Gamma: 1}, {Model: BoundedVariance}, {Model: LipschitzInExpectation}} {
		require.NoError(t, m.Validate(p))
	}
	c, err := VRGHAL{}.config(LipschitzInExpectation)
	require.NoError(t, err)
	require.Equal(t, vrConfig{beta: 0.5, delta: 0.05, gamma: 1, eps0: 1, lambda0: 1, scale: 1, model: LipschitzInExpectation}, c)
}

func TestVRGHALSchedule(t *testing.T) {
	// Hand-computed from the paper's formulas (values in the comments).
	def, err := VRGHAL{}.config(BoundedVariance)
	require.NoError(t, err)
	m0, err := def.momPlan(0)
	require.NoError(t, err)
	// MoME(βε₀/2, βδ₀/2) = (0.25, 0.0125): ⌈18 ln 80⌉ = ⌈78.88⌉, ⌈27/0.25²⌉.
	require.Equal(t, vrMoM{eps: 0.25, delta: 0.0125, buckets: 79, size: 432}, m0)

	// Epoch 1 with defaults and R̃₀ = 2: ε₁ = 1/2, λ̄₁ = 1/2, λ₁ = 1/3,
	// δ₁ = 0.025, ρ₁ = 2/3, J₁ = ⌈ln ½ / ln ⅔⌉ = ⌈1.71⌉ = 2,
	// n₁ = ⌈2·⅔·2·ln 160/1.5⌉ = ⌈9.02⌉ = 10, closing MoME (0.125, 0.00625):
	// ⌈18 ln 160⌉ = ⌈91.35⌉ buckets of ⌈27/0.125²⌉.
	for _, tc := range []struct {
		model  Model
		copies int
		batch  int
	}{
		{BoundedVariance, 10, 64},         // ⌈4·2²/0.25⌉
		{LipschitzInExpectation, 10, 576}, // ⌈4·4/(0.25·(1/3)²)⌉
		{SamplewiseLipschitz, 10, 192},    // ⌈4·4/(0.25·(1/3))⌉
		{Deterministic, 1, 1},
	} {
		c := def
		c.model = tc.model
		p, err := c.epochPlan(1, 2)
		require.NoError(t, err)
		require.Equal(t, 1, p.k)
		require.InDelta(t, 0.5, p.eps, 1e-15)
		require.InDelta(t, 0.5, p.lambdaBar, 1e-15)
		require.InDelta(t, 1.0/3, p.lambda, 1e-15)
		require.InDelta(t, 0.025, p.delta, 1e-17)
		require.InDelta(t, 2.0/3, p.rho, 1e-15)
		require.Equal(t, 2, p.steps)
		require.Equal(t, tc.copies, p.copies, "%v", tc.model)
		require.Equal(t, tc.batch, p.batch, "%v", tc.model)
		if tc.model == Deterministic {
			require.Equal(t, 1, p.evals)
			require.Equal(t, vrMoM{eps: 0.125, delta: 0.00625, buckets: 1, size: 1}, p.mom)
			continue
		}
		require.Equal(t, 2, p.evals)
		require.Equal(t, vrMoM{eps: 0.125, delta: 0.00625, buckets: 92, size: 1728}, p.mom)
		// Requested samples: (J−1)·n·2·m + buckets·size.
		require.Equal(t, float64(1*10*2*tc.batch+92*1728), p.samples())
	}

	// Contractive, SampleScale ½: β = ½, δ = 0.1, γ̄ = 0.8, epoch 3, R̃₂ = 0.4.
	// ε₃ = λ̄₃ = 1/8, λ₃ = 1/9, δ₃ = 0.0125, ρ₃ = 0.8·8/9 = 0.7111,
	// J₃ = ⌈ln ½ / ln 0.7111⌉ = ⌈2.03⌉ = 3,
	// n₃ = ⌈2·(8/9)·0.8·0.4·ln 320/0.375⌉ = ⌈8.75⌉ = 9, closing MoME
	// (1/32, 0.003125): ⌈18 ln 320⌉ = ⌈103.83⌉ buckets of ⌈½·27·32²⌉.
	half, err := VRGHAL{Delta: 0.1, Gamma: 0.8, SampleScale: 0.5}.config(SamplewiseLipschitz)
	require.NoError(t, err)
	for _, tc := range []struct {
		model Model
		batch int
	}{
		{BoundedVariance, 1152},       // ⌈½·4·3²·64⌉
		{LipschitzInExpectation, 246}, // ⌈½·4·0.16·64/0.2889²⌉ = ⌈245.40⌉
		{SamplewiseLipschitz, 71},     // ⌈½·4·0.16·64/0.2889⌉ = ⌈70.89⌉
	} {
		c := half
		c.model = tc.model
		p, err := c.epochPlan(3, 0.4)
		require.NoError(t, err)
		require.Equal(t, 3, p.steps)
		require.Equal(t, 9, p.copies)
		require.Equal(t, tc.batch, p.batch, "%v", tc.model)
		require.Equal(t, vrMoM{eps: 1.0 / 32, delta: 0.003125, buckets: 104, size: 13824}, p.mom)
	}

	// γ̄(1 − λ_k) ≤ β: one inner step, no difference estimates.
	c, err := VRGHAL{Gamma: 0.5}.config(BoundedVariance)
	require.NoError(t, err)
	p, err := c.epochPlan(2, 1)
	require.NoError(t, err)
	require.Equal(t, 1, p.steps)
	require.Equal(t, p.mom.samples(), p.samples())

	// R̃ = 0 (a fixed point): sizes are at least 1.
	p, err = def.epochPlan(1, 0)
	require.NoError(t, err)
	require.Equal(t, 1, p.copies)

	// Sizes beyond 2^62 are refused, not wrapped around, as are epochs whose
	// λ_k underflows.
	_, err = def.epochPlan(40, 1)
	require.ErrorContains(t, err, "epoch 40 needs a bucket size")
	det := def
	det.model = Deterministic
	_, err = det.epochPlan(2000, 1)
	require.ErrorContains(t, err, "epoch 2000 needs infinitely many inner steps")
}

// vrCase is a convergence test problem.
type vrCase struct {
	name string
	linf bool
	make func(seed uint64, linf bool) vrExactOracle
	m    VRGHAL
}

const vrDim = 5

var vrCases = []vrCase{
	// (a) Contractive affine map (γ = 0.8) with Gaussian noise, assuming only
	// bounded variance (independent seeds at the two points).
	{"affine-bounded-variance-l2", false, func(s uint64, linf bool) vrExactOracle {
		return newVRAffine(s, vrDim, 0.8, linf, 0.3, vrGaussian, BoundedVariance)
	}, VRGHAL{Gamma: 0.8}},
	{"affine-bounded-variance-linf", true, func(s uint64, linf bool) vrExactOracle {
		return newVRAffine(s, vrDim, 0.8, linf, 0.3, vrGaussian, BoundedVariance)
	}, VRGHAL{Gamma: 0.8}},
	// The same, Lipschitz in expectation, with a tenth of the paper's sample
	// sizes.
	{"affine-lipschitz-l2-scale0.1", false, func(s uint64, linf bool) vrExactOracle {
		return newVRAffine(s, vrDim, 0.8, linf, 0.3, vrGaussian, LipschitzInExpectation)
	}, VRGHAL{Gamma: 0.8, SampleScale: 0.1}},
	// (b) Samplewise nonexpansive random maps (γ = 1, γ̄ = 1).
	{"shift-samplewise-l2", false, func(s uint64, _ bool) vrExactOracle { return newVRShift(s, vrDim+1, 0.1, 0.3) }, VRGHAL{}},
	{"shift-samplewise-linf", true, func(s uint64, _ bool) vrExactOracle { return newVRShift(s, vrDim+1, 0.1, 0.3) }, VRGHAL{}},
}

func TestVRGHALReachesEps(t *testing.T) {
	if testing.Short() {
		t.Skip("slow under -race; runs in the full suite")
	}
	// Each run stops once its estimated residual R̃_k ≤ ε/2 (or after 14
	// epochs); the true residual must be ≤ ε in at least a fraction 1 − δ of
	// the runs, up to three binomial standard deviations.
	const (
		eps   = 0.01
		delta = 0.05
		runs  = 30
	)
	for _, tc := range vrCases {
		t.Run(tc.name, func(t *testing.T) {
			fails := 0
			var worst float64
			for seed := range uint64(runs) {
				o := tc.make(seed, tc.linf)
				norm := vrNorm(t, tc.linf, o.Len())
				m := tc.m
				m.Delta = delta
				res, err := Solve(context.Background(), Problem{Oracle: o, Norm: norm}, make([]float64, o.Len()),
					&Settings{Tol: eps / 2, MaxIter: 14, Seed: seed, Certify: CertifySettings{Skip: true}}, m)
				require.NoError(t, err)
				r := vrTrueResidual(o, norm, res.X)
				worst = max(worst, r)
				if r > eps {
					fails++
				}
			}
			t.Logf("%d/%d runs above ε = %v; worst true residual %.4g", fails, runs, eps, worst)
			require.LessOrEqual(t, float64(fails)/runs, delta+vrBinomialSlack(delta, runs))
		})
	}
}

func TestVRGHALSamplesFollowSchedule(t *testing.T) {
	// The Gaussian oracle consumes exactly the requested sizes, so the
	// samples and calls between trace points must be those of the schedule
	// computed from the recorded R̃_{k−1}: (J_k − 1)·n_k·2 calls of m_{k,j}
	// and the closing median-of-means.
	o := newVRAffine(3, vrDim, 0.9, false, 0.3, vrGaussian, SamplewiseLipschitz)
	p := Problem{Oracle: o, Norm: vrNorm(t, false, vrDim)}
	for _, model := range []Model{BoundedVariance, LipschitzInExpectation, SamplewiseLipschitz} {
		var total [2]int64
		for i, scale := range []float64{1, 0.1} {
			m := VRGHAL{Gamma: 0.9, Model: model, SampleScale: scale, Constants: PaperConstants}
			res, err := Solve(context.Background(), p, make([]float64, vrDim), &Settings{Tol: 1e-12, MaxIter: 4, Seed: 5}, m)
			require.NoError(t, err)
			require.Equal(t, IterationLimit, res.Status)
			tr := res.Stats.Trace
			require.Len(t, tr, 5)
			c, err := m.config(o.Model())
			require.NoError(t, err)
			m0, err := c.momPlan(0)
			require.NoError(t, err)
			require.Equal(t, int64(m0.samples()), tr[0].Samples)
			require.Equal(t, int64(m0.buckets), tr[0].Calls)
			for k := 1; k < len(tr); k++ {
				plan, err := c.epochPlan(k, tr[k-1].Residual)
				require.NoError(t, err)
				require.Equal(t, int64(plan.samples()), tr[k].Samples-tr[k-1].Samples, "%v scale %v epoch %d", model, scale, k)
				require.Equal(t, int64((plan.steps-1)*plan.copies*2+plan.mom.buckets), tr[k].Calls-tr[k-1].Calls)
			}
			require.Equal(t, tr[4].Samples, res.Stats.Samples)
			require.Equal(t, res.Residual, tr[4].Residual)
			require.Equal(t, res.Certificate.Samples, int64(res.Certificate.Calls)*int64(c.mustMoM(t, 4).size),
				"the certificate uses the last bucket size")
			total[i] = res.Stats.Samples
		}
		require.Less(t, float64(total[1]), 0.2*float64(total[0]), "SampleScale 0.1 draws about a tenth")
	}
}

func (c *vrConfig) mustMoM(t *testing.T, k int) vrMoM {
	m, err := c.momPlan(k)
	require.NoError(t, err)
	return m
}

func TestVRGHALAnytimeStops(t *testing.T) {
	o := newVRShift(7, vrDim, 0.1, 0.3)
	p := Problem{Oracle: o, Norm: vrNorm(t, true, vrDim)}
	x0 := make([]float64, vrDim)
	m := VRGHAL{SampleScale: 0.05, Constants: PaperConstants}
	solve := func(ctx context.Context, s Settings) *Result {
		s.Seed, s.Tol = 11, 1e-12
		s.Certify.Skip = true
		res, err := Solve(ctx, p, x0, &s, m)
		require.NoError(t, err)
		return res
	}
	full := solve(context.Background(), Settings{MaxIter: 4})
	require.Equal(t, IterationLimit, full.Status)
	two := solve(context.Background(), Settings{MaxIter: 2})
	require.Equal(t, vrUntimed(full.Stats.Trace[:3]), vrUntimed(two.Stats.Trace), "the runs share their first epochs")

	// A budget that ends within epoch 3: no sample of it is drawn, and the
	// result is epoch 2's point.
	lim := solve(context.Background(), Settings{MaxIter: 4, MaxSamples: full.Stats.Trace[3].Samples - 1})
	require.Equal(t, SampleLimit, lim.Status)
	require.Equal(t, 2, lim.Stats.Iterations)
	require.Equal(t, full.Stats.Trace[2].Samples, lim.Stats.Samples)
	require.Equal(t, two.X, lim.X)
	require.Equal(t, two.Residual, lim.Residual)

	// A budget smaller than the first median-of-means: x0 comes back
	// unrecorded.
	lim = solve(context.Background(), Settings{MaxSamples: 10})
	require.Equal(t, SampleLimit, lim.Status)
	require.Equal(t, x0, lim.X)
	require.Zero(t, lim.Stats.Samples)
	require.True(t, math.IsInf(lim.Residual, 1))

	// Cancellation after epoch 2 is recorded returns epoch 2's point.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	canceled := solve(ctx, Settings{MaxIter: 4, Recorder: RecorderFunc(func(p TracePoint) error {
		if p.Iter == 2 {
			cancel()
		}
		return nil
	})})
	require.Equal(t, Canceled, canceled.Status)
	require.Equal(t, 2, canceled.Stats.Iterations)
	require.Equal(t, two.X, canceled.X)

	// A smaller tolerance extends the same trajectory: the larger
	// tolerance's trace is a prefix.
	require.Equal(t, full.X, solve(context.Background(), Settings{MaxIter: 4}).X, "runs are reproducible")
	tol := full.Stats.Trace[2].Residual
	early, err := Solve(context.Background(), p, x0, &Settings{Seed: 11, Tol: tol, MaxIter: 4, Certify: CertifySettings{Skip: true}}, m)
	require.NoError(t, err)
	require.Equal(t, ToleranceEstimated, early.Status, "vrShift declares no variance: the stop is on the estimate")
	require.LessOrEqual(t, early.Stats.Iterations, 2)
	require.Equal(t, vrUntimed(full.Stats.Trace[:early.Stats.Iterations+1]), vrUntimed(early.Stats.Trace))
}

// vrUntimed returns a copy of a trace without its wall times.
func vrUntimed(tr []TracePoint) []TracePoint {
	tr = slices.Clone(tr)
	for i := range tr {
		tr[i].Elapsed = 0
	}
	return tr
}

func TestVRGHALDeterministic(t *testing.T) {
	// With an exact oracle VR-GHAL is the gradual Halpern iteration with the
	// paper's schedule: one evaluation per inner step and one per epoch
	// start. Compare with a direct implementation (no clipping occurs, since
	// ‖A‖ = 0.9 < γ̄ = 1).
	a := newVRAffine(5, vrDim, 0.9, false, 0, vrGaussian, Deterministic)
	f := Func{N: vrDim, F: func(dst, x []float64) { a.EvalExact(dst, x) }}
	norm := vrNorm(t, false, vrDim)
	x0 := []float64{1, -1, 2, 0, 0.5}
	const epochs = 6
	res, err := Solve(context.Background(), Problem{Oracle: f, Norm: norm}, x0, &Settings{Tol: 1e-14, MaxIter: epochs}, VRGHAL{Constants: PaperConstants})
	require.NoError(t, err)
	require.Equal(t, IterationLimit, res.Status)

	x := slices.Clone(x0)
	tx := make([]float64, vrDim)
	calls := 1
	lbar := 1.0
	for range epochs {
		lbar /= 2
		lam := lbar / (1 + lbar)
		steps := int(math.Ceil(math.Log(0.5) / math.Log(1-lam)))
		calls += steps
		y := slices.Clone(x)
		for range steps {
			a.EvalExact(tx, y)
			for i := range y {
				y[i] = lam*x[i] + (1-lam)*tx[i]
			}
		}
		x = y
	}
	require.InDeltaSlice(t, x, res.X, 1e-12)
	require.Equal(t, int64(calls), res.Stats.Calls)
	require.Equal(t, int64(calls), res.Stats.Samples)
	require.InDelta(t, vrTrueResidual(a, norm, res.X), res.Residual, 1e-12)
	require.Equal(t, RuleExact, res.Certificate.Rule)
	require.InDelta(t, res.Residual, res.Certificate.Bound, 1e-12)

	// Assuming a weaker model spends the stochastic sample sizes.
	weak, err := Solve(context.Background(), Problem{Oracle: a, Norm: norm}, x0, &Settings{MaxIter: 1, Certify: CertifySettings{Skip: true}},
		VRGHAL{Model: BoundedVariance, Constants: PaperConstants})
	require.NoError(t, err)
	require.Greater(t, weak.Stats.Calls, int64(79))
}

func TestVRGHALEpochAllocs(t *testing.T) {
	epoch := vrEpochRunner(t, 16, 3)
	require.Zero(t, testing.AllocsPerRun(5, epoch))
}

func BenchmarkVRGHALEpoch(b *testing.B) { benchVRGHALEpoch(b, 64, 3) }

func benchVRGHALEpoch(b *testing.B, d, k int) {
	epoch := vrEpochRunner(b, d, k)
	b.ReportAllocs()
	for b.Loop() {
		epoch()
	}
}

// vrEpochRunner returns a function that runs epoch k of VR-GHAL on a
// d-dimensional Gaussian affine problem, from the same start each call.
func vrEpochRunner(tb testing.TB, d, k int) func() {
	o := newVRAffine(1, d, 0.9, false, 0.3, vrGaussian, SamplewiseLipschitz)
	p := Problem{Oracle: o, Norm: vrNorm(tb, false, d)}
	s, err := (&Settings{NoTrace: true}).withDefaults()
	require.NoError(tb, err)
	e := newEnv(context.Background(), p, make([]float64, d), s)
	c, err := VRGHAL{Gamma: 0.9, SampleScale: 1e-3}.config(o.Model())
	require.NoError(tb, err)
	r := newVRRun(e, c)
	m, err := c.momPlan(k - 1)
	require.NoError(tb, err)
	require.NoError(tb, r.mome(r.t0, r.xhat, m))
	x, tx := slices.Clone(r.xhat), slices.Clone(r.t0)
	plan, err := c.epochPlan(k, e.Dist(tx, x))
	require.NoError(tb, err)
	require.Greater(tb, plan.steps, 1)
	return func() {
		copy(r.xhat, x)
		copy(r.t0, tx)
		if err := r.epoch(&plan); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestVRGHALSamplesGrowAsTolShrinks checks that the samples VR-GHAL draws
// grow at least like 1/Tol², the rate forced by the noise of the estimate it
// stops on, and logs the sample complexity on a samplewise nonexpansive
// problem in ℓ2 (medians over the seeds).
//
// Anytime: on a fixed seed, a smaller tolerance continues the same
// trajectory, so the trace for Tol = ε is a prefix of the trace for
// Tol = ε/2 and samples never decrease.
//
// The lower bound. VR-GHAL stops at the first epoch k whose estimated
// residual R̃_k = ‖T̃_{k,0} − x̂_k‖ is at most Tol, and T̃_{k,0} is one of
// the B_k bucket means of its median-of-means estimate, each the average of
// n_k unit samples. A bucket mean of vrShift is T_u(x̂_k) + g with
// g ~ N(0, s²/n_k·I_d) independent of the rest, so by Anderson's inequality
// (a centred Gaussian puts the most mass on a ball around the origin)
// P(‖T_u(x̂_k) − x̂_k + g‖ ≤ t) ≤ P(‖g‖ ≤ t) = P(χ²_d ≤ n_k t²/s²). The
// margin: with n_k < N* = d·s²/(9·Tol²), that is with the stopping test
// asking the noise to be 3 times below its typical size s√(d/n_k), the
// Chernoff bound gives P(χ²_d ≤ d/9) ≤ ((e^{8/9})/9)^{d/2} < 10⁻¹⁷ for
// d = 64, and a union over the buckets and the epochs (fewer than 10⁴ in
// all) leaves a failure probability below 10⁻¹² per run. So, but for that
// probability, the run stops at an epoch K whose buckets have n_K ≥ N*
// samples, having drawn at least the median-of-means estimates of epochs 0
// to K* (K* the first epoch whose schedule reaches N*), which is of order
// d·s²·ln(1/δ)/Tol²: a tolerance ratio r multiplies the bound by about r².
func TestVRGHALSamplesGrowAsTolShrinks(t *testing.T) {
	const (
		seeds = 5
		d     = 64  // large enough for ‖g‖ to concentrate (see above)
		noise = 0.3 // s, the per-coordinate noise of a unit sample
	)
	c, err := VRGHAL{}.config(SamplewiseLipschitz)
	require.NoError(t, err)
	// lowerBound returns the samples of the median-of-means estimates of
	// epochs 0 to K*, and K*, for a tolerance tol.
	lowerBound := func(tol float64) (float64, int) {
		need := d * noise * noise / (9 * tol * tol)
		total := 0.0
		for k := 0; ; k++ {
			m, err := c.momPlan(k)
			require.NoError(t, err)
			total += m.samples()
			if float64(m.size) >= need {
				return total, k
			}
		}
	}
	epsilons := []float64{0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001}
	type row struct{ samples, truth, bound []float64 }
	rows := make([]row, len(epsilons))
	for seed := range uint64(seeds) {
		o := newVRShift(seed, d, 0.1, noise)
		p := Problem{Oracle: o, Norm: vrNorm(t, false, o.Len())}
		var prev *Result
		for i, eps := range epsilons {
			tol := eps / 2
			res, err := Solve(context.Background(), p, make([]float64, o.Len()), &Settings{Tol: tol, MaxIter: 16, Seed: seed}, VRGHAL{Constants: PaperConstants})
			require.NoError(t, err)
			// vrShift declares no variance, so the stop is on the
			// estimate, and its certificate is an estimate too.
			require.Equal(t, ToleranceEstimated, res.Status, "ε = %v seed %d", eps, seed)
			if prev != nil {
				require.Equal(t, vrUntimed(prev.Stats.Trace), vrUntimed(res.Stats.Trace[:len(prev.Stats.Trace)]))
				require.GreaterOrEqual(t, res.Stats.Samples, prev.Stats.Samples)
			}
			lb, kStar := lowerBound(tol)
			require.GreaterOrEqual(t, res.Stats.Iterations, kStar, "ε = %v seed %d: stopped before the noise allows", eps, seed)
			require.GreaterOrEqual(t, float64(res.Stats.Samples), lb, "ε = %v seed %d", eps, seed)
			prev = res
			rows[i].samples = append(rows[i].samples, float64(res.Stats.Samples))
			rows[i].truth = append(rows[i].truth, vrTrueResidual(o, p.Norm, res.X))
			rows[i].bound = append(rows[i].bound, res.Certificate.Bound)
		}
	}
	median := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	t.Logf("%8s %12s %12s %12s %12s", "ε", "samples", "lower bound", "true res.", "cert. bound")
	for i, eps := range epsilons {
		lb, _ := lowerBound(eps / 2)
		t.Logf("%8g %12.3g %12.3g %12.3g %12.3g", eps, median(rows[i].samples), lb, median(rows[i].truth), median(rows[i].bound))
	}
}
