package solver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVRGHALWarmStart: a start point from a previous solve is honoured: the
// warm solve to a tighter tolerance draws fewer samples than the same solve
// from the cold start, and both end with a proven bound.
func TestVRGHALWarmStart(t *testing.T) {
	o := vrDeclared{newVRAffine(3, vrDim, 0.9, false, 0.3, vrGaussian, SamplewiseLipschitz), vrDim * 0.3 * 0.3}
	p := Problem{Oracle: o, Norm: vrNorm(t, false, vrDim)}
	m := VRGHAL{Gamma: 0.9}
	solve := func(x0 []float64, tol float64) *Result {
		res, err := Solve(context.Background(), p, x0, &Settings{Tol: tol, MaxIter: 40, Seed: 2, Certify: CertifySettings{Skip: true}}, m)
		require.NoError(t, err)
		return res
	}
	first := solve(make([]float64, vrDim), 0.05)
	cold := solve(make([]float64, vrDim), 0.01)
	warm := solve(first.X, 0.01)
	require.Equal(t, Success, cold.Status)
	require.Equal(t, Success, warm.Status)
	t.Logf("cold %d samples, warm %d (+%d for the first solve)", cold.Stats.Samples, warm.Stats.Samples, first.Stats.Samples)
	require.Less(t, warm.Stats.Samples, cold.Stats.Samples)
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
