package train

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
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

// squares returns n random side×side images in 3 classes (the class sets
// the mean brightness of the top half), drawn from seed.
func squares(name string, n, side int, seed uint64) *datasets.Dataset {
	rng := rand.New(rand.NewPCG(seed, 11))
	d := &datasets.Dataset{Name: name, Rows: side, Cols: side, Classes: 3, Y: make([]int, n)}
	for i := range d.Y {
		c := rng.IntN(3)
		d.Y[i] = c
		for p := range side * side {
			v := rng.Float64()
			if p < side*side/2 {
				v = 0.5*v + 0.25*float64(c)
			}
			d.X = append(d.X, v)
		}
	}
	return d
}

// stepCase is a model on which the training step is checked.
type stepCase struct {
	name        string
	model       ModelConfig
	train, test *datasets.Dataset
}

func stepCases() []stepCase {
	vec := func(cell CellKind) stepCase {
		tr, te := blobData(64, 10)
		return stepCase{cell.String(), ModelConfig{Cell: cell, Hidden: 5, Encoder: 6, Terms: 3, Units: 7, Activation: layers.Tanh, Gamma: 0.7}, tr, te}
	}
	conv := func(name string, groups, kernels int) stepCase {
		// 7×7 images: a 4×4 state whose pooling uses every pixel, and 6×6
		// ones below: a 3×3 state whose last row and column pooling drops.
		side := 7
		if groups > 0 {
			side = 6
		} else {
			groups = -1 // no GroupNorm
		}
		// One encoder block, unless a case deepens it; float64 products,
		// which the gradient checks need (the default is float32).
		return stepCase{name, ModelConfig{Cell: ConvCell, Channels: 4, Groups: groups, Kernels: kernels, EncoderLayers: 1, Activation: layers.Tanh, Gamma: 0.7, Precision: layers.Float64},
			squares("squares/train", 64, side, 1), squares("squares/test", 10, side, 2)}
	}
	wn := conv("conv-weightnorm-groupnorm", 2, 0)
	wn.model.Normalization = layers.WeightNorm
	// The readout's hidden layer, after a dense and after a conv cell.
	dh := vec(DenseCell)
	dh.name, dh.model.ReadoutHidden = "dense-readout-hidden", 4
	ch := conv("conv-groupnorm-readout-hidden", 2, 0)
	ch.model.ReadoutHidden = 5
	// Deeper conv encoders, with and without GroupNorm.
	ge := conv("conv-groupnorm-encoder-layers", 2, 0)
	ge.model.EncoderLayers = 2
	ce := conv("conv-encoder-layers", 0, 0)
	ce.model.EncoderLayers = 3
	return []stepCase{vec(DenseCell), vec(MeanFieldCell), vec(ExpertsCell),
		conv("conv", 0, 0), conv("conv-groupnorm", 2, 0), conv("conv-kernels", 0, 3), ge, ce, wn, dh, ch}
}

// tightConfig is the configuration of c's model with batches of n and
// tight forward and adjoint solves.
func tightConfig(c stepCase, n int) Config {
	cfg := tinyConfig()
	cfg.BatchSize = n
	cfg.Model = c.model
	tight := SolverConfig{Method: methodNamed("broyden"), Tol: 1e-12, MaxIter: 500}
	cfg.Forward = tight
	cfg.Backward = BackwardConfig{Mode: deq.Implicit, Solver: tight} // the gradient (the conv default is Jacobian-free)
	cfg.Backward.Solver.Tol = 1e-13
	return cfg
}

// gradientAt runs the training step's gradient on the first n training
// images of c, with tight solves.
func gradientAt(t *testing.T, c stepCase, n int) (*Trainer, []float64, []int) {
	trn, err := New(tightConfig(c, n), c.train, c.test, nil)
	require.NoError(t, err)
	x, labels := c.train.X[:n*c.train.Dim()], c.train.Y[:n]
	bm := &trn.bm
	sol, _, skip, err := trn.gradient(x, labels, bm)
	require.NoError(t, err)
	require.Empty(t, skip)
	require.Equal(t, solver.Success, sol.Result.Status)
	require.Equal(t, solver.Success, bm.Backward.Status)
	return trn, x, labels
}

