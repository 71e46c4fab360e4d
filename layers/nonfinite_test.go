package layers

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers/internal/conv"
	"github.com/deqgo/deq/solver"
)

// TestProjectNonFinite: a NaN or ±Inf in the parameters a projection
// reads is refused with an error wrapping solver.ErrNonFinite, and the
// bounds are NaN, before any SVD or Cholesky factorisation sees it.
func TestProjectNonFinite(t *testing.T) {
	linf := Constraint{P: math.Inf(1), Gamma: 0.5}
	cases := []struct {
		name  string
		cell  func() (Cell, error)
		param string
		bound bool // the cell has a Bound method
	}{
		{"dense/l2", func() (Cell, error) {
			return NewDense(DenseConfig{Hidden: 4, Input: 3, Lipschitz: Constraint{Gamma: 0.5}, Seed: 1})
		}, "W", true},
		{"dense/linf", func() (Cell, error) {
			return NewDense(DenseConfig{Hidden: 4, Input: 3, Lipschitz: linf, Seed: 2})
		}, "W", true},
		{"dense/spectral-norm", func() (Cell, error) {
			return NewDense(DenseConfig{Hidden: 4, Input: 3, Normalization: SpectralNorm, Lipschitz: Constraint{Gamma: 0.8}, Seed: 3})
		}, "V", false},
		{"experts/l2", func() (Cell, error) {
			return NewExperts(ExpertsConfig{Hidden: 3, Input: 2, Experts: 2, Lipschitz: Constraint{Gamma: 0.5}, Seed: 4})
		}, "W", true},
		{"conv", func() (Cell, error) {
			return NewConv(ConvConfig{Channels: 2, Height: 3, Width: 3, Activation: Tanh, Seed: 5})
		}, "W", true},
	}
	for _, tc := range cases {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, v), func(t *testing.T) {
				c, err := tc.cell()
				require.NoError(t, err)
				var p *Param
				for _, q := range c.Params() {
					if q.Name() == tc.param {
						p = q
					}
				}
				require.NotNil(t, p, "parameter %s", tc.param)
				p.Data()[len(p.Data())-1] = v
				require.ErrorIs(t, c.Project(), solver.ErrNonFinite)
				if tc.bound {
					b := c.(interface{ Bound() float64 }).Bound()
					require.True(t, math.IsNaN(b), "Bound() = %v", b)
				}
			})
		}
	}
	f := conv.NewFourierBound(2, 2, 3, 4, 4, 1)
	w := make([]float64, 2*2*3*3)
	w[5] = math.NaN()
	require.True(t, math.IsNaN(f.Norm(w)))
}
