package solver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/deqgo/deq/solver"
)

// ExampleSolve finds the fixed point of the affine contraction
// T(x) = A x + b on R² with Anderson acceleration, and reads the certified
// residual of the returned point.
func ExampleSolve() {
	t := solver.Func{N: 2, F: func(dst, x []float64) {
		dst[0] = 0.5*x[0] + 0.2*x[1] + 1
		dst[1] = -0.3*x[0] + 0.4*x[1] + 2
	}}
	norm, err := solver.ParseNorm("l2", 2, 1)
	if err != nil {
		log.Fatal(err)
	}
	res, err := solver.Solve(context.Background(), solver.Problem{Oracle: t, Norm: norm},
		[]float64{0, 0}, &solver.Settings{Tol: 1e-10}, solver.Anderson{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("x = (%.4f, %.4f), status %v\n", res.X[0], res.X[1], res.Status)
	fmt.Println("certified residual within tolerance:", res.Certificate.Bound <= 1e-10)
	// Output:
	// x = (2.7778, 1.9444), status Success
	// certified residual within tolerance: true
}

// ExampleGHAL solves a rotation by 90° about (1, 2), a map that is
// nonexpansive but not contractive: Picard's iteration circles the fixed
// point forever, while the gradual Halpern algorithm converges to it.
func ExampleGHAL() {
	c := [2]float64{1, 2}
	rot := solver.Func{N: 2, F: func(dst, x []float64) {
		u, v := x[0]-c[0], x[1]-c[1]
		dst[0], dst[1] = c[0]-v, c[1]+u
	}}
	norm, err := solver.NewLP(2, 2)
	if err != nil {
		log.Fatal(err)
	}
	p := solver.Problem{Oracle: rot, Norm: norm}
	s := &solver.Settings{Tol: 1e-3, MaxIter: 100000}
	for _, m := range []solver.Method{solver.Picard{}, solver.GHAL{}} {
		res, err := solver.Solve(context.Background(), p, []float64{0, 0}, s, m)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-7s %-14v x = (%.2f, %.2f)\n", m, res.Status, res.X[0], res.X[1])
	}
	// Output:
	// picard  IterationLimit x = (0.00, 0.00)
	// ghal    Success        x = (1.00, 2.00)
}

// ExampleParseNorm builds the norms of the package by name and prints their
// smoothness constants κ.
func ExampleParseNorm() {
	for _, name := range []string{"l2", "lp:4", "linf", "schatten:4", "schatten:inf"} {
		n, err := solver.ParseNorm(name, 64, 64)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-12s κ = %.3f\n", n, n.Kappa())
	}
	_, err := solver.ParseNorm("lp:1", 64, 1)
	fmt.Println(err)
	// Output:
	// l2           κ = 1.000
	// lp:4         κ = 3.000
	// linf         κ = 42.502
	// schatten:4   κ = 3.000
	// schatten:inf κ = 19.892
	// solver: norm "lp:1": ℓp norm exponent p = 1 out of range [2, ∞)
}
