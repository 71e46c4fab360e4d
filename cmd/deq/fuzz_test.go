package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// fuzzDeadline bounds one fuzzed run: a solve still going when it passes is
// interrupted (exit status 1), so that flags asking for long solves cannot
// stall the fuzzer.
const fuzzDeadline = 3 * time.Second

// FuzzSolveFlags runs `deq solve` in-process with arbitrary values for its
// flags (an empty value leaves the flag out) and arbitrary extra arguments
// (split on white space). Whatever they are, the run must not panic (the
// recover in execute would report "internal error"), must exit with status
// 0, 1 or 2, and must print either one line on stderr and nothing on stdout
// (a failure) or nothing on stderr (success; with --json, exactly one JSON
// object). Its seed corpus is in testdata/fuzz/FuzzSolveFlags; run it longer
// with
//
//	go test -run '^$' -fuzz '^FuzzSolveFlags$' -fuzztime 60s ./cmd/deq/
func FuzzSolveFlags(f *testing.F) {
	f.Add("affine", "picard", "linf", "8", "0.5", "", "1e-8", "0.1", "4", "", "", "", true, "")
	f.Add("mdp", "anderson", "", "5", "", "", "1e-6", "", "", "", "100", "", false, "")
	f.Add("matrix", "broyden", "schatten:inf", "3", "0.9", "0.5", "", "", "2", "", "50", "1s", true, "")
	f.Add("affine-t", "minibatch-km", "lp:3", "6", "0.6", "0.4", "0.05", "0.2", "7", "5000", "", "", true, "")
	f.Add("shift", "stochastic-halpern", "", "4", "", "", "0.1", "", "", "20000", "", "", true, "")
	f.Add("averaged", "page-halpern", "l2", "4", "0.9", "", "0.1", "", "", "20000", "", "", false, "")
	f.Add("affine", "ghal", "lp:nan", "-3", "nan", "-1", "0", "1", "-1", "-1", "-1", "-1s", true, "--bogus stray")
	f.Add("", "", "", "", "", "", "", "", "", "", "", "", false, "--list")
	f.Fuzz(func(t *testing.T, problem, solverName, norm, dim, gamma, noise, eps, delta, seed, maxSamples, maxIter, timeout string, asJSON bool, extra string) {
		args := []string{"solve"}
		for _, fl := range []struct{ name, value string }{
			{"problem", problem}, {"solver", solverName}, {"norm", norm}, {"dim", dim}, {"gamma", gamma},
			{"noise", noise}, {"eps", eps}, {"delta", delta}, {"seed", seed}, {"max-samples", maxSamples},
			{"max-iter", maxIter}, {"timeout", timeout},
		} {
			if fl.value != "" {
				args = append(args, "--"+fl.name+"="+fl.value)
			}
		}
		if asJSON {
			args = append(args, "--json")
		}
		args = append(args, strings.Fields(extra)...)

		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		defer cancel()
		var out, errOut bytes.Buffer
		code := run(ctx, args, &out, &errOut)
		stdout, stderr := out.String(), errOut.String()
		if strings.Contains(stderr, "internal error") {
			t.Fatalf("%q panicked: %s", args, stderr)
		}
		switch code {
		case exitOK:
			if stderr != "" {
				t.Fatalf("%q succeeded with stderr %q", args, stderr)
			}
			if asJSON && !strings.Contains(extra, "-") { // no --list, --help or other flag from extra
				var m map[string]any
				dec := json.NewDecoder(strings.NewReader(stdout))
				if err := dec.Decode(&m); err != nil || dec.More() {
					t.Fatalf("%q: stdout is not one JSON object (%v): %q", args, err, stdout)
				}
			}
		case exitFailure, exitUsage:
			if stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "deq: ") || !strings.HasSuffix(stderr, "\n") {
				t.Fatalf("%q failed (%d) without a one-line error: stdout %q, stderr %q", args, code, stdout, stderr)
			}
		default:
			t.Fatalf("%q: exit status %d", args, code)
		}
	})
}
