package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.Defaults()
	require.NoError(t, err)
	want := Config{
		Epochs: DefaultEpochs, BatchSize: DefaultBatchSize, EvalBatchSize: DefaultEvalBatchSize, Normalize: datasets.NormGlobal,
		LR: DefaultLR, Schedule: Cosine, ClipNorm: DefaultClipNorm, Beta1: DefaultBeta1, Beta2: DefaultBeta2,
		AdamEps: DefaultAdamEps, MaxBadBatches: DefaultMaxBadBatches,
		Model:    ModelConfig{Cell: DenseCell, Hidden: DefaultHidden, Encoder: DefaultHidden, Activation: layers.ReLU, Gamma: DefaultGamma, Norm: normSpec("l2"), ExactEvery: 1, Precision: layers.Float64},
		Forward:  DefaultForward(),
		Backward: BackwardConfig{Mode: deq.Implicit, Solver: DefaultBackwardSolver(), PhantomSteps: 5},
		Eval:     SolverConfig{Method: methodNamed("broyden"), Tol: DefaultForwardTol / 10, MaxIter: 2 * DefaultForwardIter, MethodSettings: solver.MethodSettings{Delta: DefaultDelta}},
	}
	require.Equal(t, want, c)
	again, err := c.Defaults()
	require.NoError(t, err)
	require.Equal(t, c, again, "Defaults is idempotent")

	// Cell-specific defaults.
	w, err := Config{Model: ModelConfig{Cell: MeanFieldCell, Hidden: 10}}.Defaults()
	require.NoError(t, err)
	require.Equal(t, 40, w.Model.Units)
	require.Equal(t, 10, w.Model.Encoder)
	m, err := Config{Model: ModelConfig{Cell: ExpertsCell, Hidden: 10}}.Defaults()
	require.NoError(t, err)
	require.Equal(t, DefaultTerms, m.Model.Terms)
	require.Equal(t, 10, m.Model.Encoder)
	require.Zero(t, m.Model.Units)
	cv, err := Config{Model: ModelConfig{Cell: ConvCell}}.Defaults()
	require.NoError(t, err)
	require.Equal(t, ModelConfig{Cell: ConvCell, Channels: DefaultConvChannels, Kernels: 1, Activation: layers.ReLU, Gamma: DefaultGamma,
		Norm: normSpec("l2"), ExactEvery: DefaultConvCertifyEvery, Groups: DefaultConvGroups, EncoderLayers: DefaultConvEncoderLayers,
		Precision: DefaultConvPrecision}, cv.Model)
	for _, g := range []struct{ channels, groups, want int }{{20, 0, 4}, {7, 0, 1}, {16, 0, 8}, {16, -3, -1}, {16, 2, 2}} {
		c, err := Config{Model: ModelConfig{Cell: ConvCell, Channels: g.channels, Groups: g.groups}}.Defaults()
		require.NoError(t, err)
		require.Equal(t, g.want, c.Model.Groups, "Channels %d, Groups %d", g.channels, g.groups)
	}
	require.Equal(t, DefaultConvEpochs, cv.Epochs)
	require.Equal(t, DefaultConvBatchSize, cv.BatchSize)
	require.Equal(t, DefaultConvLR, cv.LR)
	require.Equal(t, DefaultsFor(ConvCell).Forward, cv.Forward)
	require.Equal(t, DefaultsFor(ConvCell).Backward.Solver, cv.Backward.Solver)
	// The conv cell's backward mode defaults to DefaultConvBackward; an
	// explicit mode is kept, for every cell.
	require.Equal(t, DefaultConvBackward, cv.Backward.Mode)
	for _, cell := range []CellKind{DenseCell, ConvCell} {
		for _, m := range deq.Backwards() {
			d, err := Config{Model: ModelConfig{Cell: cell}, Backward: BackwardConfig{Mode: m}}.Defaults()
			require.NoError(t, err)
			require.Equal(t, m, d.Backward.Mode, "%v %v", cell, m)
		}
	}
	// Checkpoints store the resolved mode by name, so a conv checkpoint
	// written when implicit was the conv default ("Mode": "implicit")
	// resumes implicit.
	js, err := json.Marshal(cv.Backward)
	require.NoError(t, err)
	require.Contains(t, string(js), `"Mode":"jacobian-free"`)
	var legacy BackwardConfig
	require.NoError(t, json.Unmarshal([]byte(strings.Replace(string(js), "jacobian-free", "implicit", 1)), &legacy))
	lc := cv
	lc.Backward = legacy
	ld, err := lc.Defaults()
	require.NoError(t, err)
	require.Equal(t, lc, ld, "canonical")
	require.Equal(t, deq.Implicit, ld.Backward.Mode)
	require.Equal(t, methodNamed("anderson"), cv.Forward.Method)
	cv2, err := cv.Defaults()
	require.NoError(t, err)
	require.Equal(t, cv, cv2, "Defaults is idempotent")
	// The conv fields are dropped for the other cells.
	d, err := Config{Model: ModelConfig{Channels: 4, Groups: 2, Kernels: 3}}.Defaults()
	require.NoError(t, err)
	require.Equal(t, c, d)
	// The conv encoder's blocks are stored as a number: zero is the
	// default.
	for _, tc := range []struct{ layers, want int }{{0, DefaultConvEncoderLayers}, {1, 1}, {2, 2}, {3, 3}} {
		d, err := Config{Model: ModelConfig{Cell: ConvCell, EncoderLayers: tc.layers}}.Defaults()
		require.NoError(t, err)
		require.Equal(t, tc.want, d.Model.EncoderLayers, "EncoderLayers = %d", tc.layers)
	}
	// The evaluation solver inherits the forward one.
	e, err := Config{Forward: SolverConfig{Method: methodNamed("anderson"), Tol: 1e-2, MaxIter: 7, MethodSettings: solver.MethodSettings{Memory: 3}}, Eval: SolverConfig{MaxIter: 100}}.Defaults()
	require.NoError(t, err)
	require.Equal(t, SolverConfig{Method: methodNamed("anderson"), Tol: 1e-3, MaxIter: 100, MethodSettings: solver.MethodSettings{Delta: DefaultDelta, Memory: 3}}, e.Eval)
	// A negative ClipNorm (no clipping) is kept.
	n, err := Config{ClipNorm: -1}.Defaults()
	require.NoError(t, err)
	require.Equal(t, -1.0, n.ClipNorm)
}

