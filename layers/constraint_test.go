package layers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/solver"
)

// spectralNorm returns ‖W‖₂ = √λ_max(WᵀW), computed independently of the
// SVD that Project uses.
func spectralNorm(w []float64, h int) float64 {
	a := mat.NewDense(h, h, slices.Clone(w))
	var ata mat.SymDense
	ata.SymOuterK(1, a.T())
	var eig mat.EigenSym
	if !eig.Factorize(&ata, false) {
		panic("eigen decomposition failed")
	}
	return math.Sqrt(floats.Max(eig.Values(nil)))
}

// infNorm returns ‖Wᵀ‖_∞, the largest absolute row sum of Wᵀ.
func infNorm(w []float64, h int) float64 {
	wt := mat.DenseCopyOf(mat.NewDense(h, h, slices.Clone(w)).T())
	return mat.Norm(wt, math.Inf(1))
}

func TestProjectBoundsInducedNorm(t *testing.T) {
	const h, gamma = 7, 0.8
	for _, norm := range []string{"l2", "linf", "lp:4"} {
		t.Run(norm, func(t *testing.T) {
			c := mustCell(NewDense(DenseConfig{Hidden: h, Input: 1, Lipschitz: Constraint{P: constraintP(norm), Gamma: gamma}, Seed: 3}))
			rng := rand.New(rand.NewPCG(1, 1))
			for trial := range 5 {
				w := c.W().Data()
				// Large random weights, some above the bound, some below.
				sd := 0.05 * math.Pow(4, float64(trial))
				for i := range w {
					w[i] = sd * rng.NormFloat64()
				}
				before := slices.Clone(w)
				require.NoError(t, c.Project())
				switch norm {
				case "l2":
					got := spectralNorm(w, h)
					require.LessOrEqual(t, got, gamma*(1+1e-9))
					if spectralNorm(before, h) <= gamma {
						require.Equal(t, before, w, "a feasible W is left alone")
					} else {
						require.InDelta(t, gamma, got, 1e-9, "an infeasible W is scaled onto the bound")
					}
				case "linf":
					require.LessOrEqual(t, infNorm(w, h), gamma*(1+1e-9))
					// Rows of Wᵀ within the bound are untouched.
					for j := 0; j < h; j++ {
						s := 0.0
						for i := 0; i < h; i++ {
							s += math.Abs(before[i*h+j])
						}
						if s <= gamma {
							for i := 0; i < h; i++ {
								require.Equal(t, before[i*h+j], w[i*h+j])
							}
						}
					}
				case "lp:4":
					// The Riesz–Thorin bound, and the ratio ‖Wᵀz‖₄/‖z‖₄ at
					// random z (a lower bound on the norm).
					wt := mat.DenseCopyOf(mat.NewDense(h, h, w).T())
					rt := math.Pow(mat.Norm(wt, 1), 0.25) * math.Pow(mat.Norm(wt, math.Inf(1)), 0.75)
					require.LessOrEqual(t, rt, gamma*(1+1e-9))
					z := make([]float64, h)
					var out mat.VecDense
					for range 100 {
						for i := range z {
							z[i] = rng.NormFloat64()
						}
						out.MulVec(wt, mat.NewVecDense(h, z))
						require.LessOrEqual(t, pnorm(out.RawVector().Data, 4)/pnorm(z, 4), gamma*(1+1e-9))
					}
				}
				require.InDelta(t, c.Bound(), boundFor(norm, w, h), 1e-12)
			}
		})
	}
}

func boundFor(norm string, w []float64, h int) float64 {
	switch norm {
	case "l2":
		return spectralNorm(w, h)
	case "linf":
		return infNorm(w, h)
	}
	wt := mat.DenseCopyOf(mat.NewDense(h, h, w).T())
	return math.Pow(mat.Norm(wt, 1), 0.25) * math.Pow(mat.Norm(wt, math.Inf(1)), 0.75)
}

func TestPowerIterationWithoutExactCheck(t *testing.T) {
	// With the exact check disabled, the persistent power-iteration vector
	// converges over repeated Project calls: after a few dozen calls on a
	// fixed W the estimate is within 1e-6 of ‖W‖₂ and W ends within that
	// of the bound.
	const h = 8
	o, err := newOpNorm(Constraint{Gamma: 0.9, ExactEvery: 1 << 30}, h)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(2, 2))
	w := randVec(rng, h*h, 1)
	for range 200 {
		o.project(w, h)
	}
	require.InDelta(t, 0.9, spectralNorm(w, h), 1e-6)
	require.Equal(t, 201, o.calls+1)
}

