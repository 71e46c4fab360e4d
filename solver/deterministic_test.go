package solver

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/internal/numeric"
)

// This file holds the fixed-point problems with independently computed
// solutions on which every deterministic method is tested, and the tests
// that run the methods on them.

// epsRound is the unit roundoff of float64.
const epsRound = 0x1p-52

// affine is the problem x ↦ A x + b with its exact solution.
type affine struct {
	a     *mat.Dense
	b     []float64
	xstar []float64
	gamma float64 // Lipschitz constant of the map in the problem's norm
	norm  Norm
}

// oracle returns T(x) = A x + b, computed without allocating.
func (p *affine) oracle() Func {
	n := len(p.b)
	raw := p.a.RawMatrix()
	return Func{N: n, F: func(dst, x []float64) {
		for i := range dst {
			dst[i] = p.b[i] + dot(raw.Data[i*raw.Stride:i*raw.Stride+n], x)
		}
	}}
}

// solveAffine returns the solution of (I − A) x = b by gonum's LU solve.
func solveAffine(t testing.TB, a *mat.Dense, b []float64) []float64 {
	n := len(b)
	var m mat.Dense
	m.Sub(eye(n), a)
	var x mat.VecDense
	require.NoError(t, x.SolveVec(&m, mat.NewVecDense(n, b)))
	return append([]float64(nil), x.RawVector().Data...)
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}

// randDense returns an r×c matrix of standard normal entries, drawn in
// row-major order.
func randDense(rng *rand.Rand, r, c int) *mat.Dense { return mat.NewDense(r, c, randVec(rng, r*c)) }

func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// symmetricWithNorm returns a random symmetric n×n matrix Q D Qᵀ with
// eigenvalues D spread over [−g, g] and ±g among them, so that its spectral
// norm and its spectral radius both equal g: Picard's error contracts by
// exactly g per step along the extreme eigenvectors.
func symmetricWithNorm(rng *rand.Rand, n int, g float64) *mat.Dense {
	var qr mat.QR
	qr.Factorize(randDense(rng, n, n))
	var q mat.Dense
	qr.QTo(&q)
	d := mat.NewDiagDense(n, nil)
	for i := 0; i < n; i++ {
		d.SetDiag(i, g*(2*rng.Float64()-1))
	}
	d.SetDiag(0, g)
	if n > 1 {
		d.SetDiag(1, -g)
	}
	var a mat.Dense
	a.Product(&q, d, q.T())
	return &a
}

// newAffineL2 returns an n-dimensional affine map whose matrix is symmetric
// with spectral norm gamma, measured in ℓ2.
func newAffineL2(t testing.TB, seed uint64, n int, gamma float64) *affine {
	rng := rand.New(rand.NewPCG(seed, 1))
	a := symmetricWithNorm(rng, n, gamma)
	b := randVec(rng, n)
	norm, err := NewLP(2, n)
	require.NoError(t, err)
	return &affine{a: a, b: b, xstar: solveAffine(t, a, b), gamma: gamma, norm: norm}
}

// newAffineLInf returns an affine map whose matrix is gamma times a random
// row-stochastic matrix: its ℓ∞ operator norm (maximum absolute row sum) and,
// by Perron–Frobenius, its spectral radius both equal gamma.
func newAffineLInf(t testing.TB, seed uint64, n int, gamma float64) *affine {
	rng := rand.New(rand.NewPCG(seed, 2))
	a := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		row := a.RawRowView(i)
		s := 0.0
		for j := range row {
			row[j] = rng.Float64()
			s += row[j]
		}
		for j := range row {
			row[j] *= gamma / s
		}
	}
	b := randVec(rng, n)
	norm, err := NewLInf(n)
	require.NoError(t, err)
	return &affine{a: a, b: b, xstar: solveAffine(t, a, b), gamma: gamma, norm: norm}
}

