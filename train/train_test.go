package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

func TestTrainLearnsBlobs(t *testing.T) {
	tr, te := blobData(512, 150)
	cfg := tinyConfig()
	cfg.Epochs = 4
	var batches []*BatchMetrics
	trn, err := New(cfg, tr, te, &Options{OnBatch: func(b *BatchMetrics) {
		c := *b // OnBatch's argument is reused
		batches = append(batches, &c)
	}})
	require.NoError(t, err)
	res, err := trn.Run(context.Background())
	require.NoError(t, err)
	require.False(t, res.Interrupted)
	require.Len(t, res.Epochs, 4)
	require.Len(t, batches, 4*16)
	require.Equal(t, 4*16, res.Steps)
	f := res.Final()
	// Chance is 1/3; the Bayes classifier is the limit.
	bayes := bayesAccuracy(te)
	t.Logf("test accuracy %.3f, Bayes %.3f", f.TestAcc, bayes)
	require.GreaterOrEqual(t, bayes, 0.9)
	require.GreaterOrEqual(t, f.TestAcc, bayes-0.05)
	require.Less(t, res.Epochs[3].TrainLoss, res.Epochs[0].TrainLoss)
	for _, e := range res.Epochs {
		require.Equal(t, 16, e.Batches)
		require.Zero(t, e.Skipped)
		require.Equal(t, 16, e.Forward.Solves)
		require.Equal(t, 16, e.Forward.Certified)
		// Broyden succeeds on a 0.9-contraction within 40 iterations, and an
		// exact certificate of a successful solve is its residual ≤ Tol.
		require.Zero(t, e.Forward.Unconverged)
		require.Equal(t, 1.0, e.CertMetFrac)
		require.LessOrEqual(t, e.CertBoundMax, DefaultForwardTol)
		require.Positive(t, e.CertBoundMean)
		require.LessOrEqual(t, e.CertBoundMean, e.CertBoundMax)
		require.Greater(t, e.FwdCallsMean, e.FwdItersMean, "one call per iteration plus the start point")
		require.Positive(t, e.BwdItersMean)
		require.Equal(t, 3, e.Test.Solves) // 150 test images in batches of 50
		require.LessOrEqual(t, e.Test.CertBoundMax, DefaultForwardTol/10)
		require.NotEmpty(t, e.Trace)
		require.Positive(t, e.EpochSeconds)
	}
	// Batch metrics agree with the epoch's.
	for e := range 4 {
		loss, acc := 0.0, 0.0
		for _, b := range batches[16*e : 16*(e+1)] {
			require.Equal(t, e, b.Epoch)
			require.NotNil(t, b.Forward)
			require.NotNil(t, b.Backward)
			loss += b.Loss / 16
			acc += b.Accuracy / 16
		}
		require.InDelta(t, res.Epochs[e].TrainLoss, loss, 1e-12)
		require.InDelta(t, res.Epochs[e].TrainAcc, acc, 1e-12)
	}
}

func TestReproducible(t *testing.T) {
	tr, te := blobData(256, 100)
	cfg := tinyConfig()
	r1, b1 := run(t, cfg, tr, te, tempPath(t, "a.ckpt"))
	r2, b2 := run(t, cfg, tr, te, tempPath(t, "b.ckpt"))
	require.True(t, equalBytes(b1, b2), "same Config and data give the same checkpoint bytes")
	require.Equal(t, withoutTimes(r1.Epochs), withoutTimes(r2.Epochs))
	cfg.Seed++
	_, b3 := run(t, cfg, tr, te, tempPath(t, "c.ckpt"))
	require.False(t, equalBytes(b1, b3), "another seed gives another run")
}

