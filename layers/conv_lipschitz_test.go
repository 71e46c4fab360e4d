package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/solver"
)

// convOperatorMatrix returns the explicit (C·H·W)×(C·H·W) matrix of
// z ↦ W_m∗z.
func convOperatorMatrix(c *Conv, m int) *mat.Dense {
	return operatorMatrix(c.c*c.hw, func(dst, z []float64) { c.apply(dst, c.kernel(m), z) })
}

// operatorMatrix returns the explicit d×d matrix of the linear map f, whose
// column j is f(e_j).
func operatorMatrix(d int, f func(dst, z []float64)) *mat.Dense {
	a := mat.NewDense(d, d, nil)
	e := make([]float64, d)
	col := make([]float64, d)
	for j := range d {
		clear(e)
		e[j] = 1
		f(col, e)
		a.SetCol(j, col)
	}
	return a
}

func exactNorm(a *mat.Dense) float64 {
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDNone) {
		panic("SVD failed")
	}
	return svd.Values(nil)[0]
}

func TestConvOperatorNormMatchesExact(t *testing.T) {
	for _, sz := range []struct{ c, h, w int }{{3, 5, 5}, {2, 4, 6}, {4, 1, 3}} {
		t.Run(fmt.Sprintf("%dx%dx%d", sz.c, sz.h, sz.w), func(t *testing.T) {
			c := mustCell(NewConv(ConvConfig{Channels: sz.c, Height: sz.h, Width: sz.w, Kernels: 2, Seed: 7}))
			// Unconstrained kernels: undo the projection with a large scale.
			floats.Scale(5, c.W().Data())
			for m := range c.m {
				a := convOperatorMatrix(c, m)
				// The transposed convolution is the adjoint: its matrix is aᵀ.
				d := c.c * c.hw
				adj := operatorMatrix(d, func(dst, z []float64) { c.applyAdjoint(dst, c.kernel(m), z) })
				for i := range d {
					require.InDeltaSlice(t, mat.Row(nil, i, a), mat.Col(nil, i, adj), 1e-14)
				}
				want := exactNorm(a)
				got := c.powerStep(m, 2000)
				require.InEpsilon(t, want, got, 1e-6, "power iteration")
				require.LessOrEqual(t, got, want*(1+1e-12), "power iteration is a lower bound")
				fb := c.fourierBound().Norm(c.kernel(m))
				require.GreaterOrEqual(t, fb, want*(1-1e-12), "Fourier bound is an upper bound")
				if sz.h >= 4 && sz.w >= 4 {
					// Edge effects aside, the bound is tight.
					require.Less(t, fb, 1.1*want, "Fourier bound is not tight")
				}
			}
		})
	}
}

func TestConvProjectHoldsAfterUpdate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		certify int
		tol     float64
	}{
		// Power iteration gives a lower bound that converges slowly when the
		// top singular values cluster, as they do for convolutions; a few
		// tenths of a percent remain after a large update.
		{"power", 0, 5e-3},
		{"certified", 1, 1e-12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustCell(NewConv(ConvConfig{Channels: 3, Height: 5, Width: 5, Kernels: 2, Gamma: 0.9, CertifyEvery: tc.certify, Seed: 8}))
			rng := rand.New(rand.NewPCG(8, 8))
			for step := range 5 {
				// A random update that pushes the kernels well past γ̄.
				w := c.W().Data()
				for i := range w {
					w[i] = 1.5*w[i] + 0.3*rng.NormFloat64()
				}
				require.NoError(t, c.Project())
				if tc.certify == 0 {
					// Power iteration tracks the top singular vector over a
					// few calls; let it settle as training would.
					for range 20 {
						require.NoError(t, c.Project())
					}
				}
				for m := range c.m {
					got := exactNorm(convOperatorMatrix(c, m))
					require.LessOrEqual(t, got, 0.9*(1+tc.tol), "step %d kernel %d", step, m)
					require.Greater(t, got, 0.5, "step %d kernel %d: projection must not over-shrink", step, m)
				}
			}
			if tc.certify > 0 {
				require.LessOrEqual(t, c.Bound(), 0.9*(1+1e-12))
			}
		})
	}
}