// newAffineSchatten returns the map X ↦ L X R + C on r×c matrices stored
// row-major, with symmetric L and R of operator norms √gamma, so that
// ‖L X R‖_p ≤ gamma ‖X‖_p with equality for some X, measured in the Schatten-p norm.
// Row-major vectorisation turns L X R into (L ⊗ Rᵀ) vec(X), so the exact
// solution comes from the Kronecker form of the linear system.
func newAffineSchatten(t testing.TB, seed uint64, r, c int, gamma, p float64) *affine {
	rng := rand.New(rand.NewPCG(seed, 3))
	l := symmetricWithNorm(rng, r, math.Sqrt(gamma))
	rr := symmetricWithNorm(rng, c, math.Sqrt(gamma))
	var k mat.Dense
	k.Kronecker(l, rr.T())
	b := randVec(rng, r*c)
	norm, err := NewSchatten(p, r, c)
	require.NoError(t, err)
	return &affine{a: &k, b: b, xstar: solveAffine(t, &k, b), gamma: gamma, norm: norm}
}

// rotation is T(x) = c + R(x − c) on R², a rotation by theta about c: an ℓ2
// isometry, nonexpansive but not contractive, with the unique fixed point c.
type rotation struct {
	c        [2]float64
	cos, sin float64
	theta    float64
}

func newRotation(theta float64, c [2]float64) *rotation {
	return &rotation{c: c, cos: math.Cos(theta), sin: math.Sin(theta), theta: theta}
}

func (r *rotation) oracle() Func {
	return Func{N: 2, F: func(dst, x []float64) {
		u, v := x[0]-r.c[0], x[1]-r.c[1]
		dst[0] = r.c[0] + r.cos*u - r.sin*v
		dst[1] = r.c[1] + r.sin*u + r.cos*v
	}}
}

// mdp is a finite Markov decision process with S states and A actions; its
// Bellman optimality operator T(V)_s = max_a r(s,a) + γ Σ_s' P(s'|s,a) V(s')
// is a γ-contraction in ℓ∞.
type mdp struct {
	s, a  int
	gamma float64
	p     [][]float64 // p[s*A+a][s'] = P(s'|s,a)
	r     []float64   // r[s*A+a]
	vstar []float64   // optimal values, by policy iteration
}

func newMDP(seed uint64, states, actions int, gamma float64) *mdp {
	rng := rand.New(rand.NewPCG(seed, 4))
	m := &mdp{s: states, a: actions, gamma: gamma, p: make([][]float64, states*actions), r: make([]float64, states*actions)}
	for i := range m.p {
		row := make([]float64, states)
		sum := 0.0
		for j := range row {
			if rng.Float64() < 0.5 { // sparse transitions
				row[j] = rng.Float64()
				sum += row[j]
			}
		}
		if sum == 0 {
			row[rng.IntN(states)], sum = 1, 1
		}
		for j := range row {
			row[j] /= sum
		}
		m.p[i] = row
		m.r[i] = rng.Float64()
	}
	return m
}

// q returns r(s,a) + γ Σ P(s'|s,a) v(s').
func (m *mdp) q(s, a int, v []float64) float64 {
	row := m.p[s*m.a+a]
	acc := 0.0
	for j, pj := range row {
		acc += pj * v[j]
	}
	return m.r[s*m.a+a] + m.gamma*acc
}

func (m *mdp) bellman(dst, v []float64) {
	for s := 0; s < m.s; s++ {
		best := math.Inf(-1)
		for a := 0; a < m.a; a++ {
			best = math.Max(best, m.q(s, a, v))
		}
		dst[s] = best
	}
}

func (m *mdp) oracle() Func { return Func{N: m.s, F: m.bellman} }

