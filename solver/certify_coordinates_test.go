package solver

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// coordOracle is a certOracle on a bounded law that also declares its
// coordinatewise bounds: |η_i| ≤ max{|lo|, hi} and E η_i² = Var.
type coordOracle struct{ *certOracle }

var _ CoordinateNoiseBound = coordOracle{}

func (o coordOracle) CoordinateNoise(b, v, _ []float64) bool {
	lo, hi, ok := o.law.support(o.p)
	if !ok {
		return false
	}
	for i := range b {
		b[i] = math.Max(-lo, hi)
		v[i] = o.law.variance(o.p)
	}
	return true
}

// TestCertifyCoordinateCoverage is TestCertifyCoverage for the
// coordinatewise Bernstein radius of RuleBoundedNoise in ℓ∞: at a point
// whose true residual is the noise scale of the average, the bound falls
// below the truth in a fraction of at most δ of 400 runs (plus binomial
// slack), on the Rademacher law and on two-point laws with rare large
// outliers (probability 1e-2 and 1e-4), in dimensions 4 and 12. It also
// checks that the radius used is the smaller of the two rules' and that
// CertifyRadius sizes the certificate by it.
func TestCertifyCoordinateCoverage(t *testing.T) {
	const (
		runs  = 400
		delta = 0.05
		calls = 5
		m     = 20
	)
	type law struct {
		l certLaw
		p float64
	}
	for _, d := range []int{4, 12} {
		norm, err := NewLInf(d)
		require.NoError(t, err)
		for _, lw := range []law{{lawRademacher, 0}, {lawTwoPoint, 1e-2}, {lawTwoPoint, 1e-4}} {
			name := fmt.Sprintf("d=%d/%v(p=%g)", d, lw.l, lw.p)
			n := float64(calls * m)
			r0 := math.Sqrt(lw.l.variance(lw.p) / n)
			b := make([]float64, d)
			for i := range b {
				b[i] = r0 * math.Pow(-1, float64(i))
			}
			o := coordOracle{newCertOracle(d, b, lw.l, lw.p)}
			o.declareVar, o.declareBound = true, true
			x := make([]float64, d)
			nd, ok := declaredNoise(o, x, norm)
			require.True(t, ok, name)
			require.NotNil(t, nd.cb, name)
			banach := boundedNoiseRadius(nd.kappa, nd.c, delta, nd.b, nd.v, n)
			require.LessOrEqual(t, nd.radius(delta, n), banach, name)
			p := Problem{Oracle: o, Norm: norm}
			res := &Result{X: x}
			fails := 0
			for seed := range uint64(runs) {
				s := Settings{Seed: seed, Certify: CertifySettings{Delta: delta, Samples: m, Calls: calls}}
				c, err := certify(context.Background(), p, res, &s, 0, nil)
				require.NoError(t, err, name)
				require.Equal(t, RuleBoundedNoise, c.Rule, name)
				require.InDelta(t, nd.radius(delta, n), c.Bound-c.Estimate, 1e-12*c.Bound, name)
				if r0 > c.Bound {
					fails++
				}
			}
			require.LessOrEqual(t, float64(fails)/runs, certFailSlack(delta, runs), name)
			// CertifyRadius draws the smallest N whose radius meets its target.
			c, err := CertifyRadius(context.Background(), p, x, 0.5, 1, &Settings{Seed: 1, Certify: CertifySettings{Delta: delta}})
			require.NoError(t, err, name)
			require.LessOrEqual(t, c.Bound-c.Estimate, 0.5*(1+1e-12), name)
			require.Greater(t, nd.radius(delta, float64(c.Samples)-1), 0.5, name)
		}
	}
}

// TestCoordinateRadiusSharperInLInf: on a law with many coordinates the
// coordinatewise radius is far below the Banach-space one, which pays
// κ·E‖η‖²∞ instead of max_i E η_i² (the reason for the rule), and an
// oracle that declares nothing coordinatewise, or a norm other than ℓ∞,
// keeps the Banach-space radius.
func TestCoordinateRadiusSharperInLInf(t *testing.T) {
	const d, delta, n = 12, 0.05, 1000.0
	norm, err := NewLInf(d)
	require.NoError(t, err)
	o := coordOracle{newCertOracle(d, make([]float64, d), lawRademacher, 0)}
	o.declareVar, o.declareBound = true, true
	x := make([]float64, d)
	nd, _ := declaredNoise(o, x, norm)
	banach := boundedNoiseRadius(nd.kappa, nd.c, delta, nd.b, nd.v, n)
	require.Less(t, nd.radius(delta, n), banach/2)
	require.InDelta(t, 1, nd.radius(delta, nd.size(delta, 0.1))/0.1, 1e-9)
	plain, _ := declaredNoise(o.certOracle, x, norm)
	require.Nil(t, plain.cb)
	l2, err := NewLP(2, d)
	require.NoError(t, err)
	other, _ := declaredNoise(o, x, l2)
	require.Nil(t, other.cb)
}
