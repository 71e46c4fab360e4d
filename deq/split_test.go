package deq

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// splitPass runs a forward and backward pass of the loss of lossFor on n
// examples of cell with settings s and returns the Solution, the backward
// stats, ∂L/∂x and the parameter gradients, one slice per parameter.
func splitPass(t *testing.T, cell layers.Cell, s Settings, x []float64) (*Solution, *BackwardStats, []float64, [][]float64) {
	t.Helper()
	l, err := New(cell, &s)
	require.NoError(t, err)
	for _, p := range cell.Params() {
		p.ZeroGrad()
	}
	sol, err := l.Forward(context.Background(), x)
	require.NoError(t, err)
	c := randVec(rand.New(rand.NewPCG(7, 7)), len(sol.Z), 1)
	dx := make([]float64, len(x))
	st, err := l.Backward(context.Background(), sol, loss{c}.grad(sol.Z), dx)
	require.NoError(t, err)
	var grads [][]float64
	for _, p := range cell.Params() {
		grads = append(grads, slices.Clone(p.GradData()))
	}
	return sol, st, dx, grads
}

// TestSplitMatchesOneSolve checks that a split batch solves to the fixed
// point and gradients of one solve of the whole batch, within the
// solves' tolerance, for every backward mode, and that its merged result
// covers the whole batch.
func TestSplitMatchesOneSolve(t *testing.T) {
	const n = 7
	for _, tc := range []struct {
		name    string
		prec    layers.Precision
		norm    layers.Normalization
		certify bool
		fwd     solver.Method
		mode    Backward
		split   int
		tol     float64 // agreement of the points and gradients
	}{
		{"broyden-implicit-2", layers.Float64, layers.Projection, false, solver.Broyden{}, Implicit, 2, 1e-8},
		{"anderson-implicit-3", layers.Float64, layers.Projection, false, solver.Anderson{}, Implicit, 3, 1e-8},
		{"broyden-jacobian-free-2", layers.Float64, layers.Projection, false, solver.Broyden{}, JacobianFree, 2, 1e-8},
		{"picard-phantom-4", layers.Float64, layers.Projection, false, solver.Picard{}, Phantom, 4, 1e-8},
		{"float32-certified-2", layers.Float32, layers.Projection, true, solver.Broyden{}, Implicit, 2, 1e-5},
		{"more-parts-than-examples", layers.Float64, layers.Projection, false, solver.Broyden{}, Implicit, 9, 1e-8},
		// The forks share the reparameterisation: each part's VJP chains
		// its own gradient of W into V and g.
		{"weight-norm-2", layers.Float64, layers.WeightNorm, false, solver.Broyden{}, Implicit, 2, 1e-8},
		{"spectral-norm-2", layers.Float64, layers.SpectralNorm, false, solver.Broyden{}, Implicit, 2, 1e-8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cell := must(layers.NewDense(layers.DenseConfig{Hidden: 6, Input: 4, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.6}, Normalization: tc.norm, Precision: tc.prec, Seed: 3}))
			x := randVec(rand.New(rand.NewPCG(1, 2)), n*4, 1)
			s := Settings{
				Forward: tc.fwd, Adjoint: solver.Anderson{}, Backward: tc.mode, CertifyFloat64: tc.certify,
				ForwardSettings: solver.Settings{Tol: 1e-12, MaxIter: 500},
				AdjointSettings: solver.Settings{Tol: 1e-12, MaxIter: 500},
			}
			if tc.prec == layers.Float32 {
				s.AdjointSettings.Tol = 1e-5 // relative, above float32 rounding
			}
			one, oneSt, oneDx, oneGrads := splitPass(t, cell, s, x)
			s.Split = tc.split
			sol, st, dx, grads := splitPass(t, cell, s, x)

			parts := min(tc.split, n)
			require.Len(t, sol.Parts, parts)
			require.Nil(t, one.Parts)
			require.Equal(t, n, sol.Examples)
			require.Equal(t, solver.Success, sol.Result.Status)
			requireClose(t, one.Z, sol.Z, tc.tol, "Z")
			requireClose(t, oneDx, dx, tc.tol, "dx")
			for i := range grads {
				requireClose(t, oneGrads[i], grads[i], tc.tol, cell.Params()[i].Name())
			}

			// The merged certificate covers every example and bounds the
			// whole batch's residual by the largest part's bound.
			c := sol.Result.Certificate
			require.NotNil(t, c)
			require.True(t, c.Rule.Exact())
			require.Len(t, c.PerExample, n)
			var largest float64
			iters := 0
			for _, p := range sol.Parts {
				largest = max(largest, p.Certificate.Bound)
				iters = max(iters, p.Stats.Iterations)
			}
			require.Equal(t, largest, c.Bound)
			require.Equal(t, slices.Max(c.PerExample), c.Bound)
			require.LessOrEqual(t, c.Bound, 1e-12)
			require.Equal(t, iters, sol.Result.Stats.Iterations)
			require.Equal(t, oneSt.VJPs, st.VJPs, "the parts' VJPs count as the whole batch's")
			require.Equal(t, oneSt.TermEvals > 0, st.TermEvals > 0)
			if tc.certify {
				require.NotNil(t, sol.Float32, "the float32 stage's merged result")
			}
			if tc.mode == Implicit {
				require.Len(t, st.AdjointParts, parts)
				require.Equal(t, solver.Success, st.Adjoint.Status)
				require.Len(t, st.Adjoint.X, len(sol.Z))
			} else {
				require.Nil(t, st.AdjointParts)
			}
		})
	}
}