// policyIteration returns the optimal values by Howard's policy iteration:
// evaluate the policy exactly by solving (I − γ P_π) V = r_π with gonum,
// then improve greedily, until the policy is stable. An action replaces the
// current one only if it is better by more than rounding, so the loop cannot
// cycle on ties.
func (m *mdp) policyIteration(t testing.TB) []float64 {
	pi := make([]int, m.s)
	v := make([]float64, m.s)
	for iter := 0; iter < 1000; iter++ {
		lhs := eye(m.s)
		rhs := mat.NewVecDense(m.s, nil)
		for s := 0; s < m.s; s++ {
			for j, pj := range m.p[s*m.a+pi[s]] {
				lhs.Set(s, j, lhs.At(s, j)-m.gamma*pj)
			}
			rhs.SetVec(s, m.r[s*m.a+pi[s]])
		}
		var sol mat.VecDense
		require.NoError(t, sol.SolveVec(lhs, rhs))
		copy(v, sol.RawVector().Data)
		stable := true
		for s := 0; s < m.s; s++ {
			cur := m.q(s, pi[s], v)
			for a := 0; a < m.a; a++ {
				if q := m.q(s, a, v); q > cur+1e-12*(1+math.Abs(cur)) {
					pi[s], cur, stable = a, q, false
				}
			}
		}
		if stable {
			return v
		}
	}
	t.Fatal("policy iteration did not stabilise in 1000 rounds")
	return nil
}

// valueIteration iterates V ← T(V) from zero until ‖T(V) − V‖∞ ≤ tol.
func (m *mdp) valueIteration(tol float64) []float64 {
	v := make([]float64, m.s)
	tv := make([]float64, m.s)
	for {
		m.bellman(tv, v)
		d := 0.0
		for i := range v {
			d = math.Max(d, math.Abs(tv[i]-v[i]))
		}
		v, tv = tv, v
		if d <= tol {
			return v
		}
	}
}

// detMethod is a deterministic method under test; make returns it for a
// problem whose Lipschitz constant is gamma (only GHAL uses it, as Gamma).
type detMethod struct {
	name string
	make func(gamma float64) Method
}

var detMethods = []detMethod{
	{"picard", func(float64) Method { return Picard{} }},
	{"km", func(float64) Method { return KrasnoselskiiMann{} }},
	{"halpern", func(float64) Method { return Halpern{} }},
	{"ghal", func(g float64) Method { return GHAL{Gamma: g} }},
	{"anderson", func(float64) Method { return Anderson{} }},
	{"broyden", func(float64) Method { return Broyden{} }},
}

// Tolerances of the contraction tests. Every method but Halpern is asked for
// an absolute residual of 1e-10. Halpern's anchor term λ_k x_0 keeps its
// residual of order ‖x_0 − x_*‖/k on contractions too, so reaching 1e-10
// would take ~1e10 evaluations; it is asked for a residual of
// halpernDistTol·‖x_0 − x_*‖ instead, which the bound 2‖x_0 − x_*‖/(k + 1)
// (Hilbert norms) reaches after 2/halpernDistTol iterations, well within
// contractionMaxIter.
const (
	contractionTol     = 1e-10
	halpernDistTol     = 1e-4
	contractionMaxIter = 100000
)

// contractionSettings returns the settings of method on a problem whose
// start point is at distance dist0 from the solution.
func contractionSettings(method string, dist0 float64) *Settings {
	s := &Settings{Tol: contractionTol, MaxIter: contractionMaxIter, NoTrace: true}
	if method == "halpern" {
		s.Tol = halpernDistTol * dist0
	}
	return s
}

// distBound returns the bound ‖x − x_*‖ ≤ ‖x − T(x)‖/(1 − γ) of a
// γ-contraction, plus a floating-point allowance of cond·n·ε·scale for the
// rounding in the reference solution and in the residual, where
// cond = (1 + γ)/(1 − γ) bounds the condition number of I − A in the norm.
func distBound(residual, gamma float64, n int, scale float64) float64 {
	cond := (1 + gamma) / (1 - gamma)
	return residual/(1-gamma) + cond*float64(n)*epsRound*scale
}

