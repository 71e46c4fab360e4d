package deq

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// faultyCell wraps a cell whose evaluators write value into coordinate 0
// of the forward evaluations (Eval and EvalExact, counted together) listed
// in evals and of the hidden vector–Jacobian products (VJPHidden) listed
// in vjps, counted from 1 over the cell's life.
type faultyCell struct {
	layers.Cell
	value       float64
	evals, vjps map[int]bool
	nEval, nVJP int
}

func (c *faultyCell) Evaluator(n int) (layers.Evaluator, error) {
	ev, err := c.Cell.Evaluator(n)
	if err != nil {
		return nil, err
	}
	return &faultyEval{Evaluator: ev, c: c}, nil
}

type faultyEval struct {
	layers.Evaluator
	c *faultyCell
}

func (e *faultyEval) forward(dst []float64) {
	e.c.nEval++
	if e.c.evals[e.c.nEval] {
		dst[0] = e.c.value
	}
}

func (e *faultyEval) Eval(dst, z []float64, s solver.Sample) (int, error) {
	k, err := e.Evaluator.Eval(dst, z, s)
	if err == nil {
		e.forward(dst)
	}
	return k, err
}

func (e *faultyEval) EvalExact(dst, z []float64) error {
	err := e.Evaluator.EvalExact(dst, z)
	if err == nil {
		e.forward(dst)
	}
	return err
}

func (e *faultyEval) VJPHidden(dst, z, g []float64, s solver.Sample) (int, error) {
	k, err := e.Evaluator.VJPHidden(dst, z, g, s)
	e.c.nVJP++
	if err == nil && e.c.vjps[e.c.nVJP] {
		dst[0] = e.c.value
	}
	return k, err
}

var nonFiniteValues = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}

// TestForwardNonFiniteInput: a NaN or ±Inf anywhere in x is refused with
// an error wrapping solver.ErrNonFinite that names the coordinate and its
// example, and no Solution (in particular no certificate claiming
// "≤ NaN").
func TestForwardNonFiniteInput(t *testing.T) {
	for _, gc := range gradCells() {
		for _, v := range nonFiniteValues {
			t.Run(fmt.Sprintf("%s/%v", gc.name, v), func(t *testing.T) {
				l := must(New(gc.cell, nil))
				d := gc.cell.Shape().InputLen()
				x := randVec(rand.New(rand.NewPCG(1, 2)), gc.n*d, 1)
				i := d + 1 // a coordinate of example 1
				x[i] = v
				sol, err := l.Forward(context.Background(), x)
				require.ErrorIs(t, err, solver.ErrNonFinite)
				require.ErrorContains(t, err, fmt.Sprintf("x[%d] = %v (example 1)", i, v))
				require.Nil(t, sol)
			})
		}
	}
}

// TestForwardCellNonFiniteMidSolve: a cell that returns NaN or ±Inf on
// its third evaluation stops the forward solve with an error wrapping
// solver.ErrNonFinite; the Solution holds Status Diverged, a finite Z and
// no certificate with a NaN bound.
func TestForwardCellNonFiniteMidSolve(t *testing.T) {
	for _, gc := range gradCells() {
		for _, v := range nonFiniteValues {
			t.Run(fmt.Sprintf("%s/%v", gc.name, v), func(t *testing.T) {
				fc := &faultyCell{Cell: gc.cell, value: v, evals: map[int]bool{3: true}}
				l := must(New(fc, &tight))
				x := randVec(rand.New(rand.NewPCG(3, 4)), gc.n*gc.cell.Shape().InputLen(), 1)
				sol, err := l.Forward(context.Background(), x)
				require.ErrorIs(t, err, solver.ErrNonFinite)
				require.NotNil(t, sol)
				require.Equal(t, solver.Diverged, sol.Result.Status)
				require.True(t, numeric.AllFinite(sol.Z), "Z = %v", sol.Z)
				if c := sol.Result.Certificate; c != nil {
					require.False(t, math.IsNaN(c.Bound), c.Guarantee())
				}
			})
		}
	}
}

