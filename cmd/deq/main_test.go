package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// runCmd runs the command line in-process and returns its exit status,
// standard output and standard error.
func runCmd(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// decodeOne decodes exactly one JSON object from s.
func decodeOne(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	var m map[string]any
	require.NoError(t, dec.Decode(&m))
	require.False(t, dec.More(), "more than one JSON value in %q", s)
	return m
}

func TestSolveJSONExact(t *testing.T) {
	code, out, errOut := runCmd("solve", "--problem", "affine", "--solver", "picard", "--norm", "linf",
		"--dim", "12", "--gamma", "0.5", "--eps", "1e-8", "--delta", "0.1", "--seed", "4", "--json")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, errOut)
	m := decodeOne(t, out)
	for _, k := range []string{"problem", "solver", "norm", "status", "oracle_calls", "samples", "residual",
		"fixed_point_error", "certificate", "wall_seconds", "oracle"} {
		require.Contains(t, m, k)
	}
	require.Equal(t, "affine", m["problem"])
	require.Equal(t, "picard", m["solver"])
	require.Equal(t, "linf", m["norm"])
	require.Equal(t, "exact", m["oracle"])
	require.Equal(t, "Success", m["status"])
	require.Equal(t, m["oracle_calls"], m["samples"])
	// An exact solve that succeeds guarantees ‖T(x̂) − x̂‖ ≤ ε and, for a
	// γ-contraction, ‖x̂ − x*‖ ≤ ε/(1 − γ); the certificate is exact.
	require.LessOrEqual(t, m["residual"].(float64), 1e-8)
	require.LessOrEqual(t, m["fixed_point_error"].(float64), 1e-8/(1-0.5))
	cert := m["certificate"].(map[string]any)
	require.Equal(t, "exact", cert["rule"])
	require.InDelta(t, m["residual"].(float64), cert["bound"].(float64), 1e-15)
}

func TestSolveJSONStochastic(t *testing.T) {
	code, out, errOut := runCmd("solve", "--problem", "affine", "--solver", "minibatch-km", "--dim", "8",
		"--gamma", "0.5", "--noise", "0.5", "--eps", "0.05", "--delta", "0.1", "--seed", "2", "--json")
	require.Equal(t, 0, code, errOut)
	m := decodeOne(t, out)
	require.Equal(t, "stochastic", m["oracle"])
	require.Equal(t, "samplewise-lipschitz", m["model"])
	require.Greater(t, m["samples"].(float64), m["oracle_calls"].(float64))
	cert := m["certificate"].(map[string]any)
	require.Equal(t, 0.1, cert["delta"])
	require.Greater(t, cert["samples"].(float64), 0.0)
	// The solver stops on its estimate ≤ ε, which nothing proves: the
	// status says so (the certificate, a rigorous variance-mom bound, is
	// above ε here). The true residual may exceed ε by the minibatch noise,
	// but not by a factor 2 here (fixed seed).
	require.Equal(t, "ToleranceEstimated", m["status"])
	require.Equal(t, "variance-mom", cert["rule"])
	require.Contains(t, cert["guarantee"], "with probability ≥ 0.9 (rule variance-mom)")
	require.LessOrEqual(t, m["residual"].(float64), 0.1)
}

// TestSolveMDPBoundedNoise: VR-GHAL on the MDP reports a rigorous bound
// from the bounded-noise rule (the Bellman oracle's almost-sure bound
// γ·span(V)), and its Success is a proven residual ≤ ε. The certificate
// is VR-GHAL's own last estimate, stated at the estimates' share 0.9δ of
// its δ = 0.05 (see solver.Env.OfferCertificate).
func TestSolveMDPBoundedNoise(t *testing.T) {
	code, out, errOut := runCmd("solve", "--problem", "mdp", "--solver", "vrghal", "--dim", "4",
		"--eps", "0.3", "--sample-scale", "0.01", "--json")
	require.Equal(t, 0, code, errOut)
	m := decodeOne(t, out)
	cert := m["certificate"].(map[string]any)
	require.Equal(t, "bounded-noise", cert["rule"])
	require.InDelta(t, 0.9*0.05, cert["delta"], 1e-15)
	require.Contains(t, cert["guarantee"], "with probability ≥ 0.955 (rule bounded-noise, the method's own estimate)")
	require.Equal(t, "Success", m["status"])
	require.LessOrEqual(t, m["residual"].(float64), cert["bound"].(float64))

	code, out, errOut = runCmd("solve", "--problem", "mdp", "--solver", "vrghal", "--dim", "4",
		"--eps", "0.3", "--sample-scale", "0.01")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "with probability ≥ 0.955 (rule bounded-noise, the method's own estimate)")
}

// TestSolveEstimateHasNoProbability: an oracle that declares nothing gets
// a certificate that claims no probability, in text and JSON: a solver
// report is built from a certificate of rule "estimate".
func TestSolveEstimateHasNoProbability(t *testing.T) {
	c := &solver.Certificate{Bound: 0.5, Estimate: 0.4, Delta: math.NaN(), Rule: solver.RuleEstimate, Calls: 3, Samples: 30}
	rep := &solveReport{Certificate: &certReport{Bound: number(c.Bound), Estimate: number(c.Estimate), Delta: number(c.Delta),
		Samples: c.Samples, Calls: c.Calls, Rule: c.Rule, Guarantee: c.Guarantee()}}
	var text, js strings.Builder
	require.NoError(t, writeSummary(&text, rep))
	require.Contains(t, text.String(), "≈ 0.5 (estimate, no guarantee)")
	require.NotContains(t, text.String(), "probability")
	require.NoError(t, writeJSON(&js, rep))
	require.Contains(t, js.String(), `"delta":null`)
	require.Contains(t, js.String(), `"rule":"estimate"`)
	require.NotContains(t, js.String(), "probability")
}

