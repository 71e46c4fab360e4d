package solver_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// relGoroutines is the number of concurrent solves.
const relGoroutines = 8

// relConcurrentConfig is the problem of goroutine g: a matrix problem in the
// Schatten-4 norm, whose norm holds LAPACK scratch space, so that a norm
// shared by mistake would show up as a data race or as wrong residuals.
func relConcurrentConfig(g int) problems.Config {
	norm, err := solver.NewSchatten(4, 4, 4)
	if err != nil {
		panic(err)
	}
	return problems.Config{Name: "matrix", Dim: 4, Norm: norm, Gamma: 0.8, Noise: 0.3, Seed: uint64(100 + g)}
}

// TestConcurrentSolves runs, for every method, 8 goroutines that each build
// their own problem and solve it with one shared Method value and one shared
// *Settings, and checks that every result, certificate included, is bit for
// bit the result of the same solve run alone. Run it with -race to check
// that a Method value holds only settings and that Solve writes nothing it
// shares.
func TestConcurrentSolves(t *testing.T) {
	p0 := relNew(t, relConcurrentConfig(0))
	for _, m := range relMethods(p0.Gamma, p0.Sigma) {
		t.Run(m.name, func(t *testing.T) {
			s := relSettings(m, 11)
			serial := make([]*solver.Result, relGoroutines)
			for g := range serial {
				p := relNew(t, relConcurrentConfig(g))
				res, err := solver.Solve(context.Background(), m.problem(p), p.X0, s, m.method)
				require.NoError(t, err)
				serial[g] = res
			}
			concurrent := make([]*solver.Result, relGoroutines)
			errs := make([]error, relGoroutines)
			var wg sync.WaitGroup
			for g := range concurrent {
				wg.Go(func() {
					p, err := problems.New(relConcurrentConfig(g))
					if err != nil {
						errs[g] = err
						return
					}
					concurrent[g], errs[g] = solver.Solve(context.Background(), m.problem(p), p.X0, s, m.method)
				})
			}
			wg.Wait()
			require.Equal(t, relSettings(m, 11), s, "Solve leaves the shared Settings alone")
			for g := range concurrent {
				require.NoError(t, errs[g])
				relRequireSame(t, serial[g], concurrent[g], m.name)
			}
			// The goroutines solved different problems, so agreement is not
			// the trivial agreement of identical inputs.
			require.NotEqual(t, serial[0].X, serial[1].X)
		})
	}
}
