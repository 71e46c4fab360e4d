package train

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestCertMetUsesTheSolvesTolerance checks that a certified bound is
// compared with the absolute tolerance each solve stopped against
// (Result.Tol), so that a relative tolerance is judged per solve.
func TestCertMetUsesTheSolvesTolerance(t *testing.T) {
	var a solveAcc
	cert := func(b float64) *solver.Certificate { return &solver.Certificate{Bound: b, Rule: solver.RuleExact} }
	a.add(&solver.Result{Status: solver.Success, Tol: 0.5, Certificate: cert(0.4)}, nil)      // met
	a.add(&solver.Result{Status: solver.Success, Tol: 1e-3, Certificate: cert(0.4)}, nil)     // not met
	a.add(&solver.Result{Status: solver.IterationLimit, Tol: 2, Certificate: cert(1.9)}, nil) // met, unconverged
	a.add(&solver.Result{Status: solver.Success, Tol: 1e-3, Certificate: cert(2e-4)}, nil)    // met
	s := a.summary()
	require.Equal(t, 4, s.Solves)
	require.Equal(t, 4, s.Certified)
	require.Equal(t, 1, s.Unconverged)
	require.InDelta(t, 0.75, s.CertMetFrac, 1e-12)
}