// TestResumeContinuesExactly interrupts runs at several positions —
// mid-epoch, after an epoch's last batch (during its evaluation), at a
// later epoch, twice in a row — resumes them from their checkpoints and
// requires the metrics and final checkpoint bytes of an uninterrupted run.
func TestResumeContinuesExactly(t *testing.T) {
	type tc struct {
		name  string
		cfg   func(*Config)
		stops []int // cancel after this many batches of each (re)started run
	}
	stochastic := func(c *Config) {
		c.Model.Cell, c.Model.Terms = ExpertsCell, 3
		c.Model.Encoder = 6
		c.Forward = SolverConfig{Method: methodNamed("vrghal"), Tol: 1e-2, MaxIter: 6, MethodSettings: solver.MethodSettings{SampleScale: 0.02}}
		c.Backward.Solver.Method = methodNamed("picard")
		c.Eval = SolverConfig{Method: methodNamed("vrghal"), Tol: 1e-2}
		c.Epochs = 2
	}
	cases := []tc{
		{"dense/mid-epoch", nil, []int{3}},
		{"dense/during-eval", nil, []int{8}},
		{"dense/twice", nil, []int{5, 6}},
		{"dense/at-start", nil, []int{0}},
		{"experts-vrghal/mid-epoch", stochastic, []int{11}},
		{"meanfield-anderson-step", func(c *Config) {
			c.Model.Cell = MeanFieldCell
			c.Forward.Method, c.Backward.Solver.Method = methodNamed("anderson"), methodNamed("anderson")
			c.Schedule, c.WeightDecay = Step, 1e-3
		}, []int{2, 9}},
		{"dense-aids-weightnorm", func(c *Config) {
			c.Model.Normalization = layers.WeightNorm
			c.Model.Activation = layers.Tanh
			c.Aids = AidsConfig{JacWeight: 0.1, JacFreq: 3, CorrectionStates: 3, Dropout: 0.1}
		}, []int{4, 7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, te := blobData(256, 100)
			cfg := tinyConfig()
			cfg.Epochs = 3
			cfg.LR = 0.01
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			want, wantBytes := run(t, cfg, tr, te, tempPath(t, "full.ckpt"))
			requireResumesExactly(t, cfg, tr, te, c.stops, want, wantBytes)
		})
	}
}

func TestResumeRefusesOtherData(t *testing.T) {
	tr, te := blobData(256, 100)
	path := tempPath(t, "a.ckpt")
	run(t, tinyConfig(), tr, te, path)
	other := blobs("blobs/train", 256, 0.3, 5)
	_, err := Resume(path, other, te, nil)
	require.ErrorIs(t, err, ErrDataMismatch)
	_, err = Resume(path, tr, te.Head(50), nil)
	require.ErrorIs(t, err, ErrDataMismatch)
	// A finished run resumes to nothing more.
	trn, err := Resume(path, tr, te, nil)
	require.NoError(t, err)
	res, err := trn.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, res.Epochs, 2)
}

func TestLearningRateSchedules(t *testing.T) {
	tr, te := blobData(256, 100)
	for _, tc := range []struct {
		schedule Schedule
		want     func(epoch, batch int) float64 // with LR = 1, 4 epochs of 8 batches
	}{
		{Constant, func(int, int) float64 { return 1 }},
		{Cosine, func(e, b int) float64 { return (1 + math.Cos(math.Pi*float64(8*e+b)/32)) / 2 }},
		{Step, func(e, _ int) float64 { return []float64{1, 1, 0.1, 0.01}[e] }},
	} {
		t.Run(tc.schedule.String(), func(t *testing.T) {
			cfg := tinyConfig()
			cfg.Epochs, cfg.LR, cfg.Schedule = 4, 1, tc.schedule
			trn, err := New(cfg, tr, te, nil)
			require.NoError(t, err)
			for e := range 4 {
				for b := range 8 {
					trn.epoch, trn.batch = e, b
					require.InDelta(t, tc.want(e, b), trn.lr(), 1e-15, "epoch %d batch %d", e, b)
				}
			}
		})
	}
}

func TestClipAndDecay(t *testing.T) {
	g := [][]float64{{3, 0}, {4}}
	n := globalNorm(g)
	require.InDelta(t, 5.0, n, 1e-14) // √(3² + 4²), a few ulps
	clipTo(g, n, 10)
	require.Equal(t, [][]float64{{3, 0}, {4}}, g, "below the threshold nothing changes")
	clipTo(g, n, 1)
	require.InDeltaSlice(t, []float64{0.6, 0}, g[0], 1e-15)
	require.InDeltaSlice(t, []float64{0.8}, g[1], 1e-15)
	require.InDelta(t, 1, globalNorm(g), 1e-15)
	clipTo(g, 1, -1)
	require.InDelta(t, 1, globalNorm(g), 1e-15, "a negative threshold disables clipping")
	v := [][]float64{{1, 2}, {3}}
	decay(v, []bool{true, false}, 0.5)
	require.Equal(t, [][]float64{{0.5, 1}, {3}}, v)
}

