package solver_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// passMethod runs the Env's exported passes once on vectors long enough
// to be split between workers and keeps their results.
type passMethod struct{ copied, diff, axpy []float64 }

func (*passMethod) String() string { return "passes" }

func (m *passMethod) Run(e *solver.Env) error {
	n := e.Len()
	a, b := e.Buffer(n), e.Buffer(n)
	for i := range a {
		a[i], b[i] = float64(i), math.Sin(float64(i))
	}
	c := e.Buffer(n)
	e.Copy(c, a)
	m.copied = append([]float64(nil), c...)
	e.Sub(c, a, b)
	m.diff = append([]float64(nil), c...)
	e.AddScaled(c, 0.5, b)
	m.axpy = append([]float64(nil), c...)
	return e.Record(e.X0(), 0)
}

func TestEnvPassesWorkers(t *testing.T) {
	const n = 3*4096 + 17
	for _, workers := range []int{1, 2, 3} {
		norm, err := solver.NewLP(2, n)
		require.NoError(t, err)
		m := new(passMethod)
		f := solver.Func{N: n, F: func(dst, x []float64) { copy(dst, x) }}
		_, err = solver.Solve(context.Background(), solver.Problem{Oracle: f, Norm: norm},
			make([]float64, n), &solver.Settings{Workers: workers, Tol: 1}, m)
		require.NoError(t, err)
		for i := range n {
			a, b := float64(i), math.Sin(float64(i))
			require.Equal(t, a, m.copied[i], "workers %d copy %d", workers, i)
			require.InDelta(t, a-b, m.diff[i], 1e-12, "workers %d sub %d", workers, i)
			require.InDelta(t, a-b+0.5*b, m.axpy[i], 1e-12, "workers %d axpy %d", workers, i)
		}
	}
}

func TestEnvBufferNegativePanics(t *testing.T) {
	f := solver.Func{N: 1, F: func(dst, x []float64) { copy(dst, x) }}
	norm, err := solver.NewLP(2, 1)
	require.NoError(t, err)
	m := methodFunc(func(e *solver.Env) error { e.Buffer(-1); return nil })
	require.Panics(t, func() {
		_, _ = solver.Solve(context.Background(), solver.Problem{Oracle: f, Norm: norm}, []float64{0}, nil, m)
	})
}

type methodFunc func(e *solver.Env) error

func (methodFunc) String() string            { return "func" }
func (f methodFunc) Run(e *solver.Env) error { return f(e) }
