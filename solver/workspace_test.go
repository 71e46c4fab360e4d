package solver

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkspaceReuse: a solve of Anderson or Broyden through a Workspace
// that an earlier solve of the same size has grown allocates no vectors
// besides its Result.X (a few small objects remain: the Env, the Result,
// Broyden's slot table), and returns the same point as a solve without one.
func TestWorkspaceReuse(t *testing.T) {
	const n, iters = 1024, 40
	norm, err := NewLP(2, n)
	require.NoError(t, err)
	p := Problem{Oracle: chain(n, 0.99, 81), Norm: norm}
	x0 := make([]float64, n)
	for _, m := range historyMethods(8) {
		s := &Settings{Tol: 1e-300, MaxIter: iters, DivergenceFactor: math.Inf(1), NoTrace: true}
		fresh, err := Solve(context.Background(), p, x0, s, m)
		require.NoError(t, err)
		s.Workspace = new(Workspace)
		_, err = Solve(context.Background(), p, x0, s, m)
		require.NoError(t, err)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := Solve(context.Background(), p, x0, s, m)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		bytes := after.TotalAlloc - before.TotalAlloc
		t.Logf("%T: %d bytes in a solve through a grown workspace", m, bytes)
		// Result.X, and the certificate's evaluation when the returned
		// point is not the last one evaluated: two vectors of n floats;
		// 4 KiB for the small objects.
		require.Less(t, bytes, uint64(2*n*8+4096), "%T allocates vectors", m)
		require.Equal(t, fresh.Stats.Iterations, res.Stats.Iterations, "%T", m)
		require.InDeltaSlice(t, fresh.X, res.X, 1e-12, "%T", m)
	}
}

// benchWorkspace is benchMethod with every solve through one Workspace:
// allocs/op and B/op count what a solve allocates once its workspace has
// grown.
func benchWorkspace(b *testing.B, m Method) {
	const n, iters = 4096, 100
	norm, err := NewLP(2, n)
	require.NoError(b, err)
	p := Problem{Oracle: chain(n, 0.99, 81), Norm: norm}
	s := &Settings{Tol: 1e-300, MaxIter: iters, NoTrace: true, Certify: CertifySettings{Skip: true}, Workspace: new(Workspace)}
	x0 := make([]float64, n)
	b.ReportAllocs()
	total := 0
	for range b.N {
		res, err := Solve(context.Background(), p, x0, s, m)
		require.NoError(b, err)
		total += res.Stats.Iterations
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/iter")
}

func BenchmarkAndersonAffine4096Workspace(b *testing.B) { benchWorkspace(b, Anderson{}) }
func BenchmarkBroydenAffine4096Workspace(b *testing.B)  { benchWorkspace(b, Broyden{}) }
