package deq

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// TestNewChecksContractionConstants: a GHAL, VR-GHAL or growing-batch
// Gamma below the cell's proven bound is refused, naming the field; a zero
// one is filled from cell.Gamma(); one at or above the bound is kept; a
// cell that proves no bound in the norm leaves Gamma as given; dropout and
// a non-ℓ2 adjoint keep a zero Gamma.
func TestNewChecksContractionConstants(t *testing.T) {
	dense := must(layers.NewDense(layers.DenseConfig{Hidden: 4, Input: 3, Activation: layers.Tanh, Lipschitz: layers.Constraint{Gamma: 0.8}, Seed: 5}))
	require.InDelta(t, 0.8, dense.Gamma(), 1e-15)
	g := dense.Gamma()
	for _, tc := range []struct {
		name        string
		s           Settings
		want        string  // error substring; empty: accepted
		fwd, adjGam float64 // the Gamma of the layer's forward and adjoint methods
	}{
		{"vrghal below", Settings{Forward: solver.VRGHAL{Gamma: 0.2}}, "Settings.Forward", 0, 0},
		{"ghal below", Settings{Forward: solver.GHAL{Gamma: 0.5}}, "Settings.Forward", 0, 0},
		{"ghal pointer below", Settings{Forward: &solver.GHAL{Gamma: 0.5}}, "Settings.Forward", 0, 0},
		{"growing below", Settings{Forward: solver.GrowingBatch{Gamma: 0.1}}, "Settings.Forward", 0, 0},
		{"adjoint below", Settings{Adjoint: solver.GHAL{Gamma: 0.3}}, "Settings.Adjoint", 0, 0},
		{"vrghal zero", Settings{Forward: solver.VRGHAL{}, Adjoint: solver.VRGHAL{}}, "", g, g},
		{"ghal zero", Settings{Forward: solver.GHAL{}, Adjoint: solver.GHAL{}}, "", g, g},
		{"growing zero", Settings{Forward: solver.GrowingBatch{}}, "", g, 0},
		{"ghal above", Settings{Forward: solver.GHAL{Gamma: 0.9}, Adjoint: solver.GHAL{Gamma: 1}}, "", 0.9, 1},
		// Not Implicit: the adjoint method is unused and not checked.
		{"adjoint unused", Settings{Backward: JacobianFree, Adjoint: solver.GHAL{Gamma: 0.3}}, "", 0, 0.3},
		// The dense ℓ2 constraint proves nothing in ℓ∞: Gamma as given.
		{"unproven", Settings{Norm: must(solver.NewLInf(4)), Forward: solver.GHAL{Gamma: 0.2}}, "", 0.2, 0},
		// Dropout's masked map has a larger bound: zero stays the default 1,
		// a constant below the cell's bound is still refused.
		{"dropout zero", Settings{Dropout: 0.1, Forward: solver.GHAL{}}, "", 0, 0},
		{"dropout below", Settings{Dropout: 0.1, Forward: solver.GHAL{Gamma: 0.5}}, "Settings.Forward", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := tc.s
			l, err := New(dense, &tc.s)
			if tc.want != "" {
				require.ErrorContains(t, err, tc.want)
				require.ErrorContains(t, err, "0.8")
				return
			}
			require.NoError(t, err)
			require.Equal(t, orig, tc.s, "the caller's Settings are not modified")
			s := l.Settings()
			if c, ok := contractionOf(s.Forward); ok {
				require.Equal(t, tc.fwd, c.gamma, "forward")
			}
			if c, ok := contractionOf(s.Adjoint); ok {
				require.Equal(t, tc.adjGam, c.gamma, "adjoint")
			}
		})
	}
	// A pointer is copied, never written.
	p := &solver.VRGHAL{}
	l := must(New(dense, &Settings{Forward: p}))
	require.Zero(t, p.Gamma)
	require.Equal(t, g, l.Settings().Forward.(*solver.VRGHAL).Gamma)
}
