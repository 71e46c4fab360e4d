package train

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// TestFloat32TrainsAsFloat64 trains the dense model on blobs and the conv
// model on squares twice from the same seed, with float64 and with float32
// cell products, and requires the float32 run to reach the float64 run's
// level: the accuracy the tests of the float64 models require
// (TestTrainLearnsBlobs, TestConvModelTrainsAndResumes), a falling
// training loss, and a test accuracy within a fixed distance of the
// float64 run's: 3√(2p(1 − p)/n) for accuracy p on n test examples (with
// p(1 − p) at least 1/n, so that a perfect run allows an example), the
// spread three standard errors would allow between two independently
// trained models of the same quality. It is a yardstick, not a
// probability: both runs are deterministic (the same seed and data), and
// differ only through float32 rounding along the training path.
func TestFloat32TrainsAsFloat64(t *testing.T) {
	dense := tinyConfig()
	dense.Epochs = 4
	dense.Model.Precision = layers.Float64
	blobTrain, blobTest := blobData(512, 150)
	for _, tc := range []struct {
		name    string
		cfg     Config
		tr, te  *datasets.Dataset
		minimum float64
	}{
		{"dense-blobs", dense, blobTrain, blobTest, bayesAccuracy(blobTest) - 0.05},
		{"conv-squares", Config{Seed: 5, Epochs: 3, BatchSize: 16, LR: 0.02, Model: ModelConfig{Cell: ConvCell, Channels: 4, Precision: layers.Float64}},
			squares("squares/train", 128, 8, 1), squares("squares/test", 40, 8, 2), 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := run(t, tc.cfg, tc.tr, tc.te, tempPath(t, "float64.ckpt"))
			cfg := tc.cfg
			cfg.Model.Precision = layers.Float32
			got, _ := run(t, cfg, tc.tr, tc.te, tempPath(t, "float32.ckpt"))
			w, g := want.Final(), got.Final()
			t.Logf("test accuracy float64 %.3f, float32 %.3f; train loss float64 %.9f, float32 %.9f", w.TestAcc, g.TestAcc, w.TrainLoss, g.TrainLoss)
			require.GreaterOrEqual(t, w.TestAcc, tc.minimum)
			require.GreaterOrEqual(t, g.TestAcc, tc.minimum)
			require.Less(t, g.TrainLoss, got.Epochs[0].TrainLoss)
			p := w.TestAcc
			se := math.Sqrt(2 * max(p*(1-p), 1/float64(tc.te.Len())) / float64(tc.te.Len()))
			require.InDelta(t, w.TestAcc, g.TestAcc, 3*se)
		})
	}
}

// TestPrecisionErrorsNameTheField: a precision that is not one, or float32
// for a cell that has no float32 products, is refused naming the field.
func TestPrecisionErrorsNameTheField(t *testing.T) {
	for _, m := range []ModelConfig{
		{Precision: layers.Precision(3)},
		{Precision: layers.Precision(-1)},
		{Cell: MeanFieldCell, Precision: layers.Float32},
		{Cell: ExpertsCell, Precision: layers.Float32},
	} {
		_, err := Config{Model: m}.Defaults()
		var fe *FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "Model.Precision", fe.Field)
	}
	for _, cell := range []CellKind{DenseCell, ConvCell} {
		for _, p := range layers.Precisions() {
			d, err := Config{Model: ModelConfig{Cell: cell, Precision: p}}.Defaults()
			require.NoError(t, err)
			require.Equal(t, p, d.Model.Precision, "%v cell", cell)
		}
	}
}