func TestConfigErrorsNameTheField(t *testing.T) {
	var baseline solver.MethodSpec
	for _, m := range solver.MethodSpecs() {
		if m.Info().Baseline {
			baseline = m
		}
	}
	require.False(t, baseline.IsZero())
	for _, tc := range []struct {
		c     Config
		field string
	}{
		{Config{Epochs: -1}, "Epochs"},
		{Config{BatchSize: -1}, "BatchSize"},
		{Config{LR: -1}, "LR"},
		{Config{WeightDecay: -1}, "WeightDecay"},
		{Config{Beta1: 1}, "Beta1"},
		{Config{Beta2: -0.5}, "Beta2"},
		{Config{MaxBadBatches: -2}, "MaxBadBatches"},
		{Config{Schedule: Schedule(3)}, "Schedule"},
		{Config{Normalize: -1}, "Normalize"},
		{Config{Model: ModelConfig{Cell: CellKind(4)}}, "Model.Cell"},
		{Config{Model: ModelConfig{Cell: ConvCell, Hidden: 8}}, "Model.Hidden"},
		{Config{Model: ModelConfig{Cell: ConvCell, Encoder: 8}}, "Model.Encoder"},
		{Config{Model: ModelConfig{Cell: ConvCell, Channels: 6, Groups: 4}}, "Model.Groups"},
		{Config{Model: ModelConfig{Cell: ConvCell, Kernels: -1}}, "Model.Kernels"},
		{Config{Model: ModelConfig{Cell: ConvCell, EncoderLayers: -1}}, "Model.EncoderLayers"},
		{Config{Model: ModelConfig{EncoderLayers: 2}}, "Model.EncoderLayers"},
		{Config{Model: ModelConfig{Cell: MeanFieldCell, EncoderLayers: 1}}, "Model.EncoderLayers"},
		{Config{Model: ModelConfig{Channels: -1}}, "Model.Channels"},
		{Config{Model: ModelConfig{Gamma: 1}}, "Model.Gamma"},
		{Config{Model: ModelConfig{Hidden: -4}}, "Model.Hidden"},
		{Config{Model: ModelConfig{Activation: layers.Activation(5)}}, "Model.Activation"},
		{Config{Model: ModelConfig{Cell: ExpertsCell, Terms: -3}}, "Model.Terms"},
		{Config{Model: ModelConfig{Cell: MeanFieldCell, Units: -1}}, "Model.Units"},
		{Config{Forward: SolverConfig{Method: baseline}}, "Forward.Method"},
		{Config{Model: ModelConfig{Norm: solver.NormSpec{Kind: solver.NormLP, P: 1}}}, "Model.Norm"},
		{Config{Model: ModelConfig{Norm: solver.NormSpec{Kind: 9}}}, "Model.Norm"},
		{Config{Forward: SolverConfig{Tol: -1}}, "Forward.Tol"},
		{Config{Backward: BackwardConfig{Mode: deq.Backward(7)}}, "Backward.Mode"},
		{Config{Backward: BackwardConfig{Mode: -1}}, "Backward.Mode"},
		{Config{Backward: BackwardConfig{Solver: SolverConfig{MethodSettings: solver.MethodSettings{Delta: 1}}}}, "Backward.Solver.Delta"},
		{Config{Eval: SolverConfig{MaxIter: -1}}, "Eval.MaxIter"},
		{Config{Split: -1}, "Split"},
		{Config{Split: 2, Model: ModelConfig{Cell: MeanFieldCell}}, "Split"},
		{Config{Split: 2, Aids: AidsConfig{CorrectionStates: 2}}, "Split"},
	} {
		_, err := tc.c.Defaults()
		require.ErrorContains(t, err, "Config."+tc.field)
		var fe *FieldError
		require.True(t, errors.As(err, &fe), "%v", err)
		require.Equal(t, tc.field, fe.Field)
	}
}

func TestParseNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func(string) (any, error)
		good  []string
		bad   []string
	}{
		{"cell", func(s string) (any, error) { return ParseCellKind(s) }, []string{"dense", "meanfield", "experts", "conv"}, []string{"convolution", "", "Dense", "wide", "mixture"}},
		{"schedule", func(s string) (any, error) { return ParseSchedule(s) }, []string{"cosine", "step", "constant"}, []string{"linear", ""}},
		{"normalization", func(s string) (any, error) { return datasets.ParseNormalization(s) }, []string{"global", "per-pixel", "none", ""}, []string{"minmax", "Global"}},
		{"backward", func(s string) (any, error) { return deq.ParseBackward(s) }, []string{"implicit", "jacobian-free", "phantom", ""}, []string{"jfb", "deq.Implicit", "default"}},
	} {
		for _, s := range tc.good {
			v, err := tc.parse(s)
			require.NoError(t, err, "%s %q", tc.name, s)
			require.Equal(t, s, v.(interface{ String() string }).String(), "%s %q", tc.name, s)
			b, err := json.Marshal(v)
			require.NoError(t, err)
			require.JSONEq(t, `"`+s+`"`, string(b))
		}
		for _, s := range tc.bad {
			_, err := tc.parse(s)
			require.Error(t, err, "%s %q", tc.name, s)
		}
	}
	for old, now := range map[string]string{"wide": "meanfield", "mixture": "experts"} {
		_, err := ParseCellKind(old)
		require.ErrorIs(t, err, ErrUnknownName)
		require.ErrorContains(t, err, fmt.Sprintf("replaced by %q", now))
	}
	var names []string
	for _, m := range Methods() {
		names = append(names, m.String())
	}
	var want []string
	for _, m := range solver.Methods() {
		if !m.Baseline {
			want = append(want, m.Name)
		}
	}
	require.Equal(t, want, names, "Methods are the registry's non-baselines")
	// Unknown names are refused with ErrUnknownName.
	_, err := ParseCellKind("convolution")
	require.ErrorIs(t, err, ErrUnknownName)
	// A norm builds the solver's norm for a shape, as ParseNorm does.
	for _, s := range []string{"l2", "lp:3", "linf", "schatten:3"} {
		got, err := normSpec(s).Norm(2, 5)
		require.NoError(t, err)
		want, err := solver.ParseNorm(s, 2, 5)
		require.NoError(t, err)
		require.Equal(t, want, got, s)
	}
}