// TestBackwardNonFinite: in every backward mode, a NaN or ±Inf in the
// incoming gradient gz, or in the Solution, is refused with an error
// wrapping solver.ErrNonFinite before any parameter gradient is written;
// a cell whose VJP returns one during the adjoint solve stops it with
// such an error and Status Diverged.
func TestBackwardNonFinite(t *testing.T) {
	gc := gradCells()[0]
	for _, mode := range []Backward{Implicit, JacobianFree, Phantom} {
		for _, v := range nonFiniteValues {
			t.Run(fmt.Sprintf("%v/%v", mode, v), func(t *testing.T) {
				s := tight
				s.Backward = mode
				fc := &faultyCell{Cell: gc.cell, value: v}
				l := must(New(fc, &s))
				x := randVec(rand.New(rand.NewPCG(5, 6)), gc.n*gc.cell.Shape().InputLen(), 1)
				sol, err := l.Forward(context.Background(), x)
				require.NoError(t, err)
				layers.ZeroGrads(l.Params())
				dx := make([]float64, len(x))

				gz := loss{c: randVec(rand.New(rand.NewPCG(7, 8)), len(sol.Z), 1)}.grad(sol.Z)
				gz[len(gz)-1] = v
				st, err := l.Backward(context.Background(), sol, gz, dx)
				require.ErrorIs(t, err, solver.ErrNonFinite)
				require.ErrorContains(t, err, fmt.Sprintf("gz[%d] = %v (example %d)", len(gz)-1, v, gc.n-1))
				require.Nil(t, st)
				for _, p := range l.Params() {
					require.True(t, allZero(p.GradData()), "no gradient written")
				}

				gz[len(gz)-1] = 0
				bad := *sol
				bad.Z = append([]float64(nil), sol.Z...)
				bad.Z[0] = v
				_, err = l.Backward(context.Background(), &bad, gz, dx)
				require.ErrorIs(t, err, solver.ErrNonFinite)
				require.ErrorContains(t, err, "Solution.Z[0]")

				if mode != Implicit {
					return
				}
				fc.vjps = map[int]bool{fc.nVJP + 2: true}
				st, err = l.Backward(context.Background(), sol, gz, dx)
				require.ErrorIs(t, err, solver.ErrNonFinite)
				require.NotNil(t, st)
				require.Equal(t, solver.Diverged, st.Adjoint.Status)
			})
		}
	}
}

func allZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// TestJacobianNonFinite: the Jacobian measurements refuse a non-finite
// point, and stop with an error wrapping solver.ErrNonFinite when the
// cell's evaluations turn non-finite (a NaN input, or a cell returning
// NaN on its third evaluation): SpectralRadius never hands a non-finite
// matrix to the eigenvalue computation, which would not return.
func TestJacobianNonFinite(t *testing.T) {
	type measure struct {
		name string
		f    func(layers.Evaluator, []float64) error
	}
	measures := []measure{
		{"radius", func(ev layers.Evaluator, z []float64) error {
			_, err := SpectralRadius(context.Background(), ev, z, nil)
			return err
		}},
		{"norm", func(ev layers.Evaluator, z []float64) error {
			_, err := SpectralNorm(context.Background(), ev, z, nil)
			return err
		}},
		{"frobenius", func(ev layers.Evaluator, z []float64) error {
			_, err := JacobianFrobenius(context.Background(), ev, z, nil)
			return err
		}},
	}
	gc := gradCells()[0]
	d := gc.cell.Shape().InputLen()
	for _, m := range measures {
		for _, fault := range []string{"z", "input", "cell"} {
			t.Run(m.name+"/"+fault, func(t *testing.T) {
				fc := &faultyCell{Cell: gc.cell, value: math.NaN(), evals: map[int]bool{}, vjps: map[int]bool{}}
				ev := must(fc.Evaluator(gc.n))
				x := randVec(rand.New(rand.NewPCG(9, 10)), gc.n*d, 1)
				z := randVec(rand.New(rand.NewPCG(11, 12)), ev.Len(), 0.5)
				switch fault {
				case "z":
					z[1] = math.NaN()
				case "input":
					x[0] = math.NaN()
				case "cell":
					fc.evals[3], fc.vjps[1] = true, true
				}
				require.NoError(t, ev.SetInput(x))
				require.ErrorIs(t, m.f(ev, z), solver.ErrNonFinite)
			})
		}
	}
	t.Run("radius/overflow", func(t *testing.T) {
		// A finite but huge evaluation makes a Gram–Schmidt norm overflow:
		// the Hessenberg matrix then holds +Inf, and is refused.
		fc := &faultyCell{Cell: gc.cell, value: 1e300, evals: map[int]bool{1: true}}
		ev := must(fc.Evaluator(gc.n))
		require.NoError(t, ev.SetInput(randVec(rand.New(rand.NewPCG(9, 10)), gc.n*d, 1)))
		_, err := SpectralRadius(context.Background(), ev, randVec(rand.New(rand.NewPCG(11, 12)), ev.Len(), 0.5), nil)
		require.ErrorIs(t, err, solver.ErrNonFinite)
		require.ErrorContains(t, err, "Hessenberg matrix of example 0")
	})
}
