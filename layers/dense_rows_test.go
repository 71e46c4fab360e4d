package layers

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestDenseSplitRowsMatchesOneCall checks that a Float32 Dense evaluator
// whose products are split between goroutines gives the values of the same
// evaluator computing them in one call, for Eval, VJPHidden and VJP, on a
// batch large enough to split.
func TestDenseSplitRowsMatchesOneCall(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		prev := runtime.GOMAXPROCS(2)
		t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	}
	const n, h, in = 70, 128, 24 // 70·128² ≥ denseSplitMin; 70 rows split unevenly on 3 cores
	c := mustCell(NewDense(DenseConfig{Hidden: h, Input: in, Precision: Float32, Seed: 3}))
	ev, err := c.Evaluator(n)
	require.NoError(t, err)
	split := ev.(*denseEval)
	require.NotNil(t, split.f32.team, "a batch of %d×%d² multiply–adds splits", n, h)
	ev, err = c.Evaluator(n)
	require.NoError(t, err)
	whole := ev.(*denseEval)
	whole.f32.team = nil

	rng := rand.New(rand.NewPCG(5, 6))
	x := randVec(rng, n*in, 1)
	z := randVec(rng, n*h, 1)
	g := randVec(rng, n*h, 1)
	for _, e := range []*denseEval{split, whole} {
		require.NoError(t, e.SetInput(x))
	}
	run := func(e *denseEval, op string) []float64 {
		dst := make([]float64, n*h)
		var err error
		switch op {
		case "eval":
			_, err = e.Eval(dst, z, solver.Sample{})
		case "vjp-hidden":
			_, err = e.VJPHidden(dst, z, g, solver.Sample{})
		case "vjp":
			err = e.VJP(dst, nil, z, g)
		}
		require.NoError(t, err, op)
		return dst
	}
	for _, op := range []string{"eval", "vjp-hidden", "vjp"} {
		got, want := run(split, op), run(whole, op)
		// Each row's products are the same float32 products in either
		// case; a BLAS may still round a product of fewer rows in
		// another order, so allow float32 rounding of the values' scale.
		require.InDeltaSlice(t, want, got, 1e-5, op)
	}
}

// TestDenseTeamStopsWithEvaluator checks that the goroutines splitting a
// Float32 Dense evaluator's rows keep no reference to it, so that it is
// collected once unreachable, and that they stop then.
func TestDenseTeamStopsWithEvaluator(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		prev := runtime.GOMAXPROCS(2)
		t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	}
	c := mustCell(NewDense(DenseConfig{Hidden: 128, Input: 8, Precision: Float32, Seed: 1}))
	before := runtime.NumGoroutine()
	ref := func() weak.Pointer[denseEval] {
		ev, err := c.Evaluator(128)
		require.NoError(t, err)
		e := ev.(*denseEval)
		require.NotNil(t, e.f32.team)
		require.NoError(t, e.SetInput(make([]float64, 128*8)))
		z := make([]float64, e.Len())
		_, err = e.Eval(z, z, solver.Sample{})
		require.NoError(t, err)
		_, err = e.VJPHidden(z, z, z, solver.Sample{})
		require.NoError(t, err)
		return weak.Make(e)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for ref.Value() != nil && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.Nil(t, ref.Value(), "the evaluator is collected once unreachable")
	// Its cleanup closes the team; the helpers then exit.
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before)
}