// goldenConfigs are the configurations of testdata/configs.golden.json,
// whose JSON the string-typed Config wrote before the enumerations became
// typed values.
func goldenConfigs() []Config {
	return []Config{
		{},
		{Seed: 7, Normalize: datasets.NormPerPixel, Schedule: Step, ClipNorm: -1, Model: ModelConfig{Cell: MeanFieldCell, Hidden: 10, Activation: layers.Tanh, Norm: normSpec("lp:4")}, Forward: SolverConfig{Method: methodNamed("anderson"), MethodSettings: solver.MethodSettings{Memory: 3}}, Backward: BackwardConfig{Mode: deq.JacobianFree}},
		{Normalize: datasets.NormNone, Schedule: Constant, Model: ModelConfig{Cell: ExpertsCell, Hidden: 10, Terms: 4, Norm: normSpec("schatten:3")}, Forward: SolverConfig{Method: methodNamed("vrghal"), Tol: 0.05, MethodSettings: solver.MethodSettings{SampleScale: 0.01}}, Backward: BackwardConfig{Mode: deq.Phantom, PhantomSteps: 3}, Eval: SolverConfig{Method: methodNamed("picard")}},
		{Model: ModelConfig{Norm: normSpec("linf")}, Backward: BackwardConfig{Solver: SolverConfig{Method: methodNamed("vrghal"), MethodSettings: solver.MethodSettings{Delta: 0.1}}}, Eval: SolverConfig{Method: methodNamed("ghal")}},
		{Model: ModelConfig{Norm: normSpec("l2")}, Forward: SolverConfig{Method: methodNamed("km")}, Eval: SolverConfig{Method: methodNamed("halpern")}},
	}
}

// TestConfigJSONIsUnchanged: the canonical JSON of goldenConfigs is the
// golden file's but for the explicit precision that Defaults stores since
// the Precision type ("Precision": "float64" after ExactEvery: all of them
// are vector cells), and the golden JSON, in which the precision is
// absent (layers.Float64 was the zero value), decodes to configurations whose
// canonical form is the same.
func TestConfigJSONIsUnchanged(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "configs.golden.json"))
	require.NoError(t, err)
	var out []Config
	for _, c := range goldenConfigs() {
		d, err := c.Defaults()
		require.NoError(t, err)
		require.Equal(t, layers.Float64, d.Model.Precision)
		out = append(out, d)
	}
	b, err := json.MarshalIndent(out, "", "\t")
	require.NoError(t, err)
	const precision = `"ExactEvery": 1,` + "\n\t\t\t" + `"Precision": "float64"` + "\n"
	require.Equal(t, len(out), strings.Count(string(b), precision))
	require.Equal(t, string(golden), strings.ReplaceAll(string(b), precision, `"ExactEvery": 1`+"\n")+"\n")
	// And the golden JSON decodes to configurations that Defaults turns
	// into the same ones (the JSON of the current ones decodes to them).
	var back []Config
	require.NoError(t, json.Unmarshal(golden, &back))
	for i := range back {
		require.Equal(t, layers.DefaultPrecision, back[i].Model.Precision)
		back[i], err = back[i].Defaults()
		require.NoError(t, err)
	}
	require.Equal(t, out, back)
	back = nil
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, out, back)
}

