package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gorgonia.org/tensor"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
)

// param is a trainable matrix of the encoder or the readout, stored
// row-major in a tensor that the training graph's nodes share.
type param struct {
	name       string
	rows, cols int
	data       []float64
	t          *tensor.Dense
	decay      bool // weight decay applies (matrices, not biases)
}

func newParam(name string, rows, cols int, decay bool) *param {
	d := make([]float64, rows*cols)
	return &param{name: name, rows: rows, cols: cols, data: d, t: tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(d)), decay: decay}
}

// Model is an encoder → DEQ → linear readout classifier (see ModelConfig):
// its input standardisation, parameters and DEQ cell.
//
// A Model is not safe for concurrent use.
type Model struct {
	// Config is the model's configuration with defaults filled in.
	Config ModelConfig
	// InputDim is the number of pixels of an input image and Classes the
	// number of classes.
	InputDim, Classes int
	// Mean and Std standardise the input, x ← (x − Mean)/Std, with one
	// entry (global) or InputDim entries (per pixel); nil for none.
	Mean, Std []float64

	cell       layers.Cell
	encW, encB *param
	outW, outB *param
	scratch    []float64
}

// newModel builds a model with parameters drawn from seed: encoder and
// readout weights have independent N(0, 2/fan-in) and N(0, 1/fan-in)
// entries, biases are zero, and the cell initialises itself from a seed
// derived from seed.
func newModel(cfg ModelConfig, inputDim, classes int, norm *datasets.Normalizer, seed uint64) (*Model, error) {
	if inputDim < 1 || classes < 2 {
		return nil, fmt.Errorf("train: model needs a positive input dimension and at least two classes, have %d and %d", inputDim, classes)
	}
	m := &Model{Config: cfg, InputDim: inputDim, Classes: classes}
	if norm != nil {
		m.Mean, m.Std = slices.Clone(norm.Mean), slices.Clone(norm.Std)
	}
	fnorm, err := cfg.Norm.Norm(1, 1)
	if err != nil {
		return nil, fmt.Errorf("train: Config.Model.Norm: %w", err)
	}
	con, err := layers.ConstraintFor(fnorm)
	if err != nil {
		return nil, err
	}
	con.Gamma, con.ExactEvery = cfg.Gamma, cfg.ExactEvery
	act := cfg.Activation
	cellSeed := numeric.Mix(seed, streamCell)
	switch cfg.Cell {
	case DenseCell:
		m.cell, err = layers.NewDense(layers.DenseConfig{Hidden: cfg.Hidden, Input: cfg.Encoder, Activation: act, Lipschitz: con, Seed: cellSeed})
	case WideCell:
		m.cell, err = layers.NewWide(layers.WideConfig{Hidden: cfg.Hidden, Input: cfg.Encoder, Units: cfg.Units, Activation: act, Lipschitz: con, Seed: cellSeed})
	case MixtureCell:
		m.cell, err = layers.NewMixture(layers.MixtureConfig{Hidden: cfg.Hidden, Terms: cfg.Terms, PatchLen: cfg.Encoder / cfg.Terms, Activation: act, Lipschitz: con, Seed: cellSeed})
	default:
		err = fmt.Errorf("train: Config.Model.Cell = %v is not a cell kind", cfg.Cell)
	}
	if err != nil {
		return nil, err
	}
	m.encW = newParam("encoder.W", inputDim, cfg.Encoder, true)
	m.encB = newParam("encoder.b", 1, cfg.Encoder, false)
	m.outW = newParam("readout.W", cfg.Hidden, classes, true)
	m.outB = newParam("readout.b", 1, classes, false)
	rng := rand.New(rand.NewPCG(numeric.Mix(seed, streamInit), streamInit))
	fill := func(x []float64, sd float64) {
		for i := range x {
			x[i] = sd * rng.NormFloat64()
		}
	}
	fill(m.encW.data, math.Sqrt(2/float64(inputDim)))
	fill(m.outW.data, math.Sqrt(1/float64(cfg.Hidden)))
	return m, nil
}

// Cell returns the model's DEQ cell.
func (m *Model) Cell() layers.Cell { return m.cell }

// own returns the encoder and readout parameters, in checkpoint order.
func (m *Model) own() []*param { return []*param{m.encW, m.encB, m.outW, m.outB} }

// NumParams returns the number of trainable scalars.
func (m *Model) NumParams() int {
	n := 0
	for _, p := range m.own() {
		n += len(p.data)
	}
	for _, p := range m.cell.Params() {
		n += len(p.Data())
	}
	return n
}

// standardize writes the standardised images x into dst.
func (m *Model) standardize(dst, x []float64) {
	switch len(m.Mean) {
	case 0:
		copy(dst, x)
	case 1:
		mu, sd := m.Mean[0], m.Std[0]
		for i, v := range x {
			dst[i] = (v - mu) / sd
		}
	default:
		d := m.InputDim
		for i, v := range x {
			j := i % d
			dst[i] = (v - m.Mean[j]) / m.Std[j]
		}
	}
}

// affine writes y = x·W + b (n rows) into dst.
func affine(dst []float64, n int, x []float64, w, b *param) {
	for r := 0; r < n; r++ {
		copy(dst[r*w.cols:(r+1)*w.cols], b.data)
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: n, Cols: w.rows, Stride: w.rows, Data: x},
		blas64.General{Rows: w.rows, Cols: w.cols, Stride: w.cols, Data: w.data},
		1, blas64.General{Rows: n, Cols: w.cols, Stride: w.cols, Data: dst})
}

