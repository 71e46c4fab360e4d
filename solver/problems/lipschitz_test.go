package problems

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/solver"
)

// TestLipschitz checks ‖T(x) − T(y)‖ ≤ γ‖x − y‖ on random pairs, and the
// same for τ(·; ξ) under a shared Sample when the model is samplewise.
func TestLipschitz(t *testing.T) {
	for _, c := range suiteCases() {
		t.Run(c.String(), func(t *testing.T) {
			p := mustNew(t, c.cfg)
			rng := rand.New(rand.NewPCG(3, 4))
			n := p.Oracle.Len()
			x, y, tx, ty, d := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			dist := func(a, b []float64) float64 {
				for i := range d {
					d[i] = a[i] - b[i]
				}
				return p.Norm.Norm(d)
			}
			for trial := 0; trial < 50; trial++ {
				scale := math.Pow(10, float64(trial%5)-2)
				for i := range x {
					x[i] = p.FixedPoint[i] + scale*rng.NormFloat64()
					y[i] = x[i] + scale*rng.NormFloat64()
				}
				require.NoError(t, p.Oracle.EvalExact(tx, x))
				require.NoError(t, p.Oracle.EvalExact(ty, y))
				require.LessOrEqual(t, dist(tx, ty), p.Gamma*dist(x, y)*(1+1e-9))
				if p.Model >= solver.SamplewiseLipschitz {
					s := solver.Sample{Seed: uint64(trial), Size: 1 + trial%3}
					_, err := p.Oracle.Eval(tx, x, s)
					require.NoError(t, err)
					_, err = p.Oracle.Eval(ty, y, s)
					require.NoError(t, err)
					require.LessOrEqual(t, dist(tx, ty), p.Gamma*dist(x, y)*(1+1e-9), "samplewise")
				}
			}
		})
	}
}

// extractLinear returns the matrix of the linear part of an affine exact
// operator, column j being T(e_j) − T(0).
func extractLinear(t *testing.T, p *Problem) *mat.Dense {
	n := p.Oracle.Len()
	zero := make([]float64, n)
	t0 := exactT(t, p, zero)
	m := mat.NewDense(n, n, nil)
	e := make([]float64, n)
	for j := 0; j < n; j++ {
		e[j] = 1
		tj := exactT(t, p, e)
		e[j] = 0
		for i := 0; i < n; i++ {
			m.Set(i, j, tj[i]-t0[i])
		}
	}
	return m
}

func spectralNorm(t *testing.T, m *mat.Dense) float64 {
	var svd mat.SVD
	require.True(t, svd.Factorize(m, mat.SVDNone))
	return svd.Values(nil)[0]
}

// TestGammaIsTheInducedNorm checks that γ is the induced norm of the linear
// part where the construction says it is exact, and the Riesz–Thorin
// condition ‖A‖1, ‖A‖∞ ≤ γ (with equality for one) for ℓp.
func TestGammaIsTheInducedNorm(t *testing.T) {
	const g = 0.7
	for _, tc := range []struct {
		name, norm string
		check      func(t *testing.T, a *mat.Dense, d int)
	}{
		{"affine", "l2", func(t *testing.T, a *mat.Dense, _ int) { require.InDelta(t, g, spectralNorm(t, a), 1e-12) }},
		{"affine-t", "linf", func(t *testing.T, a *mat.Dense, d int) {
			for i := 0; i < d; i++ {
				s := 0.0
				for j := 0; j < d; j++ {
					s += math.Abs(a.At(i, j))
				}
				require.InDelta(t, g, s, 1e-12, "row %d", i)
			}
		}},
		{"affine-switch", "lp:3", func(t *testing.T, a *mat.Dense, d int) {
			n1, ninf := mat.Norm(a, 1), mat.Norm(a, math.Inf(1))
			require.LessOrEqual(t, n1, g*(1+1e-12))
			require.LessOrEqual(t, ninf, g*(1+1e-12))
			require.InDelta(t, g, math.Max(n1, ninf), 1e-12)
		}},
		{"shift", "lp:5", func(t *testing.T, a *mat.Dense, _ int) { require.InDelta(t, g, spectralNorm(t, a), 1e-12) }},
		// For Frobenius, the operator X ↦ AXB has spectral norm ‖A‖op‖B‖op.
		{"matrix", "l2", func(t *testing.T, a *mat.Dense, _ int) { require.InDelta(t, g, spectralNorm(t, a), 1e-12) }},
	} {
		t.Run(tc.name+"/"+tc.norm, func(t *testing.T) {
			p := mustNamed(t, Config{Name: tc.name, Dim: 9, Gamma: g, Seed: 5}, tc.norm)
			if tc.name == "matrix" {
				p = mustNamed(t, Config{Name: tc.name, Dim: 3, Gamma: g, Seed: 5}, tc.norm)
			}
			a := extractLinear(t, p)
			r, _ := a.Dims()
			tc.check(t, a, r)
		})
	}
}

// TestShiftIsometry: the shift map stretches every difference by exactly γ in
// every ℓp norm.
func TestShiftIsometry(t *testing.T) {
	for _, norm := range []string{"l2", "lp:3", "linf"} {
		p := mustNamed(t, Config{Name: "shift", Dim: 10, Seed: 2}, norm)
		require.Equal(t, 1.0, p.Gamma)
		rng := rand.New(rand.NewPCG(1, 1))
		x, y := gaussVec(rng, 10), gaussVec(rng, 10)
		tx, ty := exactT(t, p, x), exactT(t, p, y)
		dx, dt := make([]float64, 10), make([]float64, 10)
		for i := range dx {
			dx[i], dt[i] = x[i]-y[i], tx[i]-ty[i]
		}
		require.InDelta(t, p.Norm.Norm(dx), p.Norm.Norm(dt), 1e-12, norm)
	}
}

// TestMDPTightLipschitz: T(Q + c·1) = T(Q) + γc·1, so γ is exact in ℓ∞.
func TestMDPTightLipschitz(t *testing.T) {
	p := mustNew(t, Config{Name: "mdp", Dim: 6, Gamma: 0.8, Seed: 1})
	q := make([]float64, len(p.X0))
	q2 := make([]float64, len(q))
	for i := range q2 {
		q2[i] = 2.5
	}
	a, b := exactT(t, p, q), exactT(t, p, q2)
	for i := range a {
		require.InDelta(t, 0.8*2.5, b[i]-a[i], 1e-12)
	}
}
