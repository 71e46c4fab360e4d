package deq

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// iterates is a PointRecorder keeping a copy of every recorded iterate.
type iterates struct{ xs [][]float64 }

func (r *iterates) Record(solver.TracePoint) error { panic("Record called on a PointRecorder") }

func (r *iterates) RecordPoint(p solver.TracePoint, x []float64) error {
	if p.Iter != len(r.xs) {
		panic("iterations out of order")
	}
	r.xs = append(r.xs, slices.Clone(x))
	return nil
}

func TestCorrectionStatesAreSolverIterates(t *testing.T) {
	// Every method that records its iterates gives K states (fewer only on
	// short solves): each one bit for bit the iterate the solver recorded at
	// its Iter, about evenly spaced (within the kept stride, at most
	// T/(K − 1), of k·T/K), the last being the returned z*. The caller's
	// own Recorder still sees every point.
	dense := must(layers.NewDense(layers.DenseConfig{Hidden: 4, Input: 3, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.9}, Seed: 5}))
	meanField := manyTermCells("l2", 1)["meanfield"]
	cases := []struct {
		name string
		cell layers.Cell
		m    solver.Method
		tol  float64
		mode OracleMode
	}{
		{"picard", dense, solver.Picard{}, 1e-12, Auto},
		{"km", dense, solver.KrasnoselskiiMann{}, 1e-12, Auto},
		{"halpern", dense, solver.Halpern{}, 1e-4, Auto},
		{"ghal", dense, solver.GHAL{Gamma: 0.9}, 1e-10, Auto},
		{"anderson", dense, solver.Anderson{}, 1e-12, Auto},
		{"broyden", dense, solver.Broyden{}, 1e-12, Auto},
		{"vrghal", meanField, solver.VRGHAL{Gamma: meanField.Gamma()}, 5e-3, Sampled},
	}
	for _, c := range cases {
		for _, K := range []int{1, 2, 5} {
			t.Run(c.name, func(t *testing.T) {
				rec := &iterates{}
				s := Settings{
					Forward:          c.m,
					ForwardOracle:    c.mode,
					ForwardSettings:  solver.Settings{Tol: c.tol, MaxIter: 100000, Seed: 1, Recorder: rec},
					CorrectionStates: K,
				}
				l := must(New(c.cell, &s))
				x := randVec(rand.New(rand.NewPCG(2, 2)), 2*c.cell.Shape().InputLen(), 1)
				sol := must(l.Forward(context.Background(), x))
				require.Equal(t, solver.Success, sol.Result.Status)
				T := sol.Result.Stats.Iterations
				require.Len(t, rec.xs, T+1, "the caller's recorder sees every point")
				st := sol.States
				require.NotEmpty(t, st)
				require.LessOrEqual(t, len(st), K)
				if T >= 4*K {
					require.Len(t, st, K, "T = %d", T)
				}
				last := st[len(st)-1]
				require.Equal(t, sol.Z, last.Z)
				require.Equal(t, rec.xs[last.Iter], sol.Z, "the last state is the iterate the solver returned")
				for k, s := range st[:len(st)-1] {
					require.Equal(t, rec.xs[s.Iter], s.Z, "state %d (iteration %d)", k, s.Iter)
					require.Less(t, s.Iter, st[k+1].Iter)
					if len(st) == K {
						target := float64(k+1) * float64(T) / float64(K)
						require.LessOrEqual(t, math.Abs(float64(s.Iter)-target), float64(T)/float64(K-1), "state %d of %d iterations", k, T)
					}
				}
			})
		}
	}
}

// silent is a method that evaluates the oracle without recording.
type silent struct{}

func (silent) String() string { return "silent" }

func (silent) Run(e *solver.Env) error {
	return e.Eval(make([]float64, e.Len()), e.X0(), solver.Sample{Size: 1})
}

func TestCorrectionRefusesMethodsWithoutIterates(t *testing.T) {
	c := must(layers.NewDense(layers.DenseConfig{Hidden: 3, Input: 2, Seed: 1}))
	l := must(New(c, &Settings{Forward: silent{}, CorrectionStates: 3}))
	_, err := l.Forward(context.Background(), make([]float64, 2))
	require.ErrorContains(t, err, "CorrectionStates")
	_, err = New(c, &Settings{CorrectionStates: -1})
	require.ErrorContains(t, err, "CorrectionStates")
	// Without collection the helpers refuse, naming the field.
	l = must(New(c, nil))
	sol := must(l.Forward(context.Background(), make([]float64, 2)))
	require.Nil(t, sol.States)
	_, err = l.CorrectionForward(sol)
	require.ErrorContains(t, err, "CorrectionStates")
}

func TestCorrectionBackwardMatchesFiniteDifferences(t *testing.T) {
	// The gradient of Σ_k ⟨g_k, f(sg(z_k), x)⟩ in θ and x, the states held
	// fixed, for every cell kind.
	for _, tc := range gradCells() {
		t.Run(tc.name, func(t *testing.T) {
			s := tight
			s.ForwardSettings.Tol = 1e-8
			s.CorrectionStates = 3
			l := must(New(tc.cell, &s))
			rng := rand.New(rand.NewPCG(4, 4))
			x := randVec(rng, tc.n*tc.cell.Shape().InputLen(), 1)
			sol := must(l.Forward(context.Background(), x))
			require.Len(t, sol.States, 3)
			gs := make([][]float64, len(sol.States))
			for k := range gs {
				gs[k] = randVec(rng, len(sol.Z), 1)
			}
			ps := l.Params()
			layers.ZeroGrads(ps)
			dx := make([]float64, len(x))
			st, err := l.CorrectionBackward(sol, gs, dx)
			require.NoError(t, err)
			require.Equal(t, 3, st.VJPs)
			ev := must(tc.cell.Evaluator(sol.Examples))
			require.Equal(t, int64(3*ev.Terms()), st.TermEvals, "one full VJP, Terms() term evaluations, per state")
			got := paramGrads(ps)
			value := func() float64 {
				fs, err := l.CorrectionForward(sol)
				require.NoError(t, err)
				v := 0.0
				for k, f := range fs {
					v += floats.Dot(gs[k], f)
				}
				return v
			}
			requireClose(t, fdParams(value, ps), got, 1e-7, "dθ")
			requireClose(t, fdOf(value, sol.X), dx, 1e-7, "dx")
			_, err = l.CorrectionBackward(sol, gs[:1], nil)
			require.ErrorContains(t, err, "cotangents")
		})
	}
}
