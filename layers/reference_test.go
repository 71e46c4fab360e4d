package layers

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestReferenceEvaluator: for every precision case, a Float32 cell's
// ReferenceEvaluator evaluates and differentiates the map of the Float64
// cell with the same parameters (to float64 reassociation, ≤ 1e-12
// relative to the magnitudes), after a parameter change too, and a Float64
// cell's ReferenceEvaluator is its Evaluator.
func TestReferenceEvaluator(t *testing.T) {
	for _, tc := range precCases() {
		t.Run(tc.name, func(t *testing.T) {
			p := newPrecPair(t, tc, Tanh, 7)
			nx := len(p.x)
			for step := range 2 {
				if step == 1 {
					for i, q := range p.c64.Params() {
						for j := range q.Data() {
							q.Data()[j] *= 0.9
							p.c32.Params()[i].Data()[j] *= 0.9
						}
					}
				}
				ref, err := p.c32.(Referenced).ReferenceEvaluator(tc.n)
				require.NoError(t, err)
				require.NoError(t, ref.SetInput(p.x))
				require.NoError(t, p.e64.SetInput(p.x))
				want := vjps(t, p.c64, p.e64, p.z, p.g, nx)
				got := vjps(t, p.c32, ref, p.z, p.g, nx)
				mag := vjps(t, p.abs, p.ea, abs(p.z), abs(p.g), nx)
				for name, w := range want {
					for i := range w {
						if d := math.Abs(got[name][i] - w[i]); d > 1e-12*(1+mag[name][i]) {
							t.Fatalf("step %d: %s[%d] = %v, the Float64 cell's %v", step, name, i, got[name][i], w[i])
						}
					}
				}
			}
			same, err := p.c64.(Referenced).ReferenceEvaluator(tc.n)
			require.NoError(t, err)
			require.Same(t, p.e64, same, "a Float64 cell's reference evaluator is its evaluator")
			_, err = p.c32.(Referenced).ReferenceEvaluator(0)
			require.Error(t, err)
		})
	}
}

// TestReferenceProven: under Float32 a cell proves nothing for its own
// map and what its Float64 twin proves for the reference map.
func TestReferenceProven(t *testing.T) {
	for _, tc := range precCases() {
		p := newPrecPair(t, tc, ReLU, 1)
		n := p.c64.Shape().HiddenLen()
		l2, _ := solver.NewLP(2, n)
		linf, _ := solver.NewLInf(n)
		require.True(t, p.c32.(Referenced).ReferenceProven(l2), "%s: the float64 map is proven in l2", tc.name)
		for _, norm := range []solver.Norm{l2, linf} {
			if p.c32.Proven(norm) {
				t.Errorf("%s %v: a Float32 cell claims a proven bound", tc.name, norm)
			}
			if got, want := p.c32.(Referenced).ReferenceProven(norm), p.c64.Proven(norm); got != want {
				t.Errorf("%s %v: ReferenceProven = %v, the Float64 cell's Proven %v", tc.name, norm, got, want)
			}
		}
	}
	g, err := NewConv(ConvConfig{Channels: 4, Height: 3, Width: 3, Groups: 2, Precision: Float32})
	require.NoError(t, err)
	l2, _ := solver.NewLP(2, g.Shape().HiddenLen())
	require.False(t, g.ReferenceProven(l2), "GroupNorm proves no bound in float64 either")
}