func TestEvaluateMatchesTraining(t *testing.T) {
	tr, te := blobData(256, 100)
	path := tempPath(t, "a.ckpt")
	res, _ := run(t, tinyConfig(), tr, te, path)
	ck, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, 2, ck.Epoch)
	require.Equal(t, withoutTimes(res.Epochs), withoutTimes(ck.History))
	require.Equal(t, "blobs/test", ck.TestSet)
	em, err := ck.Model.Evaluate(context.Background(), te, ck.Config.Eval, ck.Config.EvalBatchSize)
	require.NoError(t, err)
	// The evaluation solver (Broyden) is deterministic: the same numbers.
	require.Equal(t, res.Final().TestAcc, em.Accuracy)
	require.Equal(t, res.Final().TestLoss, em.Loss)
	require.Equal(t, res.Final().Test, em.Solver)
	require.Equal(t, 100, em.Examples)
	// Another solver finds the same fixed points up to its tolerance.
	em2, err := ck.Model.Evaluate(context.Background(), te, SolverConfig{Method: methodNamed("anderson"), Tol: 1e-6, MaxIter: 200}, 0)
	require.NoError(t, err)
	require.InDelta(t, em.Loss, em2.Loss, 1e-4)
	require.Equal(t, 1.0, em2.Solver.CertMetFrac)
	_, err = ck.Model.Evaluate(context.Background(), blobs("other", 10, 0, 1).Head(10), SolverConfig{Method: methodNamed("minibatch-km")}, 0)
	require.ErrorContains(t, err, "Eval.Method")
}

func TestCanceledRunSavesCheckpoint(t *testing.T) {
	tr, te := blobData(256, 100)
	path := tempPath(t, "a.ckpt")
	trn, err := New(tinyConfig(), tr, te, &Options{Checkpoint: path})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := trn.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, res.Interrupted)
	require.Zero(t, res.Steps)
	ck, err := Load(path)
	require.NoError(t, err)
	require.Zero(t, ck.Epoch)
	require.Zero(t, ck.Batch)
	require.True(t, slices.Equal(ck.Model.encW.data, trn.model.encW.data))
}

func TestAugmentRefusesShiftOfWholeImage(t *testing.T) {
	tr, te := blobData(256, 100) // 4×4 images
	cfg := tinyConfig()
	cfg.Augment.Shift = 4
	_, err := New(cfg, tr, te, nil)
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "Augment.Shift", fe.Field)
	// The one check is datasets.NewShifter's, whose error it wraps.
	_, want := datasets.NewShifter(4, 4, 4)
	require.Error(t, want)
	require.Equal(t, want, errors.Unwrap(err))
	require.ErrorContains(t, err, "train: Config.Augment.Shift = 4 is refused: "+want.Error())
}

// TestAugmentShiftsTrainingBatchesOnly trains with random translations,
// with random rotations and scalings, and with both: each run differs
// from one without them, repeats exactly (also when interrupted and
// resumed), and its test metrics are those of an evaluation of the final
// model on the untouched test images.
func TestAugmentShiftsTrainingBatchesOnly(t *testing.T) {
	tr, te := blobData(256, 100)
	cfg := tinyConfig()
	cfg.Epochs, cfg.LR = 3, 0.01
	_, plain := run(t, cfg, tr, te, tempPath(t, "plain.ckpt"))
	var runs [][]byte
	for _, aug := range []AugmentConfig{{Shift: 1}, {Rotate: 20, Scale: 0.15}, {Shift: 1, Rotate: 20}, {Flip: true}, {Flip: true, Shift: 1}} {
		t.Run(fmt.Sprintf("%+v", aug), func(t *testing.T) {
			cfg := cfg
			cfg.Augment = aug
			path := tempPath(t, "aug.ckpt")
			want, wantBytes := run(t, cfg, tr, te, path)
			require.False(t, equalBytes(plain, wantBytes), "the augmentation changes the run")
			for _, other := range runs {
				require.False(t, equalBytes(other, wantBytes), "each augmentation makes its own run")
			}
			runs = append(runs, wantBytes)
			_, again := run(t, cfg, tr, te, tempPath(t, "again.ckpt"))
			require.True(t, equalBytes(wantBytes, again), "the same seed gives the same augmentation")

			ck, err := Load(path)
			require.NoError(t, err)
			require.Equal(t, aug, ck.Config.Augment)
			em, err := ck.Model.Evaluate(context.Background(), te, ck.Config.Eval, ck.Config.EvalBatchSize)
			require.NoError(t, err)
			require.Equal(t, want.Final().TestAcc, em.Accuracy)
			require.Equal(t, want.Final().TestLoss, em.Loss)

			requireResumesExactly(t, cfg, tr, te, []int{5, 9}, want, wantBytes)
		})
	}
}

