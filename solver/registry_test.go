package solver

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRegistryConsistent checks that every entry's name is its method's
// String(), that names are unique, that deterministic entries need a
// deterministic oracle and stochastic ones an oracle model, and that
// LookupMethod finds every entry.
func TestRegistryConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Methods() {
		require.False(t, seen[m.Name], "duplicate %s", m.Name)
		seen[m.Name] = true
		require.NotEmpty(t, m.Summary, m.Name)
		require.Equal(t, m.Name, m.New(MethodOptions{}).String(), "registry name and method name agree")
		require.Equal(t, m.Name, m.New(MethodOptions{Gamma: 0.5, Delta: 0.1, SampleScale: 2, Sigma2: 3, Memory: 4}).String())
		if m.Stochastic {
			require.True(t, m.Needs.isOracleModel() && m.Needs != Deterministic, m.Name)
		} else {
			require.Equal(t, Deterministic, m.Needs, m.Name)
			require.False(t, m.Baseline, m.Name)
		}
		got, err := LookupMethod(m.Name)
		require.NoError(t, err)
		require.Equal(t, m.Name, got.Name)
	}
	require.Equal(t, len(Methods()), len(MethodNames()))
}

// TestRegistryOptions checks that the entries pass their options on.
func TestRegistryOptions(t *testing.T) {
	o := MethodOptions{Gamma: 0.5, Delta: 0.1, SampleScale: 2, Sigma2: 3, Memory: 4}
	want := map[string]Method{
		"ghal":               GHAL{Gamma: 0.5},
		"anderson":           Anderson{Memory: 4},
		"broyden":            Broyden{Memory: 4},
		"vrghal":             VRGHAL{Gamma: 0.5, Delta: 0.1, SampleScale: 2},
		"stochastic-halpern": StochasticHalpern{C: 3},
		"page-halpern":       PAGEHalpern{C1: 3, C2: 0.25},
	}
	for name, w := range want {
		m, err := LookupMethod(name)
		require.NoError(t, err)
		require.Equal(t, w, m.New(o), name)
	}
}

// TestRegistryTol checks the one place of the rule that VR-GHAL stops at
// half the residual target, and that the other methods stop at the target.
func TestRegistryTol(t *testing.T) {
	for _, m := range Methods() {
		want := 0.01
		if m.Name == "vrghal" {
			want = 0.005
		}
		require.Equal(t, want, m.Tol(0.01), m.Name)
	}
}

func TestLookupMethodUnknown(t *testing.T) {
	_, err := LookupMethod("newton")
	require.True(t, errors.Is(err, ErrUnknownMethod))
	require.ErrorContains(t, err, `"newton"`)
	require.ErrorContains(t, err, "picard, km, halpern, ghal, anderson, broyden, vrghal, minibatch-km, stochastic-halpern, page-halpern")
}
