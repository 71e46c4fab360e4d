package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/train"
)

// certRules returns the phrase naming the rules of a summary's
// certificates and, when any has one, their largest failure probability:
// "; rules finite-sum-exact ×12, sampled-bernstein ×3 (δ ≤ 0.05)", or
// empty when there is no certificate.
func certRules(s train.SolveSummary) string {
	if len(s.CertRules) == 0 {
		return ""
	}
	rules := make([]solver.CertRule, 0, len(s.CertRules))
	for r := range s.CertRules {
		rules = append(rules, r)
	}
	slices.Sort(rules)
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = fmt.Sprintf("%v ×%d", r, s.CertRules[r])
	}
	out := "; rules " + strings.Join(parts, ", ")
	if s.CertDeltaMax > 0 {
		out += fmt.Sprintf(" (δ ≤ %g)", s.CertDeltaMax)
	}
	return out
}
