package solver

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// noisy is an oracle for the validation tests that returns x/2 but declares
// the bounded-variance model, so that deterministic methods must refuse it.
type noisy struct{ n int }

func (o noisy) Len() int { return o.n }
func (o noisy) Eval(dst, x []float64, s Sample) (int, error) {
	for i, v := range x {
		dst[i] = v / 2
	}
	return s.Size, nil
}
func (noisy) Model() Model { return BoundedVariance }

func TestSettingsValidation(t *testing.T) {
	half := Func{N: 2, F: func(dst, x []float64) { dst[0], dst[1] = x[0]/2, x[1]/2 }}
	l2, err := NewLP(2, 2)
	require.NoError(t, err)
	p := Problem{Oracle: half, Norm: l2}
	x0 := []float64{1, 1}
	for _, c := range []struct {
		s     Settings
		field string
	}{
		{Settings{Tol: -1}, "Settings.Tol"},
		{Settings{Tol: math.NaN()}, "Settings.Tol"},
		{Settings{Tol: math.Inf(1)}, "Settings.Tol"},
		{Settings{MaxIter: -1}, "Settings.MaxIter"},
		{Settings{MaxSamples: -5}, "Settings.MaxSamples"},
		{Settings{MaxTime: -time.Second}, "Settings.MaxTime"},
		{Settings{Workers: -1}, "Settings.Workers"},
		{Settings{DivergenceFactor: 0.5}, "Settings.DivergenceFactor"},
		{Settings{DivergenceFactor: 1}, "Settings.DivergenceFactor"},
		{Settings{DivergenceFactor: math.NaN()}, "Settings.DivergenceFactor"},
		{Settings{Certify: CertifySettings{Delta: -0.1}}, "Settings.Certify.Delta"},
		{Settings{Certify: CertifySettings{Delta: 1}}, "Settings.Certify.Delta"},
		{Settings{Certify: CertifySettings{Delta: 1.5}}, "Settings.Certify.Delta"},
		{Settings{Certify: CertifySettings{Delta: math.NaN()}}, "Settings.Certify.Delta"},
		{Settings{Certify: CertifySettings{Samples: -1}}, "Settings.Certify.Samples"},
		{Settings{Certify: CertifySettings{Calls: -1}}, "Settings.Certify.Calls"},
	} {
		_, err := Solve(context.Background(), p, x0, &c.s, Picard{})
		require.Error(t, err, c.field)
		require.Contains(t, err.Error(), c.field)
	}

	l3, _ := NewLP(2, 3)
	for _, c := range []struct {
		p   Problem
		x0  []float64
		m   Method
		msg string
	}{
		{p, []float64{1, 2, 3}, Picard{}, "x0 has length 3"},
		{Problem{Oracle: half, Norm: l3}, []float64{1, 2, 3}, Picard{}, "Problem.Oracle.Len() = 2 does not match Problem.Norm.Len() = 3"},
		{Problem{Norm: l2}, x0, Picard{}, "Problem.Oracle is nil"},
		{Problem{Oracle: half}, x0, Picard{}, "Problem.Norm is nil"},
		{p, x0, nil, "nil method"},
		{p, []float64{1, math.NaN()}, Picard{}, "x0[1] = NaN"},
		{p, []float64{math.Inf(-1), 0}, Picard{}, "x0[0] = -Inf"},
	} {
		_, err := Solve(context.Background(), c.p, c.x0, nil, c.m)
		require.ErrorContains(t, err, c.msg)
	}

	// Method parameters.
	for _, c := range []struct {
		m     Method
		field string
	}{
		{KrasnoselskiiMann{Alpha: -0.5}, "KrasnoselskiiMann.Alpha = -0.5 outside (0, 1]"},
		{KrasnoselskiiMann{Alpha: 1.5}, "KrasnoselskiiMann.Alpha"},
		{KrasnoselskiiMann{Alpha: math.NaN()}, "KrasnoselskiiMann.Alpha"},
		{GHAL{Gamma: 1.5}, "GHAL.Gamma = 1.5 outside (0, 1]"},
		{GHAL{Gamma: -0.1}, "GHAL.Gamma"},
		{GHAL{Beta: 1}, "GHAL.Beta = 1 outside (0, 1)"},
		{GHAL{Beta: -0.5}, "GHAL.Beta"},
		{GHAL{Beta: math.NaN()}, "GHAL.Beta"},
		{GHAL{Lambda0: -1}, "GHAL.Lambda0"},
		{GHAL{Lambda0: math.Inf(1)}, "GHAL.Lambda0"},
		{Anderson{Memory: -1}, "Anderson.Memory = -1"},
		{Anderson{Ridge: -1e-4}, "Anderson.Ridge"},
		{Anderson{Ridge: math.NaN()}, "Anderson.Ridge"},
		{Anderson{Mixing: 1.5}, "Anderson.Mixing"},
		{Anderson{Mixing: -1}, "Anderson.Mixing"},
		{Broyden{Memory: -3}, "Broyden.Memory = -3"},
		{Broyden{Protect: 0.5}, "Broyden.Protect"},
		{Broyden{Protect: math.NaN()}, "Broyden.Protect"},
		{Broyden{Patience: -1}, "Broyden.Patience"},
	} {
		_, err := Solve(context.Background(), p, x0, nil, c.m)
		require.ErrorContains(t, err, c.field, "%T", c.m)
	}

	// Deterministic methods refuse stochastic oracles, naming themselves.
	np := Problem{Oracle: noisy{2}, Norm: l2}
	names := map[string]string{"picard": "Picard", "km": "KrasnoselskiiMann", "halpern": "Halpern", "ghal": "GHAL", "anderson": "Anderson", "broyden": "Broyden"}
	for _, dm := range detMethods {
		_, err := Solve(context.Background(), np, x0, nil, dm.make(1))
		require.ErrorContains(t, err, "solver: "+names[dm.name]+" needs a deterministic oracle", dm.name)
		require.ErrorContains(t, err, "bounded-variance", dm.name)
	}
}

// TestDefaults checks that the zero values of the method structs select the
// documented defaults (same trace as the explicit values) and that a nil
// *Settings is the zero Settings.
func TestDefaults(t *testing.T) {
	p := newAffineL2(t, 61, 6, 0.9)
	prob := Problem{Oracle: p.oracle(), Norm: p.norm}
	x0 := make([]float64, 6)
	pairs := [][2]Method{
		{KrasnoselskiiMann{}, KrasnoselskiiMann{Alpha: 0.5}},
		{GHAL{}, GHAL{Beta: 0.5, Gamma: 1, Lambda0: 1}},
		{Anderson{}, Anderson{Memory: 5, Ridge: 1e-4, Mixing: 1}},
		{Broyden{}, Broyden{Memory: 30, Protect: 1e3, Patience: 50}},
	}
	for _, pr := range pairs {
		a, err := Solve(context.Background(), prob, x0, nil, pr[0])
		require.NoError(t, err)
		b, err := Solve(context.Background(), prob, x0, &Settings{}, pr[1])
		require.NoError(t, err)
		require.Equal(t, a.X, b.X, pr[0].String())
		require.Equal(t, a.Stats.Iterations, b.Stats.Iterations)
		require.Equal(t, Success, a.Status)
		require.LessOrEqual(t, a.Residual, DefaultTol)
	}
	for _, dm := range detMethods {
		require.NotEmpty(t, dm.make(1).String())
	}
}