// TestLoadsCheckpointOfStringConfig loads a checkpoint written before the
// Config's enumerations became typed values (a one-epoch run of tinyConfig
// in lp:3): its configuration decodes and encodes to the same JSON, and the
// run resumes.
func TestLoadsCheckpointOfStringConfig(t *testing.T) {
	path := filepath.Join("testdata", "v1-before-typed-config.ckpt")
	ck, err := Load(path)
	require.NoError(t, err)
	want := tinyConfig()
	want.Epochs = 1
	want.Model.Norm = normSpec("lp:3")
	want, err = want.Defaults()
	require.NoError(t, err)
	require.Equal(t, want, ck.Config)
	require.Empty(t, want.Diff(ck.Config))

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var m struct {
		Config json.RawMessage `json:"config"`
	}
	ml := int(b[16]) | int(b[17])<<8 | int(b[18])<<16
	require.NoError(t, json.Unmarshal(b[headerLen:headerLen+ml], &m))
	again, err := json.Marshal(ck.Config)
	require.NoError(t, err)
	// The same JSON but for the explicit precision, which the checkpoint
	// omits (layers.Float64 was the zero value then).
	require.Equal(t, string(m.Config), strings.Replace(string(again), `,"Precision":"float64"`, "", 1))

	tr, te := blobData(128, 50)
	trn, err := ck.Resume(tr, te, nil)
	require.NoError(t, err)
	ep, _ := trn.Position()
	require.Equal(t, 1, ep, "the run is complete")
}

func TestConfigDiff(t *testing.T) {
	a, err := Config{}.Defaults()
	require.NoError(t, err)
	require.Empty(t, a.Diff(a))
	b := a
	b.Seed = 9
	b.Model.Norm = normSpec("linf")
	b.Backward.Solver.Method = methodNamed("anderson")
	b.Schedule = Step
	b.Forward.Memory = 7
	require.Equal(t, []FieldDiff{
		{"Seed", uint64(0), uint64(9)},
		{"Schedule", Cosine, Step},
		{"Model.Norm", solver.NormSpec{}, normSpec("linf")},
		{"Forward.Memory", 0, 7}, // an embedded solver.MethodSettings field, as promoted
		{"Backward.Solver.Method", methodNamed("broyden"), methodNamed("anderson")},
	}, a.Diff(b))
}

// TestSolverConfigJSON: a SolverConfig spells the solver.MethodSettings it
// embeds as its own fields, in the order of the checkpoints' JSON, and
// every method a SolverConfig accepts round-trips through it.
func TestSolverConfigJSON(t *testing.T) {
	for _, m := range Methods() {
		s := SolverConfig{Method: m, Tol: 0.5, MaxIter: 7, MethodSettings: solver.MethodSettings{Delta: 0.1, SampleScale: 2, Memory: 3}}
		b, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, `{"Method":"`+m.String()+`","Tol":0.5,"MaxIter":7,"Delta":0.1,"SampleScale":2,"Memory":3}`, string(b))
		var back SolverConfig
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, s, back)
	}
}

// TestForwardToleranceMode checks the forward tolerance's mode: absolute
// by default, relative to the start point's residual with
// Forward.Relative, which the evaluation inherits; the layers the
// Trainer builds pass it to the solver.
func TestForwardToleranceMode(t *testing.T) {
	tr, te := blobData(64, 20)
	for _, rel := range []bool{false, true} {
		cfg := tinyConfig()
		cfg.Forward.Relative = rel
		d, err := cfg.Defaults()
		require.NoError(t, err)
		require.Equal(t, rel, d.Forward.Relative)
		require.Equal(t, rel, d.Eval.Relative, "Eval inherits the forward's mode")
		trn, err := New(cfg, tr, te, nil)
		require.NoError(t, err)
		require.Equal(t, rel, trn.layer.Settings().ForwardSettings.Relative)
		require.Equal(t, rel, trn.evalLayer.Settings().ForwardSettings.Relative)
		require.True(t, trn.layer.Settings().AdjointSettings.Relative, "the adjoint tolerance is always relative")
	}
}