func TestAffineContractions(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds under -race; single-goroutine numerics, run by the full suite")
	}
	type problem struct {
		name string
		p    *affine
	}
	var problems []problem
	for _, g := range []float64{0.5, 0.9, 0.99} {
		problems = append(problems,
			problem{fmt.Sprintf("l2/gamma=%v", g), newAffineL2(t, 11, 20, g)},
			problem{fmt.Sprintf("linf/gamma=%v", g), newAffineLInf(t, 12, 20, g)},
			problem{fmt.Sprintf("schatten4/gamma=%v", g), newAffineSchatten(t, 13, 6, 5, g, 4)},
			problem{fmt.Sprintf("schatten-inf/gamma=%v", g), newAffineSchatten(t, 14, 5, 6, g, math.Inf(1))},
		)
	}
	for _, pr := range problems {
		for _, dm := range detMethods {
			t.Run(pr.name+"/"+dm.name, func(t *testing.T) {
				p := pr.p
				n := len(p.b)
				x0 := make([]float64, n)
				s := contractionSettings(dm.name, p.norm.Norm(p.xstar))
				res, err := Solve(context.Background(), Problem{Oracle: p.oracle(), Norm: p.norm}, x0, s, dm.make(p.gamma))
				require.NoError(t, err)
				require.Equal(t, Success, res.Status, "residual %g after %d iterations", res.Residual, res.Stats.Iterations)
				// The certificate re-evaluates T at the returned point.
				require.LessOrEqual(t, res.Certificate.Bound, res.Residual*(1+1e-12))
				diff := make([]float64, n)
				subInto(diff, res.X, p.xstar)
				require.LessOrEqual(t, p.norm.Norm(diff), distBound(res.Residual, p.gamma, n, floats.Norm(p.xstar, math.Inf(1))))
				t.Logf("%s: %d iterations, residual %.3g", t.Name(), res.Stats.Iterations, res.Residual)
			})
		}
	}
}

// checkBest asserts that res holds the lowest-residual iterate the method
// recorded and that its residual is the exact one: the certificate
// re-evaluates T at res.X with the same arithmetic.
func checkBest(t *testing.T, res *Result) {
	t.Helper()
	require.NotNil(t, res.X)
	require.True(t, numeric.AllFinite(res.X), "returned point %v", res.X)
	if len(res.Stats.Trace) > 0 {
		lowest := math.Inf(1)
		for _, p := range res.Stats.Trace {
			if !math.IsNaN(p.Residual) {
				lowest = math.Min(lowest, p.Residual)
			}
		}
		require.Equal(t, lowest, res.Residual)
	}
	if res.Certificate != nil {
		require.Equal(t, res.Residual, res.Certificate.Estimate)
	}
}

func TestRotation(t *testing.T) {
	for _, theta := range []float64{math.Pi / 2, 2.5} {
		rot := newRotation(theta, [2]float64{1, -2})
		x0 := []float64{3, 1}
		norm, err := NewLP(2, 2)
		require.NoError(t, err)
		dist0 := math.Hypot(x0[0]-rot.c[0], x0[1]-rot.c[1])
		// On a rotation ‖x − T(x)‖ = 2 sin(θ/2) ‖x − c‖ exactly.
		shrink := 2 * math.Sin(theta/2)
		cases := []struct {
			name string
			m    Method
			tol  float64
			want Status
		}{
			{"picard", Picard{}, 1e-6, IterationLimit},
			{"km", KrasnoselskiiMann{}, 1e-10, Success},
			{"halpern", Halpern{}, halpernDistTol * dist0, Success},
			{"ghal", GHAL{}, halpernDistTol * dist0, Success},
			{"anderson", Anderson{}, 1e-10, Success},
			{"broyden", Broyden{}, 1e-10, Success},
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("theta=%.3g/%s", theta, c.name), func(t *testing.T) {
				s := &Settings{Tol: c.tol, MaxIter: 200000}
				if c.want == IterationLimit {
					s.MaxIter = 2000
				}
				res, err := Solve(context.Background(), Problem{Oracle: rot.oracle(), Norm: norm}, x0, s, c.m)
				require.NoError(t, err)
				require.Equal(t, c.want, res.Status, "residual %g after %d iterations", res.Residual, res.Stats.Iterations)
				checkBest(t, res)
				dist := math.Hypot(res.X[0]-rot.c[0], res.X[1]-rot.c[1])
				require.InDelta(t, res.Residual/shrink, dist, 1e-12*dist0)
				t.Logf("%s: %d iterations, residual %.3g", t.Name(), res.Stats.Iterations, res.Residual)
				switch c.name {
				case "picard":
					// Picard cycles: every iterate is at distance dist0 from c.
					for _, p := range res.Stats.Trace {
						require.InDelta(t, shrink*dist0, p.Residual, 1e-12*dist0)
					}
				case "halpern":
					// Lieder (2021): ‖x_k − T(x_k)‖ ≤ 2‖x_0 − x_*‖/(k + 1).
					for _, p := range res.Stats.Trace {
						require.LessOrEqual(t, p.Residual, 2*dist0/float64(p.Iter+1)*(1+1e-12), "iteration %d", p.Iter)
					}
				}
			})
		}
	}
}

