package deq

import (
	"context"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// jacobianCells are small cells whose Jacobians the tests form explicitly:
// a symmetric-free Dense and MeanField (non-normal Jacobians, possibly
// complex eigenvalues) and an Experts cell, all tanh.
func jacobianCells() []struct {
	name string
	cell layers.Cell
} {
	return []struct {
		name string
		cell layers.Cell
	}{
		{"dense", must(layers.NewDense(layers.DenseConfig{Hidden: 6, Input: 3, Activation: layers.Tanh, Seed: 1}))},
		{"meanfield", must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 5, Input: 2, Units: 9, Activation: layers.Tanh, Seed: 2}))},
		{"experts-rows", must(layers.NewExperts(layers.ExpertsConfig{Hidden: 4, Input: 6, Experts: 3, Rows: 2, Activation: layers.Tanh, Seed: 3}))},
	}
}

// explicitJacobians returns each example's Jacobian ∂f_b/∂z_b at z, row i
// from the exact VJP with cotangent e_i in every example.
func explicitJacobians(t *testing.T, e layers.Evaluator, z []float64) []*mat.Dense {
	t.Helper()
	n := e.Examples()
	d := e.Len() / n
	js := make([]*mat.Dense, n)
	for b := range js {
		js[b] = mat.NewDense(d, d, nil)
	}
	g := make([]float64, e.Len())
	row := make([]float64, e.Len())
	for i := range d {
		clear(g)
		for b := range n {
			g[b*d+i] = 1
		}
		_, err := e.VJPHidden(row, z, g, solver.Sample{Size: e.Terms()})
		require.NoError(t, err)
		for b := range n {
			js[b].SetRow(i, row[b*d:(b+1)*d])
		}
	}
	return js
}

// jacobianSetup returns an evaluator of 3 examples with a random input set
// and its fixed point.
func jacobianSetup(t *testing.T, c layers.Cell) (layers.Evaluator, []float64) {
	t.Helper()
	const n = 3
	rng := rand.New(rand.NewPCG(5, 5))
	x := randVec(rng, n*c.Shape().InputLen(), 1)
	z := referenceFixedPoint(t, c, n, x)
	e := must(c.Evaluator(n))
	require.NoError(t, e.SetInput(x))
	return e, z
}

func TestSpectralRadiusMatchesEigenvalues(t *testing.T) {
	for _, tc := range jacobianCells() {
		t.Run(tc.name, func(t *testing.T) {
			e, z := jacobianSetup(t, tc.cell)
			js := explicitJacobians(t, e, z)
			d := e.Len() / e.Examples()
			// Iterations ≥ dim(z_b): the Krylov space is the whole space,
			// so the Ritz values are the eigenvalues up to the central
			// differences' error (about 1e-10 here).
			got, err := SpectralRadius(context.Background(), e, z, &JacobianOptions{Iterations: d, Tol: 1e-14, Seed: 1})
			require.NoError(t, err)
			require.True(t, got.Converged)
			want := 0.0
			for b, j := range js {
				var eig mat.Eigen
				require.True(t, eig.Factorize(j, mat.EigenNone))
				rho := 0.0
				for _, l := range eig.Values(nil) {
					rho = math.Max(rho, cmplx.Abs(l))
				}
				require.InDelta(t, rho, got.PerExample[b], 1e-7*rho, "example %d", b)
				want = math.Max(want, rho)
			}
			require.InDelta(t, want, got.Value, 1e-7*want)
			require.Less(t, got.Value, tc.cell.Gamma(), "ρ(J) ≤ ‖J‖ ≤ γ̄")
			require.Greater(t, got.Value, 0.01)
		})
	}
}

func TestSpectralNormMatchesSVD(t *testing.T) {
	for _, tc := range jacobianCells() {
		t.Run(tc.name, func(t *testing.T) {
			e, z := jacobianSetup(t, tc.cell)
			js := explicitJacobians(t, e, z)
			got, err := SpectralNorm(context.Background(), e, z, &JacobianOptions{Iterations: 2000, Tol: 1e-13, Seed: 2})
			require.NoError(t, err)
			require.True(t, got.Converged)
			for b, j := range js {
				var svd mat.SVD
				require.True(t, svd.Factorize(j, mat.SVDNone))
				want := svd.Values(nil)[0]
				require.InDelta(t, want, got.PerExample[b], 1e-6*want, "example %d", b)
				// The power iterate is a lower bound up to the differences'
				// error.
				require.LessOrEqual(t, got.PerExample[b], want*(1+1e-8), "example %d", b)
			}
			if tc.name != "meanfield" { // MeanField's γ̄ bounds a mean-square constant
				require.LessOrEqual(t, got.Value, tc.cell.Gamma()*(1+1e-9))
			}
		})
	}
}