// evalLoss returns the mean loss of the images x computed by the
// evaluation path with layer l.
func evalLoss(t *testing.T, m *Model, l *deq.Layer, x []float64, labels []int) float64 {
	n := len(labels)
	w := m.work(n)
	m.standardize(w.xs, x)
	require.NoError(t, m.encode(w, w.e, n))
	sol, err := l.Forward(context.Background(), w.e)
	require.NoError(t, err)
	require.Equal(t, solver.Success, sol.Result.Status)
	m.readout(w, sol.Z, n)
	s, _ := crossEntropy(nil, w.logits, labels, m.Classes)
	return s / float64(n)
}

// TestStepGradientMatchesFiniteDifferences checks the training step's
// gradient — standardisation, encoder, DEQ layer with its implicit
// backward, readout (with pooling for conv), softmax cross-entropy —
// against central differences of the loss computed by the evaluation
// path, for every parameter of every kind of model.
func TestStepGradientMatchesFiniteDifferences(t *testing.T) {
	for _, c := range stepCases() {
		t.Run(c.name, func(t *testing.T) {
			const n = 12
			trn, x, labels := gradientAt(t, c, n)
			m := trn.model
			grads := make([][]float64, len(trn.grads))
			for i, g := range trn.grads {
				grads[i] = append([]float64(nil), g...)
			}
			l, err := m.layer(trn.cfg.Forward, nil, nil)
			require.NoError(t, err)
			require.InDelta(t, trn.bm.Loss, evalLoss(t, m, l, x, labels), 1e-12, "training and evaluation paths compute the same loss")
			const h = 1e-5
			for i, p := range m.params {
				for _, j := range []int{0, len(p.data) / 2, len(p.data) - 1} {
					old := p.data[j]
					p.data[j] = old + h
					lp := evalLoss(t, m, l, x, labels)
					p.data[j] = old - h
					lm := evalLoss(t, m, l, x, labels)
					p.data[j] = old
					fd := (lp - lm) / (2 * h)
					require.InDelta(t, fd, grads[i][j], 1e-7+1e-5*math.Abs(fd), "%s[%d]", p.name, j)
				}
			}
		})
	}
}

// TestStepMatchesGorgoniaGraph checks the hand-written step's loss, logits
// and gradients against the gorgonia training graph it replaced, for the
// vector models.
func TestStepMatchesGorgoniaGraph(t *testing.T) {
	for _, c := range stepCases()[:3] {
		t.Run(c.name, func(t *testing.T) {
			const n = 12
			trn, x, labels := gradientAt(t, c, n)
			m := trn.model
			g, err := buildGraph(context.Background(), m, trn.layer, n)
			require.NoError(t, err)
			m.standardize(g.x, x)
			for i, y := range labels {
				g.y[i*m.Classes+y] = 1
			}
			trn.layer.SetSeeds(mix3(trn.cfg.Seed, streamForward, 0), mix3(trn.cfg.Seed, streamBackward, 0))
			require.NoError(t, g.vm.RunAll())
			require.InDelta(t, g.loss.Data().(float64), trn.bm.Loss, 1e-13)
			logits, err := floats(g.logits)
			require.NoError(t, err)
			require.InDeltaSlice(t, logits, m.work(n).logits, 1e-12)
			want, err := g.grads()
			require.NoError(t, err)
			require.Len(t, want, len(trn.grads))
			for i, p := range m.params {
				name := g.learn[i].Name() // the graph names cell parameters deqN.*
				if i >= 4 {
					name = "cell." + name[strings.IndexByte(name, '.')+1:]
				}
				require.Equal(t, name, p.name)
				require.Equal(t, g.decay[i], p.decay, p.name)
				for j := range want[i] {
					require.InDelta(t, want[i][j], trn.grads[i][j], 1e-10+1e-8*math.Abs(want[i][j]), "%s[%d]", p.name, j)
				}
			}
		})
	}
}

// TestStepAllocatesNothingOfItsOwn checks that the parts of a training
// step outside the DEQ layer — standardisation, encoder, readout, loss and
// their gradients, clipping, decay and Adam — allocate nothing once a
// batch size has been seen, and that a whole step allocates exactly what
// the DEQ layer's forward and backward passes and the cell's projection
// allocate by themselves. The models are small enough that gonum's matrix
// products run on one goroutine.
func TestStepAllocatesNothingOfItsOwn(t *testing.T) {
	chosen := map[string]bool{"dense": true, "conv-groupnorm": true, "conv-groupnorm-encoder-layers": true,
		"conv-encoder-layers": true, "conv-groupnorm-readout-hidden": true, "dense-float32-readout-hidden": true}
	for _, c := range append(stepCases(), denseFloat32Case()) {
		if !chosen[c.name] {
			continue
		}
		delete(chosen, c.name)
		for _, mode := range []deq.Backward{deq.Implicit, deq.JacobianFree} {
			t.Run(c.name+"/"+mode.String(), func(t *testing.T) { stepAllocations(t, c, mode) })
		}
	}
	require.Empty(t, chosen, "cases not in stepCases")
}