func TestBellman(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds under -race; single-goroutine numerics, run by the full suite")
	}
	const states, actions = 20, 4
	for i, gamma := range []float64{0.5, 0.9, 0.99} {
		m := newMDP(uint64(100+i), states, actions, gamma)
		m.vstar = m.policyIteration(t)
		scale := floats.Norm(m.vstar, math.Inf(1))
		vi := m.valueIteration(1e-12)
		diff := make([]float64, states)
		subInto(diff, vi, m.vstar)
		require.LessOrEqual(t, floats.Norm(diff, math.Inf(1)), distBound(1e-12, gamma, states, scale), "value iteration disagrees with policy iteration")
		norm, err := NewLInf(states)
		require.NoError(t, err)
		for _, dm := range detMethods {
			t.Run(fmt.Sprintf("gamma=%v/%s", gamma, dm.name), func(t *testing.T) {
				v0 := make([]float64, states)
				s := contractionSettings(dm.name, scale)
				res, err := Solve(context.Background(), Problem{Oracle: m.oracle(), Norm: norm}, v0, s, dm.make(gamma))
				require.NoError(t, err)
				require.Equal(t, Success, res.Status, "residual %g after %d iterations", res.Residual, res.Stats.Iterations)
				checkBest(t, res)
				subInto(diff, res.X, m.vstar)
				require.LessOrEqual(t, floats.Norm(diff, math.Inf(1)), distBound(res.Residual, gamma, states, scale))
				t.Logf("%s: %d iterations, residual %.3g", t.Name(), res.Stats.Iterations, res.Residual)
			})
		}
	}
}

// TestNoFixedPoint runs every method on the translation T(x) = x + 1, which
// is nonexpansive but has no fixed point: ‖T(x) − x‖ = ‖1‖ everywhere, so no
// method can succeed, and each must stop for a reason other than Success.
func TestNoFixedPoint(t *testing.T) {
	const n = 3
	o := Func{N: n, F: func(dst, x []float64) {
		for i, v := range x {
			dst[i] = v + 1
		}
	}}
	norm, err := NewLP(2, n)
	require.NoError(t, err)
	for _, dm := range detMethods {
		t.Run(dm.name, func(t *testing.T) {
			res, err := Solve(context.Background(), Problem{Oracle: o, Norm: norm}, make([]float64, n), &Settings{MaxIter: 500}, dm.make(1))
			require.NoError(t, err)
			require.Contains(t, []Status{IterationLimit, Stagnated}, res.Status)
			require.InDelta(t, math.Sqrt(n), res.Residual, 1e-12)
			checkBest(t, res)
		})
	}
}