// TestSplitResidualOfTheWholeBatch checks the merged certificate against
// the whole batch's map: the residual of the merged point, computed by
// one evaluation of the cell on the whole batch, is within the merged
// bound, for a loose tolerance where the parts stop at different
// iterations, with dropout.
func TestSplitResidualOfTheWholeBatch(t *testing.T) {
	const n = 9
	cell := must(layers.NewDense(layers.DenseConfig{Hidden: 5, Input: 3, Activation: layers.ReLU, Lipschitz: layers.Constraint{Gamma: 0.5}, Seed: 8}))
	x := randVec(rand.New(rand.NewPCG(3, 4)), n*3, 2)
	l := must(New(cell, &Settings{Forward: solver.Anderson{}, ForwardSettings: solver.Settings{Tol: 1e-4, Seed: 11}, Split: 2, Dropout: 0.2}))
	sol, err := l.Forward(context.Background(), x)
	require.NoError(t, err)
	require.True(t, sol.Dropout)
	require.Len(t, sol.mask, len(sol.Z))

	ev := must(cell.Evaluator(n))
	require.NoError(t, ev.SetInput(x))
	f := make([]float64, len(sol.Z))
	require.NoError(t, ev.EvalExact(f, sol.Z))
	sol.mask.apply(f)
	for i := range f {
		f[i] -= sol.Z[i]
	}
	norm := must(solver.NewBatched(must(solver.NewLP(2, 5)), n))
	r := norm.Norm(f)
	require.LessOrEqual(t, r, sol.Result.Certificate.Bound*(1+1e-9)+1e-15)
	require.LessOrEqual(t, sol.Result.Certificate.Bound, 1e-4)
	require.Equal(t, solver.Success, sol.Result.Status)
}

// TestSplitRefused checks the settings New refuses with Split.
func TestSplitRefused(t *testing.T) {
	dense := must(layers.NewDense(layers.DenseConfig{Hidden: 3, Input: 2, Seed: 1}))
	mf := must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: 3, Input: 2, Units: 4, Seed: 1}))
	for _, tc := range []struct {
		name string
		cell layers.Cell
		s    Settings
		msg  string
	}{
		{"negative", dense, Settings{Split: -1}, "Settings.Split = -1 must not be negative"},
		{"not a forker", mf, Settings{Split: 2}, "cannot be forked"},
		{"correction states", dense, Settings{Split: 2, CorrectionStates: 3}, "Settings.Split = 2: CorrectionStates = 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cell, &tc.s)
			require.ErrorContains(t, err, tc.msg)
		})
	}
	for _, split := range []int{0, 1} {
		l := must(New(mf, &Settings{Split: split}))
		sol, err := l.Forward(context.Background(), make([]float64, 2*2))
		require.NoError(t, err)
		require.Nil(t, sol.Parts, "Split = %d is one solve", split)
	}
}

// TestSplitPartFailure checks that a part stopped short of its tolerance
// makes the batch's status its own, while the other parts succeed.
func TestSplitPartFailure(t *testing.T) {
	const n = 4
	cell := must(layers.NewDense(layers.DenseConfig{Hidden: 4, Input: 2, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.9}, Seed: 2}))
	x := make([]float64, n*2)
	x[6], x[7] = 5, -5 // only the last example moves: the first part starts at its fixed point
	l := must(New(cell, &Settings{Forward: solver.Picard{}, ForwardSettings: solver.Settings{Tol: 1e-12, MaxIter: 3}, Split: 2}))
	sol, err := l.Forward(context.Background(), x)
	require.NoError(t, err)
	require.Equal(t, solver.Success, sol.Parts[0].Status)
	require.Equal(t, solver.IterationLimit, sol.Parts[1].Status)
	require.Equal(t, solver.IterationLimit, sol.Result.Status)
	require.Greater(t, sol.Result.Certificate.Bound, 1e-12)
}

// TestSplitFloat32Teams runs a split batch of the float32 dense cell at a
// size where each part's evaluator splits its rows between goroutines too
// (run it with -race), and checks its fixed point against one solve's:
// both are certified within tol in the batched ℓ2 norm of a γ̄-contraction,
// so each example's points lie within tol/(1 − γ̄) of the fixed point of
// the float64 map.
func TestSplitFloat32Teams(t *testing.T) {
	const n, h, tol, gamma = 128, 128, 1e-3, 0.9
	cell := must(layers.NewDense(layers.DenseConfig{Hidden: h, Input: 8, Lipschitz: layers.Constraint{Gamma: gamma}, Precision: layers.Float32, Seed: 4}))
	x := randVec(rand.New(rand.NewPCG(5, 6)), n*8, 1)
	s := Settings{Forward: solver.Broyden{}, Adjoint: solver.Broyden{}, CertifyFloat64: true,
		ForwardSettings: solver.Settings{Tol: tol, MaxIter: 60}, AdjointSettings: solver.Settings{Tol: 1e-3, MaxIter: 60}}
	one, _, oneDx, _ := splitPass(t, cell, s, x)
	s.Split = 2
	sol, st, dx, _ := splitPass(t, cell, s, x)
	require.Equal(t, solver.Success, sol.Result.Status)
	require.LessOrEqual(t, sol.Result.Certificate.Bound, tol)
	require.Len(t, st.AdjointParts, 2)
	norm := must(solver.NewBatched(must(solver.NewLP(2, h)), n))
	diff := slices.Clone(sol.Z)
	for i := range diff {
		diff[i] -= one.Z[i]
	}
	require.LessOrEqual(t, norm.Norm(diff), 2*tol/(1-gamma))
	require.Len(t, dx, len(oneDx))
}