// stepAllocations is one case of TestStepAllocatesNothingOfItsOwn, with the
// backward mode given.
func stepAllocations(t *testing.T, c stepCase, mode deq.Backward) {
	cfg := tinyConfig()
	cfg.BatchSize = 8
	cfg.WeightDecay = 1e-3
	cfg.Model = c.model
	// A fixed number of iterations, so that the solves allocate the
	// same at every step.
	fixed := SolverConfig{Method: methodNamed("picard"), Tol: 1e-300, MaxIter: 5}
	cfg.Forward, cfg.Backward = fixed, BackwardConfig{Mode: mode, Solver: fixed}
	trn, err := New(cfg, c.train, c.test, nil)
	require.NoError(t, err)
	m := trn.model
	trn.batcher.Next()
	b := trn.batcher.Batch()
	x, labels, n := b.X.RawMatrix().Data, b.Labels, b.Len()
	_, err = trn.trainBatch(b)
	require.NoError(t, err)
	w := m.work(n)
	sol, err := trn.layer.Forward(context.Background(), w.e)
	require.NoError(t, err)
	own := testing.AllocsPerRun(20, func() {
		m.standardize(w.xs, x)
		require.NoError(t, m.encode(w, w.e, n))
		m.readout(w, sol.Z, n)
		crossEntropy(w.dlogits, w.logits, labels, m.Classes)
		m.readoutBackward(w, sol.Z, n)
		require.NoError(t, m.encodeBackward(w, n))
		clipTo(trn.grads, globalNorm(trn.grads), 1e-3)
		decay(trn.vals, trn.decay, 1-1e-6)
		require.NoError(t, trn.adam.Update(trn.vals, trn.grads))
	})
	require.Zero(t, own)
	step := testing.AllocsPerRun(20, func() {
		_, err := trn.trainBatch(b)
		require.NoError(t, err)
	})
	layer := testing.AllocsPerRun(20, func() {
		sol, err := trn.layer.Forward(context.Background(), w.e)
		require.NoError(t, err)
		_, err = trn.layer.Backward(context.Background(), sol, w.gz, w.de)
		require.NoError(t, err)
		require.NoError(t, m.cell.Project())
	})
	// AllocsPerRun counts every allocation of the process while the
	// runs go on, averaged and truncated to an integer, so a stray
	// allocation of the runtime (or of the race detector) can move
	// either count by one: the step must allocate what the layer
	// does, give or take that one.
	require.InDelta(t, layer, step, 1)
	t.Logf("%s, %v: %.0f allocations per step, all in the DEQ layer's solves and the projection", c.name, mode, step)
}

// legacyConfig is the run of testdata/v1-gorgonia-step.ckpt: written by
// the gorgonia training step (before the hand-written one) after 11 of its
// 16 batches, with tight solves so that the two steps' trajectories agree
// to rounding. testdata/v1-gorgonia-step.golden.json holds the metrics of
// that code's uninterrupted run.
func legacyConfig() Config {
	cfg := tinyConfig()
	cfg.Epochs = 2
	cfg.LR = 0.01
	cfg.WeightDecay = 1e-3
	cfg.Forward = SolverConfig{Method: methodNamed("broyden"), Tol: 1e-11, MaxIter: 200}
	cfg.Backward = BackwardConfig{Solver: SolverConfig{Method: methodNamed("broyden"), Tol: 1e-11, MaxIter: 200}}
	return cfg
}