// TestAugmentRefusesBadWarps: New refuses a rotation or scaling that
// datasets.NewWarper refuses, naming the field and wrapping its error.
func TestAugmentRefusesBadWarps(t *testing.T) {
	tr, te := blobData(256, 100)
	for _, tc := range []struct {
		aug   AugmentConfig
		field string
	}{
		{AugmentConfig{Rotate: -1}, "Augment.Rotate"},
		{AugmentConfig{Rotate: 180}, "Augment.Rotate"},
		{AugmentConfig{Rotate: math.NaN(), Scale: 0.1}, "Augment.Rotate"},
		{AugmentConfig{Rotate: -5, Scale: 2}, "Augment.Rotate"},
		{AugmentConfig{Scale: -0.1}, "Augment.Scale"},
		{AugmentConfig{Scale: 1}, "Augment.Scale"},
		{AugmentConfig{Rotate: 10, Scale: math.Inf(1)}, "Augment.Scale"},
	} {
		cfg := tinyConfig()
		cfg.Augment = tc.aug
		_, err := New(cfg, tr, te, nil)
		var fe *FieldError
		require.ErrorAs(t, err, &fe, "%+v", tc.aug)
		require.Equal(t, tc.field, fe.Field, "%+v", tc.aug)
		_, want := datasets.NewWarper(4, 4, tc.aug.Rotate, tc.aug.Scale)
		require.Error(t, want)
		require.Equal(t, want, errors.Unwrap(err))
		require.ErrorContains(t, err, "train: Config."+tc.field+" = ")
	}
}

// TestAugmentWarpsBeforeShifting: each training batch is rotated and
// scaled (from the warp stream of the batch's position), then mirrored
// (from the flip stream) and then translated (from the augmentation
// stream), so that translations stay whole pixels; the other order gives
// other images.
func TestAugmentWarpsBeforeShifting(t *testing.T) {
	tr, te := blobData(256, 100) // 4×4 images
	cfg := tinyConfig()
	cfg.Epochs = 1
	cfg.Augment = AugmentConfig{Shift: 1, Rotate: 30, Scale: 0.2, Flip: true}
	trn, err := New(cfg, tr, te, nil)
	require.NoError(t, err)
	w, err := datasets.NewWarper(tr.Rows, tr.Cols, cfg.Augment.Rotate, cfg.Augment.Scale)
	require.NoError(t, err)
	f, err := datasets.NewFlipper(tr.Rows, tr.Cols)
	require.NoError(t, err)
	s, err := datasets.NewShifter(tr.Rows, tr.Cols, cfg.Augment.Shift)
	require.NoError(t, err)
	checked := 0
	trn.beforeRun = func(e, b int, xs []float64) {
		if b > 2 {
			return
		}
		pos := trn.position()
		dim := tr.Dim()
		raw := func() []float64 {
			var x []float64
			for _, i := range trn.batcher.Batch().Index {
				x = append(x, tr.X[i*dim:(i+1)*dim]...)
			}
			return x
		}
		standardized := func(x []float64) []float64 {
			out := make([]float64, len(x))
			trn.model.standardize(out, x)
			return out
		}
		want := raw()
		w.Apply(want, mix3(cfg.Seed, streamWarp, pos))
		f.Apply(want, mix3(cfg.Seed, streamFlip, pos))
		s.Apply(want, mix3(cfg.Seed, streamAugment, pos))
		require.InDeltaSlice(t, standardized(want), xs, 1e-12, "batch %d", b)
		other := raw()
		s.Apply(other, mix3(cfg.Seed, streamAugment, pos))
		f.Apply(other, mix3(cfg.Seed, streamFlip, pos))
		w.Apply(other, mix3(cfg.Seed, streamWarp, pos))
		require.NotEqual(t, standardized(other), xs, "batch %d in the other order", b)
		checked++
	}
	_, err = trn.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, checked)
}