func TestJacobianFrobeniusHutchinson(t *testing.T) {
	// Over K probes the estimate is a mean of K independent values of
	// variance V/K, V = (1/n²) Σ_b Var_b with Var_b = 2(‖A_b‖_F² − Σ A_b,ii²)
	// (Rademacher) or 2‖A_b‖_F² (Gaussian), A_b = J_bJ_bᵀ, computed from
	// the explicit Jacobians; the estimate must lie within 5 of its
	// standard deviations of the exact mean of ‖J_b‖_F² (a normal tail of
	// 6e-7), and the reported standard error within a factor 1.5 of the
	// true one.
	const K = 400
	for _, tc := range jacobianCells() {
		for _, gaussian := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/gaussian=%v", tc.name, gaussian), func(t *testing.T) {
				e, z := jacobianSetup(t, tc.cell)
				js := explicitJacobians(t, e, z)
				n := float64(len(js))
				exact, variance := hutchinsonMoments(js, gaussian)
				sd := math.Sqrt(variance / K)
				got, err := JacobianFrobenius(context.Background(), e, z, &JacobianOptions{Probes: K, Gaussian: gaussian, Seed: 3})
				require.NoError(t, err)
				require.Equal(t, K, got.Probes)
				require.InDelta(t, exact, got.Value, 5*sd, "exact %.6g, sd %.3g", exact, sd)
				require.InEpsilon(t, sd, got.StdErr, 0.5)
				mean := 0.0
				for _, v := range got.PerExample {
					mean += v / n
				}
				require.InDelta(t, got.Value, mean, 1e-12*got.Value)
			})
		}
	}
}

// hutchinsonMoments returns the mean over examples of ‖J_b‖_F² and the
// variance of one probe's Hutchinson estimate of it, (1/n²) Σ_b Var_b with
// Var_b = 2(‖A_b‖_F² − Σ A_b,ii²) (Rademacher) or 2‖A_b‖_F² (Gaussian),
// A_b = J_bJ_bᵀ.
func hutchinsonMoments(js []*mat.Dense, gaussian bool) (exact, variance float64) {
	n := float64(len(js))
	for _, j := range js {
		var a mat.Dense
		a.Mul(j, j.T())
		f := mat.Norm(j, 2)
		exact += f * f / n
		af := mat.Norm(&a, 2)
		v := 2 * af * af
		if !gaussian {
			r, _ := a.Dims()
			for i := range r {
				v -= 2 * a.At(i, i) * a.At(i, i)
			}
		}
		variance += v / (n * n)
	}
	return exact, variance
}

func TestJacobianOptionsAndArguments(t *testing.T) {
	c := must(layers.NewDense(layers.DenseConfig{Hidden: 2, Input: 1, Activation: layers.Tanh}))
	e := must(c.Evaluator(1))
	require.NoError(t, e.SetInput([]float64{1}))
	z := []float64{0.1, -0.2}
	one, err := JacobianFrobenius(context.Background(), e, z, nil)
	require.NoError(t, err)
	require.Equal(t, 1, one.Probes)
	require.True(t, math.IsNaN(one.StdErr), "one probe has no standard error")
	for _, tc := range []struct {
		o    JacobianOptions
		want string
	}{
		{JacobianOptions{Iterations: -1}, "JacobianOptions.Iterations"},
		{JacobianOptions{Probes: -1}, "JacobianOptions.Probes"},
		{JacobianOptions{Tol: math.NaN()}, "JacobianOptions.Tol"},
		{JacobianOptions{Step: -1}, "JacobianOptions.Step"},
	} {
		_, err := SpectralRadius(context.Background(), e, z, &tc.o)
		require.ErrorContains(t, err, tc.want)
		_, err = SpectralNorm(context.Background(), e, z, &tc.o)
		require.ErrorContains(t, err, tc.want)
		_, err = JacobianFrobenius(context.Background(), e, z, &tc.o)
		require.ErrorContains(t, err, tc.want)
	}
	_, err = SpectralRadius(context.Background(), e, make([]float64, 3), nil)
	require.ErrorContains(t, err, "length")
	_, err = SpectralNorm(context.Background(), nil, z, nil)
	require.ErrorContains(t, err, "nil evaluator")
}