// TestBackwardModeSettings: the training layer runs every backward mode of
// package deq with the settings of BackwardConfig (the phantom steps, the
// adjoint method and its budget), and the evaluation layer, which makes no
// backward pass, with the forward settings only.
func TestBackwardModeSettings(t *testing.T) {
	tr, te := blobData(64, 20)
	for _, mode := range deq.Backwards() {
		cfg := tinyConfig()
		cfg.Backward = BackwardConfig{Mode: mode, PhantomSteps: 3,
			Solver: SolverConfig{Method: methodNamed("anderson"), MaxIter: 40, MethodSettings: solver.MethodSettings{Memory: 4}}}
		trn, err := New(cfg, tr, te, nil)
		require.NoError(t, err, "%v", mode)
		s := trn.layer.Settings()
		require.Equal(t, mode, s.Backward)
		require.Equal(t, 3, s.PhantomSteps, "%v", mode)
		require.Equal(t, solver.Anderson{Memory: 4}, s.Adjoint, "%v", mode)
		require.Equal(t, 40, s.AdjointSettings.MaxIter, "%v", mode)
		require.True(t, s.AdjointSettings.Certify.Skip, "%v: the adjoint's certificate is skipped", mode)
	}
}

func TestAugmentDefaults(t *testing.T) {
	for _, tc := range []struct {
		cell       CellKind
		shift, out int
	}{
		{DenseCell, 0, 0}, {DenseCell, -3, 0}, {DenseCell, 2, 2},
		{ConvCell, 0, DefaultConvShift}, {ConvCell, -3, -1}, {ConvCell, 2, 2},
	} {
		c, err := Config{Model: ModelConfig{Cell: tc.cell}, Augment: AugmentConfig{Shift: tc.shift}}.Defaults()
		require.NoError(t, err)
		require.Equal(t, tc.out, c.Augment.Shift, "%v cell, Shift %d", tc.cell, tc.shift)
		again, err := c.Defaults()
		require.NoError(t, err)
		require.Equal(t, c, again, "Defaults is idempotent")
	}
	require.Equal(t, DefaultConvShift, DefaultsFor(ConvCell).Augment.Shift)
	require.Zero(t, DefaultsFor(DenseCell).Augment.Shift)
}

// TestDataAugment: the conv cell mirrors Fashion-MNIST's training images
// and translates them as it does every data set's; nothing else mirrors.
func TestDataAugment(t *testing.T) {
	for _, tc := range []struct {
		cell CellKind
		data string
		want AugmentConfig
	}{
		{ConvCell, datasets.FashionMNIST, AugmentConfig{Shift: DefaultConvShift, Flip: true}},
		{ConvCell, datasets.MNIST, AugmentConfig{Shift: DefaultConvShift}},
		{ConvCell, datasets.MNIST10k, AugmentConfig{Shift: DefaultConvShift}},
		{ConvCell, datasets.KMNIST, AugmentConfig{Shift: DefaultConvShift}},
		{ConvCell, "some/idx/dir", AugmentConfig{Shift: DefaultConvShift}},
		{DenseCell, datasets.FashionMNIST, AugmentConfig{}},
		{MeanFieldCell, datasets.FashionMNIST, AugmentConfig{}},
	} {
		require.Equal(t, tc.want, DataAugment(tc.cell, tc.data), "%v on %s", tc.cell, tc.data)
	}
}

// TestNewFieldsJSON pins the JSON spelling of the fields added after the
// golden file (the hidden readout, the conv encoder's layers, the
// rotations, scalings and mirroring), which checkpoints store, and that
// they are omitted when zero.
func TestNewFieldsJSON(t *testing.T) {
	c := Config{Model: ModelConfig{ReadoutHidden: 16, EncoderLayers: 2, Precision: layers.Float32}, Augment: AugmentConfig{Rotate: 10, Scale: 0.125, Flip: true}}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	for _, want := range []string{`"ReadoutHidden":16`, `"EncoderLayers":2`, `"Precision":"float32"`, `"Augment":{"Rotate":10,"Scale":0.125,"Flip":true}`} {
		require.Contains(t, string(b), want)
	}
	var back Config
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, c, back)
	b, err = json.Marshal(Config{})
	require.NoError(t, err)
	for _, absent := range []string{`"ReadoutHidden"`, `"EncoderLayers"`, `"Precision"`, `"Rotate"`, `"Scale"`, `"Augment"`} {
		require.NotContains(t, string(b), absent)
	}
}
