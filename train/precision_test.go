package train

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/layers"
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
	blobTrain, blobTest := blobData(512, 150)
	for _, tc := range []struct {
		name    string
		cfg     Config
		tr, te  *datasets.Dataset
		minimum float64
	}{
		{"dense-blobs", dense, blobTrain, blobTest, bayesAccuracy(blobTest) - 0.05},
		{"conv-squares", Config{Seed: 5, Epochs: 3, BatchSize: 16, LR: 0.02, Model: ModelConfig{Cell: ConvCell, Channels: 4}},
			squares("squares/train", 128, 8, 1), squares("squares/test", 40, 8, 2), 0.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, _ := run(t, tc.cfg, tc.tr, tc.te, tempPath(t, "float64.ckpt"))
			cfg := tc.cfg
			cfg.Model.Precision = Float32
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
		{Precision: Precision(3)},
		{Precision: Precision(-1)},
		{Cell: MeanFieldCell, Precision: Float32},
		{Cell: ExpertsCell, Precision: Float32},
	} {
		_, err := Config{Model: m}.Defaults()
		var fe *FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, "Model.Precision", fe.Field)
	}
	for _, cell := range []CellKind{DenseCell, ConvCell} {
		for _, p := range Precisions() {
			d, err := Config{Model: ModelConfig{Cell: cell, Precision: p}}.Defaults()
			require.NoError(t, err)
			require.Equal(t, p, d.Model.Precision, "%v cell", cell)
		}
	}
}

// TestDefaultPrecision: Defaults resolves DefaultPrecision to Float64 for
// every cell, and keeps an explicit precision.
func TestDefaultPrecision(t *testing.T) {
	for _, cell := range CellKinds() {
		d, err := Config{Model: ModelConfig{Cell: cell}}.Defaults()
		require.NoError(t, err)
		require.Equal(t, Float64, d.Model.Precision, "%v cell", cell)
		again, err := d.Defaults()
		require.NoError(t, err)
		require.Equal(t, d, again, "%v cell: Defaults is idempotent", cell)
	}
}

// TestPrecisionText: the text forms of the precisions, "" being the
// default, and Layers' values.
func TestPrecisionText(t *testing.T) {
	for _, tc := range []struct {
		p      Precision
		name   string
		layers layers.Precision
	}{{DefaultPrecision, "", -1}, {Float64, "float64", layers.Float64}, {Float32, "float32", layers.Float32}, {Precision(3), "Precision(3)", -1}} {
		require.Equal(t, tc.name, tc.p.String())
		require.Equal(t, tc.layers, tc.p.Layers(), tc.name)
		if tc.p == Precision(3) {
			_, err := tc.p.MarshalText()
			require.Error(t, err)
			continue
		}
		b, err := tc.p.MarshalText()
		require.NoError(t, err)
		require.Equal(t, tc.name, string(b))
		var back Precision = 2
		require.NoError(t, back.UnmarshalText(b))
		require.Equal(t, tc.p, back)
	}
	var p Precision
	require.ErrorIs(t, p.UnmarshalText([]byte("float16")), ErrUnknownName)
	require.Equal(t, []Precision{Float64, Float32}, Precisions())
}
