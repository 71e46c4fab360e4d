package bench

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

func specByName(t *testing.T, name string) problemSpec {
	t.Helper()
	for _, sp := range problemSpecs() {
		if sp.name == name {
			return sp
		}
	}
	t.Fatalf("no problem %q", name)
	return problemSpec{}
}

func dist(n solver.Norm, a, b []float64) float64 {
	d := make([]float64, len(a))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	return n.Norm(d)
}

func TestScaledOracleIsChangeOfUnits(t *testing.T) {
	in, err := specByName(t, "shift").build(3)
	require.NoError(t, err)
	const c = 0.3
	o := newScaled(in.oracle, c)
	n := o.Len()
	// T_c(c·x*) = c·x*.
	cx := make([]float64, n)
	for i, v := range in.fixed {
		cx[i] = c * v
	}
	tx := make([]float64, n)
	require.NoError(t, o.EvalExact(tx, cx))
	require.InDeltaSlice(t, cx, tx, 1e-12)
	// The noise of a sample scales by c: the same Sample at x* and c·x*.
	raw, scaled := make([]float64, n), make([]float64, n)
	s := solver.Sample{Seed: 11, Size: 3}
	_, err = in.oracle.Eval(raw, in.fixed, s)
	require.NoError(t, err)
	_, err = o.Eval(scaled, cx, s)
	require.NoError(t, err)
	require.InDelta(t, c*dist(in.norm, raw, in.fixed), dist(in.norm, scaled, cx), 1e-12)
	// Lipschitz constants are unchanged: "shift" is an isometry per sample.
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := make([]float64, n), make([]float64, n)
	tx, ty := make([]float64, n), make([]float64, n)
	for range 5 {
		for i := range x {
			x[i], y[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		_, err = o.Eval(tx, x, s)
		require.NoError(t, err)
		_, err = o.Eval(ty, y, s)
		require.NoError(t, err)
		require.InDelta(t, dist(in.norm, x, y), dist(in.norm, tx, ty), 1e-12)
	}
}

func TestCalibrateAffineProblems(t *testing.T) {
	const level, start = 0.1, 0.25
	for _, tc := range []struct {
		name      string
		sigma     float64 // exact ℓ2 noise of a unit sample (Gaussian: checked)
		lipschitz float64 // ‖A‖₂, known from the construction
	}{
		{"shift", 4, 1},        // N(0, I) noise in d = 16; R a signed permutation
		{"affine-t", 0, 0.9},   // A scaled to spectral norm 0.9
		{"averaged", 0, -1},    // ‖Ā‖ < 1 only
		{"mdp", 0, math.NaN()}, // not affine
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := calibrate(specByName(t, tc.name), 5, defaultSigmaDraws, level, start)
			require.NoError(t, err)
			require.InDelta(t, level, c.sigma()*math.Sqrt(c.kappa), 1e-12)
			require.InDelta(t, start, c.dist0, 1e-12)
			if tc.sigma > 0 {
				// ‖ξ‖² ~ χ²₁₆: σ̂² has relative standard deviation
				// √(2/16)/√4000 ≈ 0.0056; 2% on σ̂ is over 6 of them.
				require.InEpsilon(t, tc.sigma, c.sigmaNative, 0.02)
			}
			switch {
			case math.IsNaN(tc.lipschitz):
				require.True(t, math.IsNaN(c.lipschitz))
			case tc.lipschitz < 0:
				require.Greater(t, c.lipschitz, 0.0)
				require.Less(t, c.lipschitz, 1.0)
			default:
				require.InDelta(t, tc.lipschitz, c.lipschitz, 1e-9)
			}
			// The built instance starts at x0 and has fixed point c·x*.
			o, in, err := c.build()
			require.NoError(t, err)
			require.Equal(t, c.x0, in.x0)
			cx := make([]float64, c.len)
			for i, v := range c.xstar {
				cx[i] = c.scale * v
			}
			require.InDelta(t, start, dist(in.norm, in.x0, cx), 1e-12)
			tx := make([]float64, c.len)
			require.NoError(t, o.EvalExact(tx, cx))
			require.Less(t, dist(in.norm, tx, cx), 1e-10)
			require.NoError(t, o.EvalExact(tx, in.x0))
			require.InDelta(t, c.r0, dist(in.norm, tx, in.x0), 1e-12)
		})
	}
}

func TestCalibrateDEQCell(t *testing.T) {
	c, err := calibrate(specByName(t, "deq-experts"), 2, 500, 0.1, 0.1)
	require.NoError(t, err)
	require.False(t, c.xstarKnown)
	require.Equal(t, deqExperts, c.terms)
	require.Equal(t, solver.SamplewiseLipschitz, c.model)
	// x* from Picard iteration is a fixed point of the exact cell.
	in, err := specByName(t, "deq-experts").build(2)
	require.NoError(t, err)
	tx := make([]float64, c.len)
	require.NoError(t, in.oracle.EvalExact(tx, c.xstar))
	require.Less(t, dist(in.norm, tx, c.xstar), 1e-11*(1+in.norm.Norm(c.xstar)))
	require.Greater(t, c.sigmaNative, 0.0)
}

func TestPicardNeedsContraction(t *testing.T) {
	in, err := specByName(t, "shift").build(1)
	require.NoError(t, err)
	_, err = picard(in)
	require.ErrorContains(t, err, "γ = 1")
}