// TestExpansive runs every method on the expansive map x ↦ 2x + 1 from 0.
// Its only fixed point −1 is repelling: the fixed-point iterations (Picard,
// KM, Halpern, GHAL) cannot reach it and must stop with Diverged or
// IterationLimit, while Anderson and Broyden, which solve 2x + 1 − x = 0 as a
// root-finding problem, find it.
func TestExpansive(t *testing.T) {
	const n = 2
	o := Func{N: n, F: func(dst, x []float64) {
		for i, v := range x {
			dst[i] = 2*v + 1
		}
	}}
	norm, err := NewLP(2, n)
	require.NoError(t, err)
	for _, dm := range detMethods {
		t.Run(dm.name, func(t *testing.T) {
			res, err := Solve(context.Background(), Problem{Oracle: o, Norm: norm}, make([]float64, n), &Settings{Tol: 1e-10, MaxIter: 1000}, dm.make(1))
			require.NoError(t, err)
			checkBest(t, res)
			switch dm.name {
			case "anderson", "broyden":
				require.Equal(t, Success, res.Status)
				require.InDeltaSlice(t, []float64{-1, -1}, res.X, 1e-10)
			default:
				require.Contains(t, []Status{Diverged, IterationLimit}, res.Status)
				require.InDelta(t, math.Sqrt(n), res.Residual, 1e-12, "the start point is the best iterate")
			}
		})
	}
}

// TestNaNOracle runs every method on T(x) = x/2 + 1, which an oracle
// evaluates as NaN wherever x ≥ 1.5: every method heads for the fixed point 2
// and must stop with Diverged and an error wrapping ErrNonFinite, returning
// the best finite iterate.
func TestNaNOracle(t *testing.T) {
	o := Func{N: 1, F: func(dst, x []float64) {
		if x[0] >= 1.5 {
			dst[0] = math.NaN()
			return
		}
		dst[0] = x[0]/2 + 1
	}}
	norm, err := NewLP(2, 1)
	require.NoError(t, err)
	for _, dm := range detMethods {
		t.Run(dm.name, func(t *testing.T) {
			res, err := Solve(context.Background(), Problem{Oracle: o, Norm: norm}, []float64{0}, &Settings{Tol: 1e-10}, dm.make(0.5))
			require.ErrorIs(t, err, ErrNonFinite)
			require.Equal(t, Diverged, res.Status)
			require.Less(t, res.X[0], 1.5)
			checkBest(t, res)
			require.InDelta(t, 1-res.X[0]/2, res.Residual, 1e-15)
		})
	}
}

// TestIterationLimit checks that MaxIter stops every method with
// IterationLimit and that each iteration costs one evaluation.
func TestIterationLimit(t *testing.T) {
	p := newAffineL2(t, 21, 10, 0.9)
	for _, dm := range detMethods {
		t.Run(dm.name, func(t *testing.T) {
			res, err := Solve(context.Background(), Problem{Oracle: p.oracle(), Norm: p.norm}, make([]float64, 10), &Settings{Tol: 1e-14, MaxIter: 3}, dm.make(0.9))
			require.NoError(t, err)
			require.Equal(t, IterationLimit, res.Status)
			require.Equal(t, 3, res.Stats.Iterations)
			require.Equal(t, int64(4), res.Stats.Calls)
			require.Len(t, res.Stats.Trace, 4)
			checkBest(t, res)
		})
	}
}

// TestCanceled cancels the context from inside the oracle's fifth call, and
// before the solve starts: the methods stop with Canceled and return the best
// point recorded (the start point when nothing was evaluated).
func TestCanceled(t *testing.T) {
	p := newAffineL2(t, 22, 10, 0.9)
	x0 := make([]float64, 10)
	for _, dm := range detMethods {
		t.Run(dm.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			inner := p.oracle()
			o := Func{N: 10, F: func(dst, x []float64) {
				if calls++; calls == 5 {
					cancel()
				}
				inner.F(dst, x)
			}}
			res, err := Solve(ctx, Problem{Oracle: o, Norm: p.norm}, x0, &Settings{Tol: 1e-14}, dm.make(0.9))
			require.NoError(t, err)
			require.Equal(t, Canceled, res.Status)
			require.Equal(t, int64(5), res.Stats.Calls)
			checkBest(t, res)

			done, stop := context.WithCancel(context.Background())
			stop()
			res, err = Solve(done, Problem{Oracle: p.oracle(), Norm: p.norm}, x0, nil, dm.make(0.9))
			require.NoError(t, err)
			require.Equal(t, Canceled, res.Status)
			require.Equal(t, x0, res.X)
			require.Zero(t, res.Stats.Calls)
		})
	}
}