func TestExpertsProjectsEveryTerm(t *testing.T) {
	c := mustCell(NewExperts(ExpertsConfig{Hidden: 4, Input: 6, Experts: 3, Lipschitz: Constraint{Gamma: 0.6}, Seed: 1}))
	floats.Scale(20, c.w.Data())
	require.NoError(t, c.Project())
	for m := 0; m < 3; m++ {
		require.LessOrEqual(t, spectralNorm(c.wm(m), 4), 0.6*(1+1e-9))
	}
	require.InDelta(t, 0.6, c.Bound(), 1e-9)
	// Every family: the certified bound of every expert after its weights
	// grow by random factors.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []float64{2, 4, math.Inf(1)} {
		ex := mustCell(NewExperts(ExpertsConfig{Hidden: 5, Input: 2, Experts: 4, Lipschitz: Constraint{P: p, Gamma: 0.6}, Seed: 1}))
		for i := range ex.w.Data() {
			ex.w.Data()[i] *= 1 + 3*rng.Float64()
		}
		require.NoError(t, ex.Project())
		require.LessOrEqual(t, ex.Bound(), 0.6*(1+1e-9), "p = %v", p)
	}
}

func TestMeanFieldProjectBoundsL(t *testing.T) {
	for _, norm := range []string{"l2", "linf", "lp:3"} {
		c := mustCell(NewMeanField(MeanFieldConfig{Hidden: 4, Input: 2, Units: 5, Lipschitz: Constraint{P: constraintP(norm), Gamma: 0.5}, Seed: 2}))
		floats.Scale(10, c.v.Data())
		require.NoError(t, c.Project())
		require.InDelta(t, 0.5, c.Lipschitz(), 1e-12, norm)
		// Independent recomputation of L for l2.
		if norm == "l2" {
			w, v := c.w.Data(), c.v.Data()
			s := 0.0
			for m := 0; m < 5; m++ {
				wn, vn := 0.0, 0.0
				for i := 0; i < 4; i++ {
					wn += w[i*5+m] * w[i*5+m]
					vn += v[m*4+i] * v[m*4+i]
				}
				s += wn * vn
			}
			require.InDelta(t, 0.5, math.Sqrt(s/5), 1e-12)
		}
	}
	// Every parameter grown by random factors, in every family.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []float64{2, 4, math.Inf(1)} {
		mf := mustCell(NewMeanField(MeanFieldConfig{Hidden: 5, Input: 2, Units: 9, Lipschitz: Constraint{P: p, Gamma: 0.7}, Seed: 1}))
		require.LessOrEqual(t, mf.Lipschitz(), 0.7*(1+1e-12))
		for _, q := range mf.Params() {
			for i := range q.Data() {
				q.Data()[i] *= 1 + 3*rng.Float64()
			}
		}
		require.NoError(t, mf.Project())
		require.LessOrEqual(t, mf.Lipschitz(), 0.7*(1+1e-12), "p = %v", p)
	}
	mf := mustCell(NewMeanField(MeanFieldConfig{Hidden: 2, Input: 2, Units: 3}))
	mf.v.Data()[0] = math.NaN()
	require.Error(t, mf.Project())
}

