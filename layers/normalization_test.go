package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// normCells are Dense cells under WeightNorm and SpectralNorm, the latter
// with V both inside (W = V) and outside (W = γ̄V/σ_max) the ℓ2 ball.
func normCells() []struct {
	name  string
	cell  *Dense
	scale float64 // V is multiplied by it before the checks
} {
	mk := func(cfg DenseConfig) *Dense { return mustCell(NewDense(cfg)) }
	return []struct {
		name  string
		cell  *Dense
		scale float64
	}{
		{"weight-tanh", mk(DenseConfig{Hidden: 4, Input: 3, Activation: Tanh, Normalization: WeightNorm, Seed: 1}), 1.3},
		{"weight-relu-rows", mk(DenseConfig{Hidden: 3, Input: 2, Rows: 2, Normalization: WeightNorm, Seed: 2}), 0.7},
		{"spectral-tanh-scaled", mk(DenseConfig{Hidden: 4, Input: 3, Activation: Tanh, Normalization: SpectralNorm, Lipschitz: Constraint{Gamma: 0.8}, Seed: 3}), 3},
		{"spectral-tanh-inside", mk(DenseConfig{Hidden: 4, Input: 3, Activation: Tanh, Normalization: SpectralNorm, Lipschitz: Constraint{Gamma: 0.8}, Seed: 4}), 0.2},
	}
}

func TestNormalizedDenseGradientsMatchFiniteDifferences(t *testing.T) {
	// The fused and graph VJPs and the Jacobian penalty chain W's gradient
	// into V (and g): central differences of ⟨g, f⟩ and of ‖(∂f/∂z)ᵀv‖² in
	// every trained parameter, W recomputed by SetInput after each change.
	for i, nc := range normCells() {
		for _, graphPath := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/graph=%v", nc.name, graphPath), func(t *testing.T) {
				nc := normCells()[i] // a fresh cell for each path
				c := nc.cell
				rng := rand.New(rand.NewPCG(5, 5))
				ps := c.Params()
				for _, p := range ps {
					for i := range p.Data() {
						p.Data()[i] = p.Data()[i]*nc.scale + 0.05*rng.NormFloat64()
					}
				}
				require.NoError(t, c.Project())
				if c.Normalization() == SpectralNorm {
					require.Equal(t, nc.scale > 1, c.rp.scaled)
				}
				tc := testCell{nc.name, c, 2}
				e, x, z, g := setup(t, tc, 6)
				setGraphPath(e, graphPath)
				f := make([]float64, e.Len())
				phi := func() float64 {
					require.NoError(t, e.SetInput(x))
					require.NoError(t, e.EvalExact(f, z))
					return dot(g, f)
				}
				ZeroGrads(ps)
				require.NoError(t, e.VJP(nil, nil, z, g))
				for _, p := range ps {
					d := p.Data()
					want := fdGrad(func(v []float64) float64 { copy(d, v); return phi() }, d)
					require.InDeltaSlice(t, want, p.GradData(), 1e-6, "∂/∂%s", p.Name())
				}
				require.Equal(t, make([]float64, len(c.W().GradData())), c.W().GradData(), "W's gradient is scratch, left zero")

				r := make([]float64, e.Len())
				pen := func() float64 {
					require.NoError(t, e.SetInput(x))
					_, err := e.VJPHidden(r, z, g, solver.Sample{Size: 1})
					require.NoError(t, err)
					return dot(r, r)
				}
				ZeroGrads(ps)
				require.NoError(t, e.SetInput(x))
				require.NoError(t, e.(JacobianPenalizer).JacobianPenalty(r, nil, nil, z, g, 1))
				for _, p := range ps {
					d := p.Data()
					want := fdGrad(func(v []float64) float64 { copy(d, v); return pen() }, d)
					require.InDeltaSlice(t, want, p.GradData(), 1e-6, "penalty ∂/∂%s", p.Name())
				}
				ZeroGrads(ps)
			})
		}
	}
}

func TestNormalizationBoundsAndParams(t *testing.T) {
	l2 := must(solver.NewLP(2, 4))
	linf := solver.LInf{}
	proj := mustCell(NewDense(DenseConfig{Hidden: 4, Input: 2, Seed: 1}))
	weight := mustCell(NewDense(DenseConfig{Hidden: 4, Input: 2, Normalization: WeightNorm, Seed: 1}))
	spec := mustCell(NewDense(DenseConfig{Hidden: 4, Input: 2, Normalization: SpectralNorm, Seed: 1}))

	names := func(c *Dense) (s []string) {
		for _, p := range c.Params() {
			s = append(s, p.Name())
		}
		return s
	}
	require.Equal(t, []string{"W", "U", "b"}, names(proj))
	require.Equal(t, []string{"V", "g", "U", "b"}, names(weight))
	require.Equal(t, []string{"V", "U", "b"}, names(spec))

	// All three start from the same projected W.
	require.InDeltaSlice(t, proj.W().Data(), weight.W().Data(), 1e-15)
	require.InDeltaSlice(t, proj.W().Data(), spec.W().Data(), 1e-14)
	require.True(t, spec.rp.scaled, "V starts outside the ball, off the kink σ_max(V) = γ̄")

	require.True(t, proj.Proven(l2))
	require.Equal(t, DefaultGamma, proj.Gamma())
	require.False(t, weight.Proven(l2))
	require.False(t, weight.Proven(linf))
	require.True(t, math.IsInf(weight.Gamma(), 1))
	require.True(t, spec.Proven(l2))
	require.False(t, spec.Proven(linf))
	require.Equal(t, DefaultGamma, spec.Gamma())

	// Spectral normalisation keeps ‖W‖₂ ≤ γ̄ however large V grows; weight
	// normalisation follows its learnable norms g.
	for i := range spec.rp.v.Data() {
		spec.rp.v.Data()[i] *= 10
	}
	require.NoError(t, spec.Project())
	require.InDelta(t, DefaultGamma, spec.Bound(), 1e-12)
	for i := range weight.rp.g.Data() {
		weight.rp.g.Data()[i] = 3
	}
	require.NoError(t, weight.Project())
	require.Greater(t, weight.Bound(), 1.0)
	cols := make([]float64, 4)
	unitColumns(4).norms(cols, weight.W().Data())
	require.InDeltaSlice(t, []float64{3, 3, 3, 3}, cols, 1e-12)

	_, err := NewDense(DenseConfig{Hidden: 4, Input: 2, Normalization: SpectralNorm, Lipschitz: Constraint{P: math.Inf(1)}})
	require.ErrorContains(t, err, "Normalization")
	_, err = NewDense(DenseConfig{Hidden: 4, Input: 2, Normalization: 7})
	require.ErrorContains(t, err, "Normalization")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
