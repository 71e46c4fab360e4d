package solver_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// pointLog is a PointRecorder that keeps copies of every recorded point.
type pointLog struct {
	trace  []solver.TracePoint
	points [][]float64
	stopAt int // return errStop at this many records (0: never)
}

var errStop = errors.New("enough")

func (l *pointLog) Record(solver.TracePoint) error {
	panic("Record called on a PointRecorder")
}

func (l *pointLog) RecordPoint(p solver.TracePoint, x []float64) error {
	l.trace = append(l.trace, p)
	l.points = append(l.points, slices.Clone(x))
	if l.stopAt > 0 && len(l.trace) == l.stopAt {
		return errStop
	}
	return nil
}

var _ solver.PointRecorder = (*pointLog)(nil)

func TestPointRecorderSeesReturnedPoint(t *testing.T) {
	p, err := problems.New(problems.Config{Name: "affine", Dim: 6, Gamma: 0.8, Noise: 0.2, Seed: 3})
	require.NoError(t, err)
	for _, m := range []solver.Method{
		solver.VRGHAL{Gamma: 0.8, SampleScale: 1e-3},
		solver.MinibatchKM{},
		solver.StochasticHalpern{Eps: 0.1},
	} {
		t.Run(m.String(), func(t *testing.T) {
			log := &pointLog{}
			s := &solver.Settings{MaxIter: 5, Seed: 9, Recorder: log, Certify: solver.CertifySettings{Skip: true}}
			res, err := solver.Solve(context.Background(), p.OracleProblem(), p.X0, s, m)
			require.NoError(t, err)
			require.Equal(t, solver.IterationLimit, res.Status)
			// One record per trace point, the same points as the trace.
			require.Equal(t, res.Stats.Trace, log.trace)
			require.Len(t, log.points, 6)
			// The first point is the start point; the stochastic methods
			// keep their last iterate, which is the last point recorded.
			require.Equal(t, p.X0, log.points[0])
			require.Equal(t, res.X, log.points[len(log.points)-1])
		})
	}
}

func TestPointRecorderPicardIterates(t *testing.T) {
	// Picard records x_k with x_{k+1} = T(x_k): check every recorded point
	// against the exact operator, independently of the method.
	p, err := problems.New(problems.Config{Name: "affine", Dim: 5, Gamma: 0.5, Seed: 2})
	require.NoError(t, err)
	log := &pointLog{stopAt: 4}
	s := &solver.Settings{Recorder: log, Certify: solver.CertifySettings{Skip: true}}
	res, err := solver.Solve(context.Background(), p.ExactProblem(), p.X0, s, solver.Picard{})
	require.NoError(t, err)
	// An error from the recorder stops the solve with Status Failure.
	require.Equal(t, solver.Failure, res.Status)
	require.Len(t, log.points, 4)
	tx := make([]float64, len(p.X0))
	for k := 0; k+1 < len(log.points); k++ {
		require.NoError(t, p.Oracle.EvalExact(tx, log.points[k]))
		require.InDeltaSlice(t, tx, log.points[k+1], 1e-12, "iterate %d", k+1)
	}
}

func TestPlainRecorderStillCalled(t *testing.T) {
	p, err := problems.New(problems.Config{Name: "affine", Dim: 4, Gamma: 0.5, Seed: 2})
	require.NoError(t, err)
	var got []solver.TracePoint
	s := &solver.Settings{MaxIter: 3, Recorder: solver.RecorderFunc(func(tp solver.TracePoint) error {
		got = append(got, tp)
		return nil
	})}
	res, err := solver.Solve(context.Background(), p.ExactProblem(), p.X0, s, solver.KrasnoselskiiMann{})
	require.NoError(t, err)
	require.Equal(t, res.Stats.Trace, got)
}