// TestDefaultPrecision: Defaults resolves layers.DefaultPrecision to an explicit
// precision — DefaultConvPrecision for the conv cell, layers.Float64 for the
// others and for a conv run whose forward, implicit adjoint or evaluation
// method needs a proven Lipschitz bound — and keeps an explicit one.
func TestDefaultPrecision(t *testing.T) {
	solve := func(name string) SolverConfig { return SolverConfig{Method: methodNamed(name)} }
	provable := ModelConfig{Cell: ConvCell, Groups: -1}
	schatten2, err := solver.ParseNormSpec("schatten:2")
	require.NoError(t, err)
	linf, err := solver.ParseNormSpec("linf")
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		cfg  Config
		want layers.Precision
	}{
		{"dense", Config{}, layers.Float64},
		{"meanfield", Config{Model: ModelConfig{Cell: MeanFieldCell}}, layers.Float64},
		{"experts", Config{Model: ModelConfig{Cell: ExpertsCell}, Forward: solve("vrghal")}, layers.Float64},
		{"dense-float32", Config{Model: ModelConfig{Precision: layers.Float32}}, layers.Float32},
		{"conv", Config{Model: ModelConfig{Cell: ConvCell}}, DefaultConvPrecision},
		{"conv-float64", Config{Model: ModelConfig{Cell: ConvCell, Precision: layers.Float64}}, layers.Float64},
		{"conv-broyden-picard", Config{Model: ModelConfig{Cell: ConvCell}, Forward: solve("broyden"), Backward: BackwardConfig{Solver: solve("picard")}}, DefaultConvPrecision},
		// A cell that proves its bound in float64 (no GroupNorm, the
		// projection, ℓ2 or Schatten-2) keeps float32 products for the
		// forward and evaluation solvers that need the bound (they are
		// certified on the float64 map), and takes layers.Float64 for an
		// adjoint solver that needs it.
		{"conv-forward-vrghal", Config{Model: provable, Forward: solve("vrghal"), Eval: solve("anderson")}, DefaultConvPrecision},
		{"conv-forward-ghal", Config{Model: provable, Forward: solve("ghal"), Eval: solve("anderson")}, DefaultConvPrecision},
		{"conv-growing-batch", Config{Model: provable, Forward: solve("growing-batch"), Eval: solve("anderson")}, DefaultConvPrecision},
		{"conv-eval-ghal", Config{Model: provable, Eval: solve("ghal")}, DefaultConvPrecision},
		{"conv-backward-vrghal", Config{Model: provable, Backward: BackwardConfig{Mode: deq.Implicit, Solver: solve("vrghal")}}, layers.Float64},
		// The conv default mode (Jacobian-free) makes no adjoint solve.
		{"conv-default-backward-vrghal", Config{Model: provable, Backward: BackwardConfig{Solver: solve("vrghal")}}, DefaultConvPrecision},
		{"conv-schatten2-ghal", Config{Model: ModelConfig{Cell: ConvCell, Groups: -1, Norm: schatten2}, Forward: solve("ghal")}, DefaultConvPrecision},
		{"conv-schatten2-backward-ghal", Config{Model: ModelConfig{Cell: ConvCell, Groups: -1, Norm: schatten2}, Backward: BackwardConfig{Mode: deq.Implicit, Solver: solve("ghal")}}, layers.Float64},
		// A cell that proves nothing in either precision keeps layers.Float32.
		{"conv-groupnorm-ghal", Config{Model: ModelConfig{Cell: ConvCell}, Forward: solve("ghal")}, DefaultConvPrecision},
		{"conv-weightnorm-ghal", Config{Model: ModelConfig{Cell: ConvCell, Groups: -1, Normalization: layers.WeightNorm}, Forward: solve("ghal")}, DefaultConvPrecision},
		{"conv-linf-ghal", Config{Model: ModelConfig{Cell: ConvCell, Groups: -1, Norm: linf}, Forward: solve("ghal")}, DefaultConvPrecision},
		// The adjoint solver runs only in implicit mode.
		{"conv-jacobian-free-vrghal", Config{Model: provable, Backward: BackwardConfig{Mode: deq.JacobianFree, Solver: solve("vrghal")}}, DefaultConvPrecision},
		// An explicit precision is kept.
		{"conv-float32-ghal", Config{Model: ModelConfig{Cell: ConvCell, Precision: layers.Float32}, Forward: solve("ghal")}, layers.Float32},
	} {
		d, err := tc.cfg.Defaults()
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, d.Model.Precision, tc.name)
		again, err := d.Defaults()
		require.NoError(t, err, tc.name)
		require.Equal(t, d, again, "%s: Defaults is idempotent", tc.name)
	}
	require.Equal(t, layers.Float32, DefaultConvPrecision)
}