// TestResumesCheckpointOfGorgoniaStep resumes a checkpoint written by the
// gorgonia training step mid-epoch and requires the metrics of that code's
// uninterrupted run, up to rounding.
func TestResumesCheckpointOfGorgoniaStep(t *testing.T) {
	path := filepath.Join("testdata", "v1-gorgonia-step.ckpt")
	ck, err := Load(path)
	require.NoError(t, err)
	want, err := legacyConfig().Defaults()
	require.NoError(t, err)
	require.Equal(t, want, ck.Config)
	require.Equal(t, 1, ck.Epoch)
	require.Equal(t, 3, ck.Batch)
	b, err := os.ReadFile(filepath.Join("testdata", "v1-gorgonia-step.golden.json"))
	require.NoError(t, err)
	var golden []EpochMetrics
	require.NoError(t, json.Unmarshal(b, &golden))

	tr, te := blobData(256, 100)
	out := tempPath(t, "resumed.ckpt")
	cp, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, cp, 0o644))
	trn, err := Resume(out, tr, te, &Options{Checkpoint: out})
	require.NoError(t, err)
	res, err := trn.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 16, res.Steps)
	got := withoutTimes(res.Epochs)
	require.Len(t, got, 2)
	got[0].Trace = nil // the golden file has no traces (JSON)
	require.Equal(t, golden[0], got[0], "the first epoch is the checkpoint's")
	g, w := got[1], golden[1]
	require.Equal(t, w.Batches, g.Batches)
	require.Equal(t, w.TrainAcc, g.TrainAcc)
	require.Equal(t, w.TestAcc, g.TestAcc)
	require.InDelta(t, w.TrainLoss, g.TrainLoss, 1e-9)
	require.InDelta(t, w.TestLoss, g.TestLoss, 1e-9)
	require.Equal(t, w.Forward.Unconverged, g.Forward.Unconverged)
}

// TestConvModelTrainsAndResumes trains the conv model (8×8 images: a 4×4
// state, deterministic with the default three-block encoder and float32
// products, with weight normalisation, with translated training images,
// with rotated, scaled and translated ones, with a hidden readout layer,
// with one encoder block, with float64 products and with sampled kernels
// under VR-GHAL, whose default precision is float64), checks that it
// learns, and that a run
// interrupted mid-epoch and resumed ends
// with the uninterrupted run's metrics and checkpoint bytes.
func TestConvModelTrainsAndResumes(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"deterministic", nil},
		{"weightnorm", func(c *Config) { c.Model.Normalization = layers.WeightNorm }},
		{"shift", func(c *Config) { c.Augment.Shift = 1 }},
		{"readout-hidden", func(c *Config) { c.Model.ReadoutHidden = 8 }},
		{"one-encoder-block", func(c *Config) { c.Model.EncoderLayers = 1 }},
		{"float64", func(c *Config) { c.Model.Precision = layers.Float64 }},
		{"warp-shift", func(c *Config) { c.Augment.Shift, c.Augment.Rotate, c.Augment.Scale = 1, 10, 0.1 }},
		{"kernels-vrghal", func(c *Config) {
			c.Model.Kernels, c.Model.Groups, c.Epochs = 4, -1, 2 // provable: no GroupNorm
			c.Forward = SolverConfig{Method: methodNamed("vrghal"), Tol: 0.2, MaxIter: 3, MethodSettings: solver.MethodSettings{SampleScale: 0.005}}
			c.Eval = SolverConfig{Method: methodNamed("anderson")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, te := squares("squares/train", 128, 8, 1), squares("squares/test", 40, 8, 2)
			// The class of a square lies in its top half, which
			// translations move: no augmentation unless the case says.
			cfg := Config{Seed: 5, Epochs: 3, BatchSize: 16, LR: 0.02, Model: ModelConfig{Cell: ConvCell, Channels: 4}, Augment: AugmentConfig{Shift: -1}}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			want, wantBytes := run(t, cfg, tr, te, tempPath(t, "full.ckpt"))
			if tc.name == "kernels-vrghal" {
				d, err := cfg.Defaults()
				require.NoError(t, err)
				require.Equal(t, layers.Float32, d.Model.Precision, "VR-GHAL runs on float32 products certified on the float64 map")
			}
			f := want.Final()
			t.Logf("test accuracy %.3f, train loss %.3f → %.3f", f.TestAcc, want.Epochs[0].TrainLoss, f.TrainLoss)
			require.Greater(t, f.TestAcc, 0.6, "chance is 1/3")
			require.Less(t, f.TrainLoss, want.Epochs[0].TrainLoss)
			requireResumesExactly(t, cfg, tr, te, []int{11}, want, wantBytes)
		})
	}
}
