package train

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
)

// writeFixtures rewrites the checkpoints of testdata/fixtures and their
// recorded evaluations (go test -run TestCheckpointFixtures
// -write-fixtures). The files pin the checkpoint format: checkpoints of
// every cell kind under several settings must keep loading to the same
// configuration and model.
var writeFixtures = flag.Bool("write-fixtures", false, "rewrite testdata/fixtures")

// fixture is a one-epoch run whose checkpoint is kept in testdata/fixtures.
type fixture struct {
	name string
	cfg  Config // as the run was configured (Load returns its Defaults)
	conv bool   // trained on squares rather than blobs
}

// fixtureData returns the training and test sets of a fixture.
func (f fixture) data() (train, test *datasets.Dataset) {
	if f.conv {
		return squares("squares/train", 32, 8, 1), squares("squares/test", 16, 8, 2)
	}
	return blobData(64, 30)
}

// fixtures are the runs of testdata/fixtures: every cell kind, the
// methods, norms, backward modes, precisions and normalisations of the
// configuration.
func fixtures() []fixture {
	base := tinyConfig()
	base.Epochs = 1

	dense := base
	dense.Normalize = datasets.NormPerPixel
	dense.Schedule = Step
	dense.Model.Norm = normSpec("linf")
	dense.Model.Precision = layers.Float32
	dense.Forward = SolverConfig{Method: methodNamed("anderson"), Memory: 3}
	dense.Backward = BackwardConfig{Mode: deq.Phantom, PhantomSteps: 3}

	spectral := base
	spectral.Model.Normalization = layers.SpectralNorm
	spectral.Model.Activation = layers.Tanh
	spectral.Forward = SolverConfig{Method: methodNamed("ghal"), Tol: 1e-4, MaxIter: 200}
	spectral.Backward = BackwardConfig{Mode: deq.Implicit, Solver: SolverConfig{Method: methodNamed("picard"), MaxIter: 60}}
	spectral.Eval = SolverConfig{Method: methodNamed("km"), Relative: true}

	meanfield := base
	meanfield.Normalize = datasets.NormNone
	meanfield.Model.Cell = MeanFieldCell
	meanfield.Model.Units = 12
	meanfield.Model.Norm = normSpec("lp:3")
	meanfield.Forward = SolverConfig{Method: methodNamed("vrghal"), Tol: 0.05, MaxIter: 6, SampleScale: 0.05}
	meanfield.Backward = BackwardConfig{Mode: deq.JacobianFree}
	meanfield.Eval = SolverConfig{Method: methodNamed("broyden")}

	experts := base
	experts.Schedule = Constant
	experts.Model.Cell = ExpertsCell
	experts.Model.Terms = 3
	experts.Model.Norm = normSpec("schatten:2")
	experts.Forward = SolverConfig{Method: methodNamed("halpern"), MaxIter: 80}
	experts.Backward = BackwardConfig{Solver: SolverConfig{Method: methodNamed("anderson")}}

	conv := base
	conv.BatchSize, conv.LR = 16, 0.02
	conv.Model = ModelConfig{Cell: ConvCell, Channels: 4}

	conv64 := conv
	conv64.Model = ModelConfig{Cell: ConvCell, Channels: 4, Groups: -1, Kernels: 2, EncoderLayers: 2, ReadoutHidden: 5}
	conv64.Backward = BackwardConfig{Mode: deq.Implicit}
	conv64.Forward = SolverConfig{Method: methodNamed("broyden")}
	conv64.Augment = AugmentConfig{Shift: -1}

	return []fixture{
		{name: "dense-linf-anderson-phantom-float32", cfg: dense},
		{name: "dense-spectral-ghal-implicit", cfg: spectral},
		{name: "meanfield-lp3-vrghal-jacobian-free", cfg: meanfield},
		{name: "experts-schatten2-halpern-implicit", cfg: experts},
		{name: "conv-defaults", cfg: conv, conv: true},
		{name: "conv-float64-implicit-kernels", cfg: conv64, conv: true},
	}
}

// fixtureEval is what a fixture records of its model: the evaluation of
// the test set under the run's Eval solver.
type fixtureEval struct {
	Examples int     `json:"examples"`
	Correct  int     `json:"correct"`
	Loss     float64 `json:"loss"`
	// Encoded is the first row of the encoder's features of the first
	// test image, a check of the parameters independent of the solve.
	Encoded []float64 `json:"encoded"`
}

// evalFixture evaluates m on test under the solver of cfg.Eval.
func evalFixture(t *testing.T, m *Model, cfg Config, test *datasets.Dataset) fixtureEval {
	t.Helper()
	em, err := m.Evaluate(context.Background(), test, cfg.Eval, cfg.EvalBatchSize)
	require.NoError(t, err)
	e, err := m.Encode(test.Image(0), 1)
	require.NoError(t, err)
	return fixtureEval{Examples: em.Examples, Correct: em.Correct, Loss: em.Loss, Encoded: e[:min(len(e), 8)]}
}

// TestCheckpointFixtures loads the checkpoints of testdata/fixtures,
// written by the build the format was pinned at: each loads to the
// Defaults of its run's configuration, and its model evaluates the test
// set to the recorded counts and loss (up to rounding) and encodes to the
// recorded features.
func TestCheckpointFixtures(t *testing.T) {
	dir := filepath.Join("testdata", "fixtures")
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			tr, te := f.data()
			ckpt := filepath.Join(dir, f.name+".ckpt")
			golden := filepath.Join(dir, f.name+".json")
			if *writeFixtures {
				require.NoError(t, os.MkdirAll(dir, 0o755))
				trn, err := New(f.cfg, tr, te, &Options{Checkpoint: ckpt})
				require.NoError(t, err)
				_, err = trn.Run(context.Background())
				require.NoError(t, err)
				ev := evalFixture(t, trn.Model(), trn.Config(), te)
				b, err := json.MarshalIndent(ev, "", "\t")
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(golden, append(b, '\n'), 0o644))
			}
			ck, err := Load(ckpt)
			require.NoError(t, err)
			want, err := f.cfg.Defaults()
			require.NoError(t, err)
			require.Equal(t, want, ck.Config)
			require.Empty(t, want.Diff(ck.Config))
			require.Equal(t, 1, ck.Epoch)

			b, err := os.ReadFile(golden)
			require.NoError(t, err)
			var rec fixtureEval
			require.NoError(t, json.Unmarshal(b, &rec))
			got := evalFixture(t, ck.Model, ck.Config, te)
			require.Equal(t, rec.Examples, got.Examples)
			require.Equal(t, rec.Correct, got.Correct)
			require.InEpsilon(t, rec.Loss, got.Loss, 1e-9)
			require.Len(t, got.Encoded, len(rec.Encoded))
			for i := range rec.Encoded {
				require.InDelta(t, rec.Encoded[i], got.Encoded[i], 1e-12*(1+abs(rec.Encoded[i])), "encoded[%d]", i)
			}

			// The loaded run resumes and re-saves the same bytes.
			trn, err := ck.Resume(tr, te, nil)
			require.NoError(t, err)
			again := tempPath(t, "again.ckpt")
			require.NoError(t, trn.Save(again))
			b1, err := os.ReadFile(ckpt)
			require.NoError(t, err)
			b2, err := os.ReadFile(again)
			require.NoError(t, err)
			require.True(t, equalBytes(b1, b2), "re-saved as written")
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
