package solver

import (
	"encoding/json"
	"errors"
	"fmt"
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
		require.Equal(t, m.Name, m.New(MethodOptions{Gamma: 0.5, Sigma2: 3, MethodSettings: MethodSettings{Delta: 0.1, SampleScale: 2, Memory: 4}}).String())
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
	o := MethodOptions{Gamma: 0.5, Sigma2: 3, MethodSettings: MethodSettings{Delta: 0.1, SampleScale: 2, Memory: 4}}
	want := map[string]Method{
		"ghal":               GHAL{Gamma: 0.5},
		"anderson":           Anderson{Memory: 4},
		"broyden":            Broyden{Memory: 4},
		"vrghal":             VRGHAL{Gamma: 0.5, Delta: 0.1, SampleScale: 2},
		"growing-batch":      GrowingBatch{Gamma: 0.5},
		"stochastic-halpern": StochasticHalpern{C: 3},
		"page-halpern":       PAGEHalpern{C1: 3, C2: 0.25},
	}
	for name, w := range want {
		m, err := LookupMethod(name)
		require.NoError(t, err)
		require.Equal(t, w, m.New(o), name)
	}
}

func TestLookupMethodUnknown(t *testing.T) {
	_, err := LookupMethod("newton")
	require.True(t, errors.Is(err, ErrUnknownMethod))
	require.ErrorContains(t, err, `"newton"`)
	require.ErrorContains(t, err, "picard, km, halpern, ghal, anderson, broyden, vrghal, growing-batch, minibatch-km, stochastic-halpern, page-halpern")
}

// TestEnumText checks that every enum of the package parses back from its
// String, round-trips through JSON as text, and rejects unknown names with
// its sentinel error.
func TestEnumText(t *testing.T) {
	for s := NotTerminated; s <= ToleranceEstimated; s++ {
		requireTextRoundTrip(t, s, ParseStatus)
	}
	for m := UnspecifiedModel; m <= Deterministic; m++ {
		requireTextRoundTrip(t, m, ParseModel)
	}
	for r := RuleEstimate; r <= RuleSampledSerfling; r++ {
		requireTextRoundTrip(t, r, ParseCertRule)
		require.Equal(t, r != RuleEstimate, r.Rigorous(), "%v", r)
	}
	_, err0 := ParseCertRule("mom-empirical-scale")
	require.ErrorIs(t, err0, ErrUnknownCertRule)
	for _, a := range []Aggregate{AggMax, AggMean} {
		requireTextRoundTrip(t, a, ParseAggregate)
	}
	_, err := ParseStatus("success")
	require.ErrorIs(t, err, ErrUnknownStatus)
	_, err = ParseModel("exact")
	require.ErrorIs(t, err, ErrUnknownModel)
	_, err = ParseAggregate("min")
	require.ErrorIs(t, err, ErrUnknownAggregate)
	for _, v := range []interface{ MarshalText() ([]byte, error) }{Status(-1), Status(99), CertRule(-1), CertRule(8), Model(-1), Model(9), Aggregate(5)} {
		_, err := v.MarshalText()
		require.Error(t, err, "%v", v)
	}
	var ne *NormError
	_, err = ParseNorm("l7", 3, 1)
	require.ErrorAs(t, err, &ne)
	require.Equal(t, "l7", ne.Name)
	_, err = NewLP(1, 3)
	require.ErrorAs(t, err, &ne)
	require.Equal(t, "", ne.Name)
	require.Equal(t, "solver: "+ne.Reason, err.Error())
}

// requireTextRoundTrip requires that parse reads v back from its String,
// and that v marshals to JSON as that name in quotes and unmarshals back to
// itself.
func requireTextRoundTrip[E interface {
	~int
	fmt.Stringer
}](t *testing.T, v E, parse func(string) (E, error)) {
	t.Helper()
	got, err := parse(v.String())
	require.NoError(t, err)
	require.Equal(t, v, got)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.Equal(t, `"`+v.String()+`"`, string(b))
	var back E
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, v, back)
}

// TestMethodSettingsOr: Or keeps the non-zero fields of the receiver and
// takes the others from its argument.
func TestMethodSettingsOr(t *testing.T) {
	base := MethodSettings{Delta: 0.05, SampleScale: 1, Memory: 30}
	for _, tc := range []struct{ s, want MethodSettings }{
		{MethodSettings{}, base},
		{MethodSettings{Delta: 0.1}, MethodSettings{Delta: 0.1, SampleScale: 1, Memory: 30}},
		{MethodSettings{SampleScale: 0.5, Memory: 3}, MethodSettings{Delta: 0.05, SampleScale: 0.5, Memory: 3}},
		{MethodSettings{Delta: 0.2, SampleScale: 2, Memory: 4}, MethodSettings{Delta: 0.2, SampleScale: 2, Memory: 4}},
	} {
		require.Equal(t, tc.want, tc.s.Or(base), "%+v", tc.s)
		require.Equal(t, tc.s, tc.s.Or(MethodSettings{}), "%+v over zero settings", tc.s)
	}
}
