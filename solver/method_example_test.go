package solver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/deqgo/deq/solver"
)

// averaged is a Method written outside package solver: the averaged
// iteration x ← x + α(T(x) − x) on a deterministic oracle. Its vectors come
// from the solve's Workspace (Env.Buffer) and its vector work runs through
// the Env's passes, which Settings.Workers splits between goroutines on
// long vectors, so a solve through a kept Workspace allocates nothing in
// the method.
type averaged struct{ alpha float64 }

func (m averaged) String() string { return "averaged" }

func (m averaged) Run(e *solver.Env) error {
	n := e.Len()
	x, tx, d := e.Buffer(n), e.Buffer(n), e.Buffer(n)
	e.Copy(x, e.X0())
	for {
		if err := e.Eval(tx, x, solver.Sample{Size: 1}); err != nil {
			return err
		}
		// Record stops the run (returning a stop error) once the
		// residual meets the tolerance or a limit is reached.
		if err := e.Record(x, e.Dist(tx, x)); err != nil {
			return err
		}
		e.Sub(d, tx, x)
		e.AddScaled(x, m.alpha, d)
	}
}

var _ solver.Method = averaged{}

// A Method written outside the package, using the Env's workspace buffers
// and vector passes, solves T(x) = A x + b on R².
func ExampleEnv_Buffer() {
	t := solver.Func{N: 2, F: func(dst, x []float64) {
		dst[0] = 0.5*x[0] + 0.2*x[1] + 1
		dst[1] = -0.3*x[0] + 0.4*x[1] + 2
	}}
	norm, err := solver.ParseNorm("l2", 2, 1)
	if err != nil {
		log.Fatal(err)
	}
	ws := new(solver.Workspace)
	res, err := solver.Solve(context.Background(), solver.Problem{Oracle: t, Norm: norm},
		[]float64{0, 0}, &solver.Settings{Tol: 1e-10, Workspace: ws}, averaged{alpha: 0.8})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("x = (%.4f, %.4f), status %v\n", res.X[0], res.X[1], res.Status)
	fmt.Println("certified residual within tolerance:", res.Certificate.Bound <= 1e-10)
	// Output:
	// x = (2.7778, 1.9444), status Success
	// certified residual within tolerance: true
}