// TestSolveEveryRegisteredSolver runs every solver of the registry, so that
// entries added later are exercised too.
func TestSolveEveryRegisteredSolver(t *testing.T) {
	for _, s := range solver.Methods() {
		t.Run(s.Name, func(t *testing.T) {
			code, out, errOut := runCmd("solve", "--problem", "affine", "--solver", s.Name, "--dim", "6",
				"--gamma", "0.5", "--noise", "0.2", "--eps", "0.05", "--max-iter", "2000", "--json")
			require.Equal(t, 0, code, errOut)
			m := decodeOne(t, out)
			require.Equal(t, s.Name, m["solver"])
			want := "exact"
			if s.Stochastic {
				want = "stochastic"
			}
			require.Equal(t, want, m["oracle"])
			require.NotEqual(t, "Failure", m["status"])
		})
	}
}

// TestSolveListsRegistry checks that --list prints every method of the
// solver registry with its oracle, model and summary (the registry's own
// consistency is tested in package solver).
func TestSolveListsRegistry(t *testing.T) {
	code, out, errOut := runCmd("solve", "--list")
	require.Equal(t, 0, code, errOut)
	for _, s := range solver.Methods() {
		oracle, needs := "exact", "-"
		if s.Stochastic {
			oracle, needs = "stochastic", s.Needs.String()
		}
		require.Regexp(t, "\n"+regexp.QuoteMeta(s.Name)+" +"+oracle+" +"+regexp.QuoteMeta(needs)+" +"+regexp.QuoteMeta(s.Summary)+"\n", out, s.Name)
	}
}

func TestSolveList(t *testing.T) {
	code, out, errOut := runCmd("solve", "--list")
	require.Equal(t, 0, code, errOut)
	for _, p := range problems.List() {
		require.Contains(t, out, p.Name)
		require.Contains(t, out, p.Summary)
	}
	for _, s := range solver.MethodNames() {
		require.Contains(t, out, s)
	}
	for _, n := range []string{"l2", "lp:P", "linf", "schatten:P"} {
		require.Contains(t, out, "\n"+n+" ")
	}
}

func TestSolveSummary(t *testing.T) {
	code, out, errOut := runCmd("solve", "--problem", "mdp", "--solver", "picard", "--dim", "5", "--eps", "1e-6")
	require.Equal(t, 0, code, errOut)
	for _, s := range []string{"problem  ", "mdp in linf", "status  ", "Success", "residual", "‖x − x*‖", "certificate"} {
		require.Contains(t, out, s)
	}
}

func TestSolveUsageErrors(t *testing.T) {
	with := func(extra ...string) []string {
		return append([]string{"solve", "--problem", "affine", "--solver", "picard"}, extra...)
	}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"solve", "--solver", "picard"}, "--problem"},
		{[]string{"solve", "--problem", "affine"}, "--solver"},
		{[]string{"solve", "--problem", "nope", "--solver", "picard"}, "--problem"},
		{[]string{"solve", "--problem", "affine", "--solver", "nope"}, "--solver"},
		{with("--eps", "0"), "--eps"},
		{with("--eps", "-1e-3"), "--eps"},
		{with("--eps", "abc"), "--eps"},
		{with("--delta", "0"), "--delta"},
		{with("--delta", "1"), "--delta"},
		{with("--delta", "1.5"), "--delta"},
		{with("--norm", "schatten:2"), "--norm"},
		{with("--norm", "l7"), "--norm"},
		{with("--dim", "0x"), "--dim"},
		{with("--dim", "100000"), "--dim"},
		{with("--gamma", "1.5"), "--gamma"},
		{with("--noise", "-1"), "--noise"},
		{with("--max-samples", "-4"), "--max-samples"},
		{with("--max-iter", "-1"), "--max-iter"},
		{with("--timeout", "-1s"), "--timeout"},
		{with("--bogus"), "--bogus"},
		{[]string{"solve", "--problem", "affine-switch", "--solver", "page-halpern"}, "--solver"},
		{[]string{"solve", "--problem", "mdp", "--solver", "picard", "--noise", "1"}, "--noise"},
		{[]string{"solve", "--problem", "mdp", "--solver", "picard", "--norm", "l2"}, "--norm"},
	} {
		requireUsageError(t, tc.args, tc.flag)
	}
	code, _, errOut := runCmd("solve", "stray")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "stray")
}

// requireUsageError runs the command line args and requires a usage
// error: exit status exitUsage, nothing on standard output and one line
// "deq: …" naming want on standard error, without a panic trace.
func requireUsageError(t *testing.T, args []string, want string) {
	t.Helper()
	code, out, errOut := runCmd(args...)
	require.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	require.Empty(t, out, args)
	require.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	require.True(t, strings.HasPrefix(errOut, "deq: "), errOut)
	require.Contains(t, errOut, want, args)
	require.NotContains(t, errOut, "goroutine", "no panic trace")
}
