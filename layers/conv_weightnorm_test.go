package layers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/solver"
)

func TestConvWeightNormStartsAsProjected(t *testing.T) {
	cfg := ConvConfig{Channels: 3, Height: 4, Width: 4, Kernels: 2, InputConv: true, Groups: 3, Seed: 12}
	proj := mustCell(NewConv(cfg))
	cfg.Normalization = WeightNorm
	wn := mustCell(NewConv(cfg))
	require.Equal(t, Projection, proj.Normalization())
	require.Equal(t, WeightNorm, wn.Normalization())
	requireRel(t, proj.W().Data(), wn.W().Data(), 1e-14, "initial W")

	var names []string
	for _, p := range wn.Params() {
		names = append(names, p.Name())
	}
	require.Equal(t, []string{"V", "g", "U", "b", "gn.scale", "gn.shift"}, names)
	v, g := wn.Params()[0], wn.Params()[1]
	vr, vc := v.Dims()
	require.Equal(t, []int{2 * 3, 27}, []int{vr, vc}, "V has W's shape")
	gr, gc := g.Dims()
	require.Equal(t, []int{2, 3}, []int{gr, gc}, "g is M×C")
	// g starts as the norms of the rows (output channels) of the projected W.
	for o := range 6 {
		require.InDelta(t, floats.Norm(proj.W().Data()[o*27:(o+1)*27], 2), g.Data()[o], 1e-14)
	}
}

func TestConvWeightNormProjectDoesNotRescale(t *testing.T) {
	c := mustCell(NewConv(ConvConfig{Channels: 2, Height: 4, Width: 3, Kernels: 2, Gamma: 0.9, Normalization: WeightNorm, Seed: 13}))
	rng := rand.New(rand.NewPCG(13, 13))
	v, g := c.Params()[0].Data(), c.Params()[1].Data()
	for i := range v {
		v[i] += 0.2 * rng.NormFloat64()
	}
	for i := range g {
		g[i] = 3 + rng.Float64()
	}
	require.NoError(t, c.Project())
	// Every output channel's row of W is g times V's row made unit, however
	// large g is: the operator norm is left above γ̄.
	r := c.geom.ColRows()
	for o := range len(g) {
		row := c.W().Data()[o*r : (o+1)*r]
		require.InDelta(t, g[o], floats.Norm(row, 2), 1e-12)
		want := slices.Clone(v[o*r : (o+1)*r])
		floats.Scale(g[o]/floats.Norm(want, 2), want)
		requireRel(t, want, row, 1e-14, "row")
	}
	require.Greater(t, exactNorm(convOperatorMatrix(c, 0)), 1.0)
	require.True(t, math.IsInf(c.Gamma(), 1))
	for _, name := range []string{"l2", "schatten:2"} {
		n, err := solver.ParseNorm(name, c.Shape().Rows, c.Shape().Hidden)
		require.NoError(t, err)
		require.False(t, c.Proven(n), name)
	}
	e, err := c.Evaluator(1)
	require.NoError(t, err)
	require.Equal(t, solver.BoundedVariance, e.Model())

	// A NaN in the trained parameters is reported.
	g[0] = math.NaN()
	require.ErrorContains(t, c.Project(), "NaN")
}

func TestConvWeightNormSetInputFollowsParams(t *testing.T) {
	// An evaluator's SetInput recomputes W when V or g changed without a
	// Project, and the gradients of V and g are chained from W's, which is
	// left zero.
	c := mustCell(NewConv(ConvConfig{Channels: 2, Height: 3, Width: 3, Activation: Tanh, Normalization: WeightNorm, Seed: 14}))
	e, err := c.Evaluator(2)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(14, 14))
	x := randVec(rng, e.Len(), 1)
	z := randVec(rng, e.Len(), 1)
	floats.Scale(2, c.Params()[1].Data())
	before := slices.Clone(c.W().Data())
	require.NoError(t, e.SetInput(x))
	after := slices.Clone(c.W().Data())
	floats.Scale(0.5, after)
	requireRel(t, before, after, 1e-14, "W doubled with g")
	ZeroGrads(c.Params())
	require.NoError(t, e.VJP(nil, nil, z, randVec(rng, e.Len(), 1)))
	require.Equal(t, make([]float64, len(c.W().GradData())), c.W().GradData())
	require.Greater(t, floats.Norm(c.Params()[1].GradData(), 2), 0.0)
}

func TestConvWeightNormConfigErrors(t *testing.T) {
	_, err := NewConv(ConvConfig{Channels: 1, Height: 2, Width: 2, Normalization: SpectralNorm})
	require.ErrorContains(t, err, "ConvConfig.Normalization")
	_, err = NewConv(ConvConfig{Channels: 1, Height: 2, Width: 2, Normalization: 9})
	require.ErrorContains(t, err, "ConvConfig.Normalization")
}