func TestLipschitzMonitor(t *testing.T) {
	n, err := solver.NewLP(2, 3)
	require.NoError(t, err)
	for _, tc := range []struct {
		factor   float64
		exceeded bool
	}{{0.5, false}, {2, true}} {
		o := solver.Func{N: 3, F: func(dst, x []float64) { floats.ScaleTo(dst, tc.factor, x) }}
		m, err := NewLipschitzMonitor(o, n, 0.9)
		require.NoError(t, err)
		res, err := solver.Solve(t.Context(), solver.Problem{Oracle: m, Norm: n}, []float64{1, 2, 3}, &solver.Settings{MaxIter: 5, Certify: solver.CertifySettings{Skip: true}}, solver.Picard{})
		require.NoError(t, err)
		st := m.Stats()
		require.Equal(t, int(res.Stats.Calls)-1, st.Pairs, "every successive pair but the first is compared")
		require.InDelta(t, tc.factor, st.Max, 1e-12)
		require.Equal(t, tc.exceeded, st.Exceeded > 0)
		require.Equal(t, tc.exceeded, st.Warning != "")
	}
	// A stochastic oracle is compared only between equal Samples.
	c := mustCell(NewExperts(ExpertsConfig{Hidden: 3, Input: 4, Experts: 4, Seed: 1}))
	e, err := c.Evaluator(1)
	require.NoError(t, err)
	require.NoError(t, e.SetInput(make([]float64, 4)))
	m, err := NewLipschitzMonitor(e, n, c.Gamma())
	require.NoError(t, err)
	dst := make([]float64, 3)
	for i, s := range []solver.Sample{{Seed: 1, Size: 2}, {Seed: 2, Size: 2}, {Seed: 2, Size: 2}, {Seed: 3, Size: 2}} {
		_, err := m.Eval(dst, []float64{float64(i), 1, 2}, s)
		require.NoError(t, err)
	}
	require.Equal(t, 1, m.Stats().Pairs)
	require.LessOrEqual(t, m.Stats().Max, c.Gamma()*(1+1e-9))
	_, err = NewLipschitzMonitor(e, n, 0)
	require.ErrorContains(t, err, "gamma")
}

// constraintP returns the exponent of the constraint for the solver norm
// of the given name.
func constraintP(name string) float64 {
	n, err := solver.ParseNorm(name, 1, 1)
	if err != nil {
		panic(err)
	}
	c, err := ConstraintFor(n)
	if err != nil {
		panic(err)
	}
	return c.P
}

// otherNorm is a norm ConstraintFor does not know.
type otherNorm struct{ solver.LP }

func TestConstraintFor(t *testing.T) {
	l4, err := solver.NewLP(4, 6)
	require.NoError(t, err)
	inf, err := solver.NewLInf(6)
	require.NoError(t, err)
	s3, err := solver.NewSchatten(3, 2, 3)
	require.NoError(t, err)
	b, err := solver.NewBatched(inf, 5)
	require.NoError(t, err)
	for _, tc := range []struct {
		n    solver.Norm
		want float64
	}{
		{nil, 2}, {l4, 4}, {inf, math.Inf(1)}, {s3, 2}, {b, math.Inf(1)},
	} {
		c, err := ConstraintFor(tc.n)
		require.NoError(t, err, "%v", tc.n)
		require.Equal(t, Constraint{P: tc.want}, c, "%v", tc.n)
	}
	for name, want := range map[string]float64{"l2": 2, "lp:3": 3, "lp:inf": math.Inf(1), "linf": math.Inf(1), "schatten:4": 2, "schatten:inf": 2} {
		require.Equal(t, want, constraintP(name), name)
	}
	_, err = ConstraintFor(otherNorm{l4})
	require.ErrorContains(t, err, "ConstraintFor")
}

// TestBelowGammaProvesOnlyTrueBounds: the Cholesky test that lets the ℓ2
// projection skip its SVD succeeds on matrices whose largest singular value
// is clearly below γ, fails on those whose singular value exceeds γ by
// 10⁻¹² relative (well inside rounding of the factorisation's margin, which
// it must not mistake for a proof), and fails on NaN; a projection it
// certifies leaves W unchanged.
func TestBelowGammaProvesOnlyTrueBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, h := range []int{1, 7, 64, 128} {
		o, err := newOpNorm(Constraint{}, h)
		require.NoError(t, err)
		w0 := make([]float64, h*h)
		for i := range w0 {
			w0[i] = rng.NormFloat64()
		}
		s0 := spectralNorm(w0, h)
		at := func(sigma float64) []float64 {
			w := slices.Clone(w0)
			scale(w, sigma/s0)
			return w
		}
		for _, f := range []float64{0.01, 0.5, 0.99, 1 - 1e-6} {
			require.True(t, o.belowGamma(at(f*o.gamma), h), "h %d, σ = %gγ", h, f)
		}
		for _, f := range []float64{1 + 1e-12, 1 + 1e-6, 2} {
			require.False(t, o.belowGamma(at(f*o.gamma), h), "h %d, σ = %gγ", h, f)
		}
		w := at(0.5 * o.gamma)
		w[0] = math.NaN()
		require.False(t, o.belowGamma(w, h), "h %d: NaN", h)
		w = at(0.9 * o.gamma)
		want := slices.Clone(w)
		o.project(w, h)
		require.Equal(t, want, w, "h %d: a certified projection leaves W unchanged", h)
	}
}
