package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// stopOracle wraps a problem's oracle: it cancels a context from inside
// the call (Eval or EvalExact) that makes stop true, and counts the calls
// after it. It forwards the declarations of the oracles of the suite.
type stopOracle struct {
	problems.Oracle
	stop   func(calls int, s solver.Sample) bool
	cancel context.CancelFunc
	calls  int
	fired  bool
	after  int
}

func (o *stopOracle) count(s solver.Sample) {
	o.calls++
	if o.fired {
		o.after++
	} else if o.stop(o.calls, s) {
		o.fired = true
		o.cancel()
	}
}

func (o *stopOracle) Eval(dst, x []float64, s solver.Sample) (int, error) {
	n, err := o.Oracle.Eval(dst, x, s)
	o.count(s)
	return n, err
}

func (o *stopOracle) EvalExact(dst, x []float64) error {
	err := o.Oracle.EvalExact(dst, x)
	o.count(solver.Sample{})
	return err
}

func (o *stopOracle) NoiseBound(x []float64, norm solver.Norm) float64 {
	return o.Oracle.(solver.NoiseBound).NoiseBound(x, norm)
}

func (o *stopOracle) CoordinateNoise(b, v, x []float64) bool {
	return o.Oracle.(solver.CoordinateNoiseBound).CoordinateNoise(b, v, x)
}

// TestSolveCommandCanceledFromOracle runs `deq solve` jobs, the mdp one at
// the tolerance 1e-8 that made the command run forever, and cancels the
// context from inside the oracle (at its 5th call, or for VR-GHAL at its
// first call of more than 2⁴⁰ unit samples): the job writes the report
// of its best point with status Canceled and returns an interruptedError,
// after at most one more call (the exact certificate of a deterministic
// solver's point, measured against the exact operator).
func TestSolveCommandCanceledFromOracle(t *testing.T) {
	for _, tc := range []struct {
		problem, solver string
		dim             int
		eps             float64
		stop            func(int, solver.Sample) bool
	}{
		{"affine", "anderson", 4, 1e-300, func(calls int, _ solver.Sample) bool { return calls == 5 }},
		{"mdp", "vrghal", 0, 1e-8, func(_ int, s solver.Sample) bool { return s.Size > 1<<40 }},
	} {
		t.Run(tc.solver, func(t *testing.T) {
			method, err := solver.ParseMethodSpec(tc.solver)
			require.NoError(t, err)
			f := solveFlags{problem: tc.problem, method: method, dim: tc.dim, eps: tc.eps,
				settings: solver.MethodSettings{Delta: solver.DefaultCertDelta, SampleScale: 1}, seed: 1, json: true}
			job, err := f.prepare()
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := &stopOracle{Oracle: job.problem.Oracle, stop: tc.stop, cancel: cancel}
			job.problem.Oracle = o
			var out bytes.Buffer
			err = job.report(ctx, &out)
			var it interruptedError
			require.True(t, errors.As(err, &it), "%v", err)
			require.ErrorIs(t, err, context.Canceled)
			require.True(t, o.fired)
			rep := decodeOne(t, out.String())
			require.Equal(t, "Canceled", rep["status"])
			// The residual against the exact operator costs one EvalExact;
			// a deterministic solver's certificate one more.
			require.LessOrEqual(t, o.after, 2)
		})
	}
}

// TestEveryCommandInterrupted runs each command with a canceled context
// (SIGINT or SIGTERM in main): each fails with exit status 130 and one line
// saying it was interrupted.
func TestEveryCommandInterrupted(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runCmd(tinyTrain(dir, "--epochs", "1")...)
	require.Equal(t, exitOK, code, errOut)
	ckpt := filepath.Join(dir, "run.ckpt")
	_, err := os.Stat(ckpt)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"solve", "--problem=mdp", "--solver=vrghal"},
		tinyTrain(t.TempDir()),
		{"eval", "--checkpoint", ckpt},
		{"bench", "--quick", "--only", "throughput", "--out", t.TempDir()},
	} {
		var out, errOut bytes.Buffer
		code := run(ctx, args, &out, &errOut)
		require.Equal(t, exitInterrupted, code, "%v: %s", args, errOut.String())
		requireOneLineError(t, "", errOut.String(), args)
		require.Contains(t, errOut.String(), "interrupted", args)
	}
}