// TestDefaultPrecisionProvenSolvers: a conv cell without GroupNorm, in ℓ2,
// trains with the solvers that need its proven bound: forward and
// evaluation ones in float32, certified on the float64 map (the model is
// proven and CertifiesFloat64), at the default precision or an explicit
// layers.Float32; an adjoint one at the default precision, then
// layers.Float64, while with an explicit layers.Float32 it is refused
// naming the method's field, as on any conv cell whose bound is not
// proven.
func TestDefaultPrecisionProvenSolvers(t *testing.T) {
	tr, te := squares("squares/train", 32, 6, 1), squares("squares/test", 8, 6, 2)
	for _, tc := range []struct {
		name      string
		set       func(c *Config)
		precision layers.Precision
		field     string           // of the refusal; "" when accepted
		want      layers.Precision // when accepted
	}{
		{"vrghal", func(c *Config) {
			c.Forward = SolverConfig{Method: methodNamed("vrghal"), Tol: 0.2, MaxIter: 3, MethodSettings: solver.MethodSettings{SampleScale: 0.005}}
		}, layers.DefaultPrecision, "", layers.Float32},
		{"ghal", func(c *Config) { c.Forward = SolverConfig{Method: methodNamed("ghal")} }, layers.DefaultPrecision, "", layers.Float32},
		{"eval-vrghal", func(c *Config) {
			c.Eval = SolverConfig{Method: methodNamed("vrghal"), MethodSettings: solver.MethodSettings{SampleScale: 0.005}}
		}, layers.DefaultPrecision, "", layers.Float32},
		{"backward-vrghal", func(c *Config) {
			c.Backward.Mode = deq.Implicit
			c.Backward.Solver = SolverConfig{Method: methodNamed("vrghal"), MethodSettings: solver.MethodSettings{SampleScale: 0.005}}
		}, layers.DefaultPrecision, "", layers.Float64},
		{"vrghal-float32", func(c *Config) {
			c.Forward = SolverConfig{Method: methodNamed("vrghal"), Tol: 0.2, MaxIter: 3, MethodSettings: solver.MethodSettings{SampleScale: 0.005}}
		}, layers.Float32, "", layers.Float32},
		{"eval-vrghal-float32", func(c *Config) {
			c.Eval = SolverConfig{Method: methodNamed("vrghal"), MethodSettings: solver.MethodSettings{SampleScale: 0.005}}
		}, layers.Float32, "", layers.Float32},
		{"backward-vrghal-float32", func(c *Config) {
			c.Backward.Mode = deq.Implicit
			c.Backward.Solver = SolverConfig{Method: methodNamed("vrghal"), MethodSettings: solver.MethodSettings{SampleScale: 0.005}}
		}, layers.Float32, "Backward.Solver.Method", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Seed: 5, Epochs: 1, BatchSize: 16, Model: ModelConfig{Cell: ConvCell, Channels: 2, Groups: -1, Kernels: 2, Precision: tc.precision}, Augment: AugmentConfig{Shift: -1}}
			tc.set(&cfg)
			trn, err := New(cfg, tr, te, nil)
			if tc.field != "" {
				var fe *FieldError
				require.ErrorAs(t, err, &fe)
				require.Equal(t, tc.field, fe.Field)
				require.Contains(t, fe.Reason, "Model.Precision = float32")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, trn.Config().Model.Precision)
			require.True(t, trn.Model().Proven())
			require.Equal(t, tc.want == layers.Float32, trn.Model().CertifiesFloat64())
			require.Equal(t, tc.want, trn.model.conv.Precision())
			res, err := trn.Run(context.Background())
			require.NoError(t, err)
			// Every solve certified on the float64 map evaluates it at
			// least once; the others never.
			for _, s := range []SolveSummary{res.Final().Forward, res.Final().Test} {
				if tc.want == layers.Float32 {
					require.GreaterOrEqual(t, s.Float64CallsMean, 1.0)
					require.Less(t, s.Float64CallsMean, s.CallsMean)
				} else {
					require.Zero(t, s.Float64CallsMean)
				}
			}
		})
	}
}
