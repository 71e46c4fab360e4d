package deq

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// stopEvaluator cancels a context from inside its evaluation number at
// (EvalExact and VJPHidden alike) and counts the evaluations after it.
type stopEvaluator struct {
	layers.Evaluator
	cancel context.CancelFunc
	at     int
	calls  int
	after  int
}

func (e *stopEvaluator) count() {
	e.calls++
	if e.calls > e.at {
		e.after++
	}
	if e.calls == e.at {
		e.cancel()
	}
}

func (e *stopEvaluator) EvalExact(dst, z []float64) error {
	err := e.Evaluator.EvalExact(dst, z)
	e.count()
	return err
}

func (e *stopEvaluator) VJPHidden(dst, z, g []float64, s solver.Sample) (int, error) {
	n, err := e.Evaluator.VJPHidden(dst, z, g, s)
	e.count()
	return n, err
}

// TestJacobianMeasurementsStopWhenCanceled cancels the context from inside
// the third evaluation of each measurement, run with a tolerance it cannot
// meet: it returns an error wrapping context.Canceled and begins no other
// Jacobian product.
func TestJacobianMeasurementsStopWhenCanceled(t *testing.T) {
	for _, m := range []struct {
		name string
		run  func(context.Context, layers.Evaluator, []float64, *JacobianOptions) error
	}{
		{"SpectralRadius", func(ctx context.Context, e layers.Evaluator, z []float64, o *JacobianOptions) error {
			_, err := SpectralRadius(ctx, e, z, o)
			return err
		}},
		{"SpectralNorm", func(ctx context.Context, e layers.Evaluator, z []float64, o *JacobianOptions) error {
			_, err := SpectralNorm(ctx, e, z, o)
			return err
		}},
		{"JacobianFrobenius", func(ctx context.Context, e layers.Evaluator, z []float64, o *JacobianOptions) error {
			_, err := JacobianFrobenius(ctx, e, z, o)
			return err
		}},
	} {
		t.Run(m.name, func(t *testing.T) {
			ev, z := jacobianSetup(t, jacobianCells()[0].cell)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			se := &stopEvaluator{Evaluator: ev, cancel: cancel, at: 3}
			err := m.run(ctx, se, z, &JacobianOptions{Iterations: 1000, Tol: 1e-300, Probes: 1000, Seed: 1})
			require.True(t, errors.Is(err, context.Canceled), "%v", err)
			// A central difference in progress makes its second evaluation.
			require.LessOrEqual(t, se.after, 1)
		})
	}
}
