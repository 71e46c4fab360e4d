package deq

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/diff/fd"

	"github.com/deqgo/deq/layers"
)

// The finite-difference helpers that the tests of the training aids (DEQ
// dropout, fixed-point correction) share with Jacobian regularisation.

// fdSettings are the central differences of the training aids' tests.
var fdSettings = &fd.Settings{Formula: fd.Central, Step: 1e-5}

// fdOf returns the central finite-difference gradient of value with
// respect to the entries of v, changed in place and restored.
func fdOf(value func() float64, v []float64) []float64 {
	orig := slices.Clone(v)
	g := make([]float64, len(v))
	fd.Gradient(g, func(p []float64) float64 { copy(v, p); return value() }, slices.Clone(v), fdSettings)
	copy(v, orig)
	return g
}

// fdParams returns the finite-difference gradients of value with respect
// to every parameter, concatenated in ps order.
func fdParams(value func() float64, ps []*layers.Param) []float64 {
	var g []float64
	for _, p := range ps {
		g = append(g, fdOf(value, p.Data())...)
	}
	return g
}

// paramGrads returns the parameter gradients of ps, concatenated, and
// zeroes them.
func paramGrads(ps []*layers.Param) []float64 {
	var g []float64
	for _, p := range ps {
		g = append(g, p.GradData()...)
	}
	layers.ZeroGrads(ps)
	return g
}

// requireClose checks got against want entry by entry, to tol relative to
// max(1, |want|).
func requireClose(t *testing.T, want, got []float64, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i, w := range want {
		require.InDelta(t, w, got[i], tol*max(1, abs(w)), "%s[%d]: want %.10g, got %.10g", what, i, w, got[i])
	}
}

func abs(x float64) float64 { return max(x, -x) }