// encode returns the encoder features relu(std(x)·We + be) of n images.
func (m *Model) encode(x []float64, n int) []float64 {
	if cap(m.scratch) < len(x) {
		m.scratch = make([]float64, len(x))
	}
	s := m.scratch[:len(x)]
	m.standardize(s, x)
	e := make([]float64, n*m.Config.Encoder)
	affine(e, n, s, m.encW, m.encB)
	for i, v := range e {
		if v < 0 {
			e[i] = 0
		}
	}
	return e
}

// Encode returns the encoder features relu(std(x)·We + be) of the n raw
// images x (row-major, n·InputDim pixels): the input of the model's DEQ
// layer. Benchmarks use it to solve the trained cell's fixed points
// directly.
func (m *Model) Encode(x []float64, n int) ([]float64, error) {
	if n < 1 || len(x) != n*m.InputDim {
		return nil, fmt.Errorf("train: Encode: len(x) = %d, want n·InputDim = %d·%d", len(x), n, m.InputDim)
	}
	return m.encode(x, n), nil
}

// logits returns z·Wr + br for n hidden states.
func (m *Model) logits(z []float64, n int) []float64 {
	out := make([]float64, n*m.Classes)
	affine(out, n, z, m.outW, m.outB)
	return out
}

// crossEntropy returns the summed softmax cross-entropy of logits (n rows)
// against labels and the number of rows whose largest logit is the label's
// (the first maximum on ties).
func crossEntropy(logits []float64, labels []int, classes int) (loss float64, correct int) {
	for r, y := range labels {
		row := logits[r*classes : (r+1)*classes]
		mx, arg := row[0], 0
		for j, v := range row {
			if v > mx {
				mx, arg = v, j
			}
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(v - mx)
		}
		loss += mx + math.Log(s) - row[y]
		if arg == y {
			correct++
		}
	}
	return loss, correct
}

// EvalMetrics summarise an evaluation of a model on a data set.
type EvalMetrics struct {
	// Examples is the number of images evaluated; Correct of them were
	// classified correctly.
	Examples, Correct int
	// Accuracy is Correct/Examples and Loss the mean cross-entropy.
	Accuracy, Loss float64
	// Solver summarises the forward solves, one per batch.
	Solver SolveSummary
}

// Evaluate classifies the images of d (raw pixels, as datasets.Open
// returns them without normalisation: the model standardises its input)
// with forward solver s in batches of batch images (zero means
// DefaultEvalBatchSize). s's zero fields take DefaultForward()'s values. It
// stops with ctx's error, between batches, when ctx is done.
func (m *Model) Evaluate(ctx context.Context, d *datasets.Dataset, s SolverConfig, batch int) (*EvalMetrics, error) {
	s, err := s.merge("Eval", DefaultForward())
	if err != nil {
		return nil, err
	}
	l, err := m.layer(s, nil)
	if err != nil {
		return nil, err
	}
	return m.evaluate(ctx, l, d, batch, s.Tol, 0)
}

// layer returns a deq.Layer over the model's cell with forward solver s and,
// if b is not nil, backward configuration b.
func (m *Model) layer(s SolverConfig, b *BackwardConfig) (*deq.Layer, error) {
	gamma := m.cell.Gamma()
	sh := m.cell.Shape()
	norm, err := m.Config.Norm.Norm(sh.Rows, sh.Hidden)
	if err != nil {
		return nil, fmt.Errorf("train: Config.Model.Norm: %w", err)
	}
	ds := deq.Settings{
		Norm:            norm,
		Forward:         s.method(gamma),
		ForwardSettings: s.settings(false, false),
		ForwardOracle:   s.oracle(),
		Monitor:         deq.MonitorNever,
	}
	if b != nil {
		ds.Backward = b.Mode
		switch b.Mode {
		case deq.JacobianFree:
		case deq.Phantom:
			ds.PhantomSteps = b.PhantomSteps
		case deq.Implicit:
			ds.Adjoint = b.Solver.method(gamma)
			ds.AdjointSettings = b.Solver.settings(true, true)
			ds.AdjointOracle = b.Solver.oracle()
		default:
			return nil, fmt.Errorf("train: Config.Backward.Mode = %v is not a backward mode", b.Mode)
		}
	}
	return deq.New(m.cell, &ds)
}

// evaluate runs l over d in batches; tol is the solver's tolerance and
// seed derives the solvers' seeds.
func (m *Model) evaluate(ctx context.Context, l *deq.Layer, d *datasets.Dataset, batch int, tol float64, seed uint64) (*EvalMetrics, error) {
	if batch == 0 {
		batch = DefaultEvalBatchSize
	}
	if d.Dim() != m.InputDim {
		return nil, fmt.Errorf("train: %s has %d pixels per image, the model %d", d.Name, d.Dim(), m.InputDim)
	}
	if d.Classes != m.Classes {
		return nil, fmt.Errorf("train: %s has %d classes, the model %d", d.Name, d.Classes, m.Classes)
	}
	bt, err := datasets.NewBatcher(d, batch, nil)
	if err != nil {
		return nil, err
	}
	em := &EvalMetrics{}
	var acc solveAcc
	loss := 0.0
	for i := 0; bt.Next(); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := bt.Batch()
		n := b.Len()
		l.SetSeeds(numeric.Mix(seed, uint64(i)), 0)
		sol, err := l.Forward(ctx, m.encode(b.X.RawMatrix().Data, n))
		if err != nil {
			return nil, err
		}
		acc.add(sol.Result, tol)
		lo, c := crossEntropy(m.logits(sol.Z, n), b.Labels, m.Classes)
		loss += lo
		em.Correct += c
		em.Examples += n
	}
	em.Accuracy = float64(em.Correct) / float64(em.Examples)
	em.Loss = loss / float64(em.Examples)
	em.Solver = acc.summary()
	return em, nil
}
