package deq

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestTermEvalsAddUp checks the term-evaluation counts of a forward solve
// and a backward pass on a stochastic cell of M terms: with the exact map
// (Broyden) every oracle call and the exact certificate count M; with the
// sampled oracle (VR-GHAL) the solve draws fewer than M per call and the
// finite-sum certificate adds exactly M; an implicit backward counts M per
// exact adjoint call and per full VJP, a Jacobian-free one M for its one
// VJP.
func TestTermEvalsAddUp(t *testing.T) {
	cell := manyTermCells("l2", 1)["meanfield"]
	const n = 2
	rng := rand.New(rand.NewPCG(3, 4))
	x := randVec(rng, n*cell.Shape().InputLen(), 1)
	ev, err := cell.Evaluator(n)
	require.NoError(t, err)
	m := int64(ev.Terms())
	ctx := context.Background()

	l := must(New(cell, &Settings{Forward: solver.Broyden{}, Adjoint: solver.Broyden{},
		ForwardSettings: solver.Settings{Tol: 1e-8}, AdjointSettings: solver.Settings{Tol: 1e-8}}))
	sol, err := l.Forward(ctx, x)
	require.NoError(t, err)
	require.False(t, sol.Sampled)
	c := sol.Result.Certificate
	require.NotNil(t, c)
	require.Equal(t, int64(1), c.Calls)
	require.Equal(t, m*(sol.Result.Stats.Calls+c.Calls), sol.TermEvals())
	st, err := l.Backward(ctx, sol, make([]float64, len(sol.Z)), nil)
	require.NoError(t, err)
	require.NotNil(t, st.Adjoint)
	calls := st.Adjoint.Stats.Calls
	if ac := st.Adjoint.Certificate; ac != nil {
		calls += ac.Calls
	}
	require.Equal(t, m*(calls+int64(st.VJPs)), st.TermEvals(int(m)))

	jf := must(New(cell, &Settings{Forward: solver.Broyden{}, Backward: JacobianFree}))
	sol, err = jf.Forward(ctx, x)
	require.NoError(t, err)
	st, err = jf.Backward(ctx, sol, make([]float64, len(sol.Z)), nil)
	require.NoError(t, err)
	require.Equal(t, 1, st.VJPs)
	require.Equal(t, m, st.TermEvals(int(m)))

	vr := must(New(cell, &Settings{Forward: solver.VRGHAL{Gamma: cell.Gamma()}, ForwardOracle: Sampled,
		ForwardSettings: solver.Settings{Tol: 5e-3, Seed: 5}}))
	sol, err = vr.Forward(ctx, x)
	require.NoError(t, err)
	require.True(t, sol.Sampled)
	c = sol.Result.Certificate
	require.Equal(t, solver.RuleFiniteSum, c.Rule)
	require.Equal(t, m, c.Samples, "the exact certifying call counts every term")
	require.Equal(t, sol.Result.Stats.Samples+m, sol.TermEvals())
	require.Less(t, sol.Result.Stats.Samples, m*sol.Result.Stats.Calls, "the sampled solve draws fewer than M terms per call")

	var none *Solution
	require.Zero(t, none.TermEvals())
	var nost *BackwardStats
	require.Zero(t, nost.TermEvals(7))
}
