package solver

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGHALInnerSteps checks J_k = ⌈ln β / ln((1 − λ_k)γ̄)⌉ against values
// computed by hand for the default schedule β = 1/2, λ̄_0 = 1.
func TestGHALInnerSteps(t *testing.T) {
	cases := []struct {
		beta, lambda, gamma float64
		want                int
	}{
		{0.5, 1.0 / 3, 1, 2},   // ln 2 / ln 1.5 = 1.71
		{0.5, 1.0 / 5, 1, 4},   // ln 2 / ln 1.25 = 3.11
		{0.5, 1.0 / 9, 1, 6},   // ln 2 / ln 1.125 = 5.88
		{0.5, 1.0 / 17, 1, 12}, // ln 2 / ln(17/16) = 11.4
		{0.5, 1.0 / 3, 0.5, 1}, // ln 2 / ln 3 = 0.63
		{0.5, 0, 0.9, 7},       // ln 2 / ln(10/9) = 6.58
		{0.9, 0.01, 0.99, 6},   // ln(10/9) / −ln(0.99·0.99) = 5.24
		{0.5, 0, 1, ghalMaxInner},
		{0.5, 1e-300, 1, ghalMaxInner},
	}
	for _, c := range cases {
		require.Equal(t, c.want, ghalInnerSteps(c.beta, c.lambda, c.gamma), "β=%v λ=%v γ̄=%v", c.beta, c.lambda, c.gamma)
	}
}

// pointLog wraps an oracle and keeps a copy of every point it is asked to
// evaluate, so that evaluation i is the point of trace entry i.
type pointLog struct {
	Func
	points [][]float64
}

func (l *pointLog) Eval(dst, x []float64, s Sample) (int, error) {
	l.points = append(l.points, append([]float64(nil), x...))
	return l.Func.Eval(dst, x, s)
}

// TestGHALLemma checks the two claims of the paper's Lemma
// basic-GHAL-inequalities with exact evaluations (ε̃ = 0) at every epoch end
// x̂_k of GHAL runs on a nonexpansive rotation, an ℓ∞ contraction and a
// Bellman operator:
//
//	‖T(x̂_k) − x̂_k‖ ≤ β‖T(x̂_{k−1}) − x̂_{k−1}‖ + λ̄_k‖x̂_k − x̂_{k−1}‖,
//	‖x̂_k − x_*‖ ≤ ‖x̂_{k−1} − x_*‖,
//
// and the resulting bound ‖T(x̂_k) − x̂_k‖ ≤ β‖T(x̂_{k−1}) − x̂_{k−1}‖ + 2λ̄_k‖x_0 − x_*‖.
func TestGHALLemma(t *testing.T) {
	rot := newRotation(2.5, [2]float64{1, -2})
	l2, err := NewLP(2, 2)
	require.NoError(t, err)
	aff := newAffineLInf(t, 31, 15, 0.9)
	m := newMDP(32, 12, 3, 0.9)
	m.vstar = m.policyIteration(t)
	linf, err := NewLInf(12)
	require.NoError(t, err)
	cases := []struct {
		name  string
		o     Func
		norm  Norm
		x0    []float64
		xstar []float64
		m     GHAL
		tol   float64
	}{
		// GHAL's residual decays as O(log N / N) on the rotation.
		{"rotation", rot.oracle(), l2, []float64{3, 1}, rot.c[:], GHAL{}, 1e-4},
		{"rotation/beta=0.8,lambda0=4", rot.oracle(), l2, []float64{3, 1}, rot.c[:], GHAL{Beta: 0.8, Lambda0: 4}, 1e-4},
		{"linf-affine/gamma=1", aff.oracle(), aff.norm, make([]float64, 15), aff.xstar, GHAL{}, 1e-9},
		{"linf-affine/gamma=0.9", aff.oracle(), aff.norm, make([]float64, 15), aff.xstar, GHAL{Gamma: 0.9}, 1e-9},
		{"bellman/gamma=0.9", m.oracle(), linf, make([]float64, 12), m.vstar, GHAL{Gamma: 0.9}, 1e-9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := &pointLog{Func: c.o}
			res, err := Solve(context.Background(), Problem{Oracle: log, Norm: c.norm}, c.x0, &Settings{Tol: c.tol, MaxIter: 100000}, c.m)
			require.NoError(t, err)
			require.Equal(t, Success, res.Status)
			beta, gamma, lbar := c.m.params()
			n := len(c.x0)
			diff := make([]float64, n)
			dist := func(a, b []float64) float64 { subInto(diff, a, b); return c.norm.Norm(diff) }
			d0 := dist(c.x0, c.xstar)
			const slack = 1 + 1e-12
			end, epochs := 0, 0
			for {
				lbar *= beta
				steps := ghalInnerSteps(beta, lbar/(1+lbar), gamma)
				if end+steps >= len(res.Stats.Trace) {
					break
				}
				prev, cur := log.points[end], log.points[end+steps]
				rPrev, rCur := res.Stats.Trace[end].Residual, res.Stats.Trace[end+steps].Residual
				require.LessOrEqual(t, rCur, (beta*rPrev+lbar*dist(cur, prev))*slack, "epoch %d first claim", epochs+1)
				require.LessOrEqual(t, dist(cur, c.xstar), dist(prev, c.xstar)*slack+1e-12*d0, "epoch %d second claim", epochs+1)
				require.LessOrEqual(t, rCur, (beta*rPrev+2*lbar*d0)*slack, "epoch %d residual bound", epochs+1)
				end += steps
				epochs++
			}
			require.Greater(t, epochs, 5)
			t.Logf("%d epochs checked, %d iterations", epochs, res.Stats.Iterations)
		})
	}
}
