package train

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.Defaults()
	require.NoError(t, err)
	want := Config{
		Epochs: DefaultEpochs, BatchSize: DefaultBatchSize, EvalBatchSize: DefaultEvalBatchSize, Normalize: "global",
		LR: DefaultLR, Schedule: "cosine", ClipNorm: DefaultClipNorm, Beta1: DefaultBeta1, Beta2: DefaultBeta2,
		AdamEps: DefaultAdamEps, MaxBadBatches: DefaultMaxBadBatches,
		Model:    ModelConfig{Cell: "dense", Hidden: DefaultHidden, Encoder: DefaultHidden, Activation: "relu", Gamma: DefaultGamma, Norm: "l2", ExactEvery: 1},
		Forward:  DefaultForward(),
		Backward: BackwardConfig{Mode: "implicit", Solver: DefaultBackwardSolver(), PhantomSteps: 5},
		Eval:     SolverConfig{Method: "broyden", Tol: DefaultForwardTol / 10, MaxIter: 2 * DefaultForwardIter, Delta: DefaultDelta},
	}
	require.Equal(t, want, c)
	again, err := c.Defaults()
	require.NoError(t, err)
	require.Equal(t, c, again, "Defaults is idempotent")

	// Cell-specific defaults.
	w, err := Config{Model: ModelConfig{Cell: "wide", Hidden: 10}}.Defaults()
	require.NoError(t, err)
	require.Equal(t, 40, w.Model.Units)
	require.Equal(t, 10, w.Model.Encoder)
	m, err := Config{Model: ModelConfig{Cell: "mixture", Hidden: 10, Terms: 4}}.Defaults()
	require.NoError(t, err)
	require.Equal(t, 12, m.Model.Encoder, "rounded up to a multiple of Terms")
	// The evaluation solver inherits the forward one.
	e, err := Config{Forward: SolverConfig{Method: "anderson", Tol: 1e-2, MaxIter: 7, Memory: 3}, Eval: SolverConfig{MaxIter: 100}}.Defaults()
	require.NoError(t, err)
	require.Equal(t, SolverConfig{Method: "anderson", Tol: 1e-3, MaxIter: 100, Delta: DefaultDelta, Memory: 3}, e.Eval)
	// A negative ClipNorm (no clipping) is kept.
	n, err := Config{ClipNorm: -1}.Defaults()
	require.NoError(t, err)
	require.Equal(t, -1.0, n.ClipNorm)
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		c     Config
		field string
	}{
		{Config{Epochs: -1}, "Config.Epochs"},
		{Config{BatchSize: -1}, "Config.BatchSize"},
		{Config{LR: -1}, "Config.LR"},
		{Config{WeightDecay: -1}, "Config.WeightDecay"},
		{Config{Beta1: 1}, "Config.Beta1"},
		{Config{Beta2: -0.5}, "Config.Beta2"},
		{Config{MaxBadBatches: -2}, "Config.MaxBadBatches"},
		{Config{Schedule: "linear"}, "Config.Schedule"},
		{Config{Normalize: "z"}, "Config.Normalize"},
		{Config{Model: ModelConfig{Cell: "conv"}}, "Config.Model.Cell"},
		{Config{Model: ModelConfig{Gamma: 1}}, "Config.Model.Gamma"},
		{Config{Model: ModelConfig{Hidden: -4}}, "Config.Model.Hidden"},
		{Config{Model: ModelConfig{Norm: "l1"}}, "Config.Model.Norm"},
		{Config{Model: ModelConfig{Activation: "gelu"}}, "Config.Model.Activation"},
		{Config{Model: ModelConfig{Cell: "mixture", Terms: 3, Encoder: 7}}, "Config.Model.Encoder"},
		{Config{Forward: SolverConfig{Method: "newton"}}, "Config.Forward.Method"},
		{Config{Forward: SolverConfig{Tol: -1}}, "Config.Forward.Tol"},
		{Config{Backward: BackwardConfig{Mode: "unrolled"}}, "Config.Backward.Mode"},
		{Config{Backward: BackwardConfig{Solver: SolverConfig{Delta: 1}}}, "Config.Backward.Solver.Delta"},
		{Config{Eval: SolverConfig{MaxIter: -1}}, "Config.Eval.MaxIter"},
	} {
		_, err := tc.c.Defaults()
		require.ErrorContains(t, err, tc.field)
	}
}