func TestConvLipschitzRatios(t *testing.T) {
	// Without GroupNorm, random pairs never show an ℓ2 ratio above γ̄, for
	// the exact operator and for single sampled kernels.
	c := mustCell(NewConv(ConvConfig{Channels: 3, Height: 4, Width: 4, Kernels: 3, Gamma: 0.7, CertifyEvery: 1, Seed: 9}))
	floats.Scale(10, c.W().Data())
	require.NoError(t, c.Project())
	e, err := c.Evaluator(2)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(9, 9))
	require.NoError(t, e.SetInput(randVec(rng, 2*c.Shape().InputLen(), 1)))
	for _, name := range []string{"l2", "schatten:2"} {
		ex, err := solver.ParseNorm(name, c.Shape().Rows, c.Shape().Hidden)
		require.NoError(t, err)
		n, err := solver.NewBatched(ex, 2)
		require.NoError(t, err)
		require.True(t, c.Proven(n), name)
		for _, size := range []int{1, 3} {
			r := pairRatio(t, e, n, solver.Sample{Seed: 4, Size: size}, 200, 1)
			require.LessOrEqual(t, r, 0.7*(1+1e-9), name)
			require.Greater(t, r, 0.05, name)
		}
	}
}

func TestConvProven(t *testing.T) {
	plain := mustCell(NewConv(ConvConfig{Channels: 2, Height: 3, Width: 3}))
	gn := mustCell(NewConv(ConvConfig{Channels: 2, Height: 3, Width: 3, Groups: 1}))
	for _, tc := range []struct {
		norm       string
		plain, gn  bool
		rows, cols int
	}{
		{"l2", true, false, 2, 9},
		{"schatten:2", true, false, 2, 9},
		{"schatten:inf", false, false, 2, 9},
		{"linf", false, false, 2, 9},
		{"lp:4", false, false, 2, 9},
	} {
		ex, err := solver.ParseNorm(tc.norm, tc.rows, tc.cols)
		require.NoError(t, err)
		require.Equal(t, tc.plain, plain.Proven(ex), tc.norm)
		require.Equal(t, tc.gn, gn.Proven(ex), tc.norm)
	}
	e1, _ := plain.Evaluator(1)
	require.Equal(t, solver.Deterministic, e1.Model())
	e2, _ := mustCell(NewConv(ConvConfig{Channels: 2, Height: 3, Width: 3, Kernels: 2})).Evaluator(1)
	require.Equal(t, solver.SamplewiseLipschitz, e2.Model())
	e3, _ := mustCell(NewConv(ConvConfig{Channels: 2, Height: 3, Width: 3, Kernels: 2, Groups: 2})).Evaluator(1)
	require.Equal(t, solver.BoundedVariance, e3.Model())
}

func TestConvProjectionStateResumes(t *testing.T) {
	cfg := ConvConfig{Channels: 2, Height: 3, Width: 3, Kernels: 2, CertifyEvery: 3, Seed: 11}
	a := mustCell(NewConv(cfg))
	require.NoError(t, a.Project())
	b := mustCell(NewConv(cfg))
	copy(b.W().Data(), a.W().Data())
	require.NoError(t, b.SetProjectionState(a.ProjectionState()))
	for range 4 {
		floats.Scale(1.3, a.W().Data())
		floats.Scale(1.3, b.W().Data())
		require.NoError(t, a.Project())
		require.NoError(t, b.Project())
		require.Equal(t, a.W().Data(), b.W().Data())
	}
	require.ErrorContains(t, b.SetProjectionState(ProjectionState{Vector: []float64{1}}), "length")
}
