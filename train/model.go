package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/f32"
	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// param is a trainable matrix of the model, stored row-major, with its
// gradient: the dense encoder's and the readout's own parameters, and views
// of the conv encoder's and the cell's layers.Param.
type param struct {
	name       string
	rows, cols int
	data, grad []float64
	decay      bool       // weight decay applies (matrices, not biases or normalisation)
	m32        f32.Mirror // data rounded to float32, for the float32 products of affine
}

func newParam(name string, rows, cols int, decay bool) *param {
	return &param{name: name, rows: rows, cols: cols, data: make([]float64, rows*cols), grad: make([]float64, rows*cols), decay: decay}
}

// viewParam returns a param over a layers.Param's storage, named prefix +
// its name. Weight decay applies to its matrices: not to biases ("b",
// and the deeper conv encoder's "b2", …), GroupNorm scales and shifts
// ("gn.*", "gn2.*", …) or weight normalisation's norms ("g").
func viewParam(prefix string, p *layers.Param) *param {
	r, c := p.Dims()
	// Biases, gains and GroupNorm parameters are not decayed; the conv
	// encoder numbers those of its blocks after the first (b2, gn2.scale).
	name := p.Name()
	base := strings.TrimRight(name[:strings.IndexByte(name+".", '.')], "0123456789")
	decay := base != "b" && base != "g" && base != "gn"
	return &param{name: prefix + p.Name(), rows: r, cols: c, data: p.Data(), grad: p.GradData(), decay: decay}
}

// Model is an encoder → DEQ → readout classifier (see ModelConfig): its
// input standardisation, parameters and DEQ cell.
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

	rows, cols int // image size (the conv model's encoder reads it)
	cell       layers.Cell
	io32       bool                // the dense encoder and readout multiply in float32 (Config.Precision)
	split      int                 // deq.Settings.Split of the layers (train.Config.Split)
	encSplit   *rowSplit           // splits the dense encoder's products between the cores (nil: one core, or conv)
	encW, encB *param              // the dense encoder (nil for conv)
	conv       *layers.ConvEncoder // the conv encoder (nil otherwise)
	hidW, hidB *param              // the readout's hidden layer (nil without Config.ReadoutHidden)
	outW, outB *param
	params     []*param // every trainable parameter, in checkpoint order
	custom     bool     // the cell is a CellFunc's (NewWithCell)
	encLen     int      // encoder features per image: the cell's input
	readLen    int      // readout features per image
	pool       pool     // the conv readout's 2×2 average pooling
	works      mru.Cache[int, *work]
}

// work is the scratch of a batch size: everything a training step or an
// evaluation batch writes, allocated once.
type work struct {
	n       int
	xs      []float64 // standardised input, n·InputDim
	e, de   []float64 // encoder features and their cotangent, n·encLen
	h, dh   []float64 // readout features and their cotangent, n·readLen (conv only; the dense readout reads z)
	u, du   []float64 // the readout's hidden units and their cotangent, n·ReadoutHidden (nil without)
	logits  []float64 // n·Classes
	dlogits []float64 // ∂L/∂logits, n·Classes
	gz      []float64 // ∂L/∂z*, n·HiddenLen
	s32     work32    // the float32 operands and products of affine (Model.io32 only), grown on first use

	// The training aids' scratch, allocated on first use: the Jacobian
	// penalty's cotangents of z* and of the encoder's features, the
	// correction's cotangents of its states' values f(z_k), of the
	// encoder's features, and its weights.
	jdz, jdx []float64
	gs       [][]float64
	cdx, cw  []float64
}

// work returns the scratch for n images, allocating it on first use.
func (m *Model) work(n int) *work {
	w, _ := m.works.Get(n, func() (*work, error) {
		w := &work{
			n:       n,
			xs:      make([]float64, n*m.InputDim),
			e:       make([]float64, n*m.encLen),
			de:      make([]float64, n*m.encLen),
			logits:  make([]float64, n*m.Classes),
			dlogits: make([]float64, n*m.Classes),
			gz:      make([]float64, n*m.cell.Shape().HiddenLen()),
		}
		if m.conv != nil {
			w.h = make([]float64, n*m.readLen)
			w.dh = make([]float64, n*m.readLen)
		}
		if m.hidW != nil {
			w.u = make([]float64, n*m.hidW.cols)
			w.du = make([]float64, n*m.hidW.cols)
		}
		return w, nil
	})
	return w
}

// newModelWith builds a model for rows×cols images with parameters drawn
// from seed: the dense encoder and the readout's hidden layer have
// independent N(0, 2/fan-in) entries and the readout's last layer
// N(0, 1/fan-in), biases are zero, and the conv encoder and the cell
// initialise themselves from seeds derived from seed. Unless newCell is
// nil, newCell builds the cell (see NewWithCell).
func newModelWith(cfg ModelConfig, rows, cols, classes int, norm *datasets.Normalizer, seed uint64, newCell CellFunc) (*Model, error) {
	if rows < 1 || cols < 1 || classes < 2 {
		return nil, fmt.Errorf("train: model needs a positive image size and at least two classes, have %d×%d and %d", rows, cols, classes)
	}
	inputDim := rows * cols
	m := &Model{Config: cfg, InputDim: inputDim, Classes: classes, rows: rows, cols: cols,
		works: mru.Cache[int, *work]{Max: layers.MaxCachedBatches}}
	if norm != nil {
		m.Mean, m.Std = slices.Clone(norm.Mean), slices.Clone(norm.Std)
	}
	fnorm, err := cfg.Norm.Norm(1, 1)
	if err != nil {
		return nil, fmt.Errorf("train: Config.Model.Norm: %w", err)
	}
	act := cfg.Activation
	cellSeed := numeric.Mix(seed, streamCell)
	if newCell != nil {
		if err := m.newCustom(cfg, newCell, cellSeed); err != nil {
			return nil, err
		}
		m.encW = newParam("encoder.W", inputDim, cfg.Encoder, true)
		m.encB = newParam("encoder.b", 1, cfg.Encoder, false)
	} else if cfg.Cell == ConvCell {
		if err := m.newConv(cfg, cellSeed, numeric.Mix(seed, streamEncoder)); err != nil {
			return nil, err
		}
	} else {
		// The dense model's encoder and readout follow the cell's
		// precision (the conv encoder follows it through ConvEncoder).
		m.io32 = cfg.Cell == DenseCell && cfg.Precision == layers.Float32
		m.encSplit = newRowSplit()
		con, err := layers.ConstraintFor(fnorm)
		if err != nil {
			return nil, err
		}
		con.Gamma, con.ExactEvery = cfg.Gamma, cfg.ExactEvery
		switch cfg.Cell {
		case DenseCell:
			m.cell, err = layers.NewDense(layers.DenseConfig{Hidden: cfg.Hidden, Input: cfg.Encoder, Activation: act, Lipschitz: con, Normalization: cfg.Normalization, Precision: cfg.Precision, Seed: cellSeed})
			if err != nil && cfg.Normalization != layers.Projection {
				err = fmt.Errorf("train: Config.Model.Normalization = %v: %w", cfg.Normalization, err)
			}
		case MeanFieldCell:
			m.cell, err = layers.NewMeanField(layers.MeanFieldConfig{Hidden: cfg.Hidden, Input: cfg.Encoder, Units: cfg.Units, Activation: act, Lipschitz: con, Seed: cellSeed})
		case ExpertsCell:
			m.cell, err = layers.NewExperts(layers.ExpertsConfig{Hidden: cfg.Hidden, Input: cfg.Encoder, Experts: cfg.Terms, Activation: act, Lipschitz: con, Seed: cellSeed})
		default:
			err = fmt.Errorf("train: Config.Model.Cell = %v is not a cell kind", cfg.Cell)
		}
		if err != nil {
			return nil, err
		}
		m.encW = newParam("encoder.W", inputDim, cfg.Encoder, true)
		m.encB = newParam("encoder.b", 1, cfg.Encoder, false)
		m.encLen, m.readLen = cfg.Encoder, cfg.Hidden
	}
	outIn := m.readLen
	if r := cfg.ReadoutHidden; r > 0 {
		m.hidW = newParam("readout.hidden.W", m.readLen, r, true)
		m.hidB = newParam("readout.hidden.b", 1, r, false)
		outIn = r
	}
	m.outW = newParam("readout.W", outIn, classes, true)
	m.outB = newParam("readout.b", 1, classes, false)
	rng := rand.New(rand.NewPCG(numeric.Mix(seed, streamInit), streamInit))
	fill := func(x []float64, sd float64) {
		for i := range x {
			x[i] = sd * rng.NormFloat64()
		}
	}
	if m.encW != nil {
		fill(m.encW.data, math.Sqrt(2/float64(inputDim)))
		m.params = append(m.params, m.encW, m.encB)
	} else {
		for _, p := range m.conv.Params() {
			m.params = append(m.params, viewParam("encoder.", p))
		}
	}
	if m.hidW != nil {
		fill(m.hidW.data, math.Sqrt(2/float64(m.readLen)))
		m.params = append(m.params, m.hidW, m.hidB)
	}
	fill(m.outW.data, math.Sqrt(1/float64(m.outW.rows)))
	m.params = append(m.params, m.outW, m.outB)
	for _, p := range m.cell.Params() {
		m.params = append(m.params, viewParam("cell.", p))
	}
	return m, nil
}

// newConv builds the conv model's encoder and cell.
func (m *Model) newConv(cfg ModelConfig, cellSeed, encSeed uint64) error {
	// The encoder's blocks after the first run their products in the
	// cell's precision (the first block is always float64).
	enc, err := layers.NewConvEncoder(layers.ConvEncoderConfig{
		Height: m.rows, Width: m.cols, Channels: cfg.Channels, Groups: max(cfg.Groups, 0),
		Layers: cfg.EncoderLayers, Precision: cfg.Precision, Seed: encSeed,
	})
	if err != nil {
		return fmt.Errorf("train: Config.Model: %w", err)
	}
	c, h, w := enc.OutShape()
	if h < 2 || w < 2 {
		return fmt.Errorf("train: Config.Model.Cell = conv needs images of at least 3×3 pixels, have %d×%d", m.rows, m.cols)
	}
	cell, err := layers.NewConv(layers.ConvConfig{
		Channels: c, Height: h, Width: w, Kernels: cfg.Kernels, Activation: cfg.Activation,
		Groups: max(cfg.Groups, 0), Gamma: cfg.Gamma, CertifyEvery: cfg.ExactEvery,
		Normalization: cfg.Normalization, Precision: cfg.Precision, Seed: cellSeed,
	})
	if err != nil {
		return fmt.Errorf("train: Config.Model: %w", err)
	}
	m.conv, m.cell = enc, cell
	m.pool = pool{c: c, h: h, w: w}
	m.encLen, m.readLen = enc.OutputLen(), m.pool.outLen()
	return nil
}

// Cell returns the model's DEQ cell.
func (m *Model) Cell() layers.Cell { return m.cell }

// NumParams returns the number of trainable scalars.
func (m *Model) NumParams() int {
	n := 0
	for _, p := range m.params {
		n += len(p.data)
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
		mean, std := m.Mean[:d], m.Std[:d]
		for r := 0; r+d <= len(x); r += d {
			xr, dr := x[r:r+d], dst[r:r+d]
			for j, v := range xr {
				dr[j] = (v - mean[j]) / std[j]
			}
		}
	}
}

// encode writes the encoder features of the n standardised images w.xs
// into e: relu(xs·We + be), or the conv encoder's output.
func (m *Model) encode(w *work, e []float64, n int) error {
	if m.conv != nil {
		return m.conv.Forward(e, w.xs)
	}
	affine(e, n, w.xs, m.encW, m.encB, m.scratch32(w), opEncoder, m.encSplit)
	for i, v := range e {
		if v < 0 {
			e[i] = 0
		}
	}
	return nil
}

// encodeBackward adds the encoder's parameter gradients for the cotangent
// w.de of the features w.e of the last encode of w.xs; it overwrites w.de.
func (m *Model) encodeBackward(w *work, n int) error {
	if m.conv != nil {
		return m.conv.Backward(w.de)
	}
	de := w.de
	for i, v := range w.e {
		if v <= 0 {
			de[i] = 0
		}
	}
	affineBackward(nil, n, w.xs, de, m.encW, m.encB, m.scratch32(w), opEncoder, m.encSplit)
	return nil
}

// readout writes the logits of the n fixed points z into w.logits: h·Wr +
// br for the features h (z, or for the conv model z pooled over 2×2
// blocks), or relu(h·W₁ + b₁)·Wr + br with the hidden layer of
// Config.ReadoutHidden.
func (m *Model) readout(w *work, z []float64, n int) {
	h := z
	if m.conv != nil {
		m.pool.forward(w.h, z, n)
		h = w.h
	}
	s := m.scratch32(w)
	if m.hidW != nil {
		u := w.u[:n*m.hidW.cols]
		affine(u, n, h, m.hidW, m.hidB, s, opFeatures, nil)
		for i, v := range u {
			u[i] = max(v, 0)
		}
		affine(w.logits[:n*m.Classes], n, u, m.outW, m.outB, s, opHidden, nil)
		return
	}
	affine(w.logits[:n*m.Classes], n, h, m.outW, m.outB, s, opFeatures, nil)
}

// readoutBackward adds the readout's parameter gradients for w.dlogits and
// writes ∂L/∂z* into w.gz, for the last readout, which was of z.
func (m *Model) readoutBackward(w *work, z []float64, n int) {
	dh, h := w.gz, z // the features' cotangent and the features
	if m.conv != nil {
		dh, h = w.dh, w.h
	}
	s := m.scratch32(w)
	if m.hidW != nil {
		u, du := w.u[:n*m.hidW.cols], w.du[:n*m.hidW.cols]
		affineBackward(du, n, u, w.dlogits, m.outW, m.outB, s, opHidden, nil)
		for i, v := range u {
			if v <= 0 {
				du[i] = 0
			}
		}
		affineBackward(dh, n, h, du, m.hidW, m.hidB, s, opFeatures, nil)
	} else {
		affineBackward(dh, n, h, w.dlogits, m.outW, m.outB, s, opFeatures, nil)
	}
	if m.conv != nil {
		m.pool.backward(w.gz, w.dh, n)
	}
}

// scratch32 returns w's float32 scratch if the model's encoder and
// readout multiply in float32, and nil otherwise.
func (m *Model) scratch32(w *work) *work32 {
	if m.io32 {
		return &w.s32
	}
	return nil
}

// Encode returns the encoder features of the n raw images x (row-major,
// n·InputDim pixels): the input of the model's DEQ layer, in the cell's
// layout. Benchmarks use it to solve the trained cell's fixed points
// directly.
func (m *Model) Encode(x []float64, n int) ([]float64, error) {
	if n < 1 || len(x) != n*m.InputDim {
		return nil, fmt.Errorf("train: Encode: len(x) = %d, want n·InputDim = %d·%d", len(x), n, m.InputDim)
	}
	w := m.work(n)
	m.standardize(w.xs, x)
	e := make([]float64, n*m.encLen)
	if err := m.encode(w, e, n); err != nil {
		return nil, err
	}
	return e, nil
}

// crossEntropy returns the summed softmax cross-entropy of logits (n rows)
// against labels and the number of rows whose largest logit is the label's
// (the first maximum on ties). If grad is not nil it receives the gradient
// of the mean cross-entropy, (softmax(logits) − onehot(labels))/n.
func crossEntropy(grad, logits []float64, labels []int, classes int) (loss float64, correct int) {
	inv := 1 / float64(len(labels))
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
		if grad != nil {
			g := grad[r*classes : (r+1)*classes]
			for j, v := range row {
				g[j] = math.Exp(v-mx) / s * inv
			}
			g[y] -= inv
		}
	}
	return loss, correct
}

// checkMethod refuses, naming field, a method whose guarantees rest on a
// bound the model's cell lacks (the checks of checkProven and checkAids for
// one solve without dropout).
func (m *Model) checkMethod(field string, meth solver.MethodSpec) error {
	switch {
	case m.lacksProof(meth, false):
		return fieldErr(field, meth, m.unprovenReason())
	case m.lacksGamma(meth):
		return fieldErr(field, meth, fmt.Sprintf("needs a Lipschitz bound γ̄, which the cell declares none of (Model.Normalization = %v)", m.Config.Normalization))
	}
	return nil
}

// layer returns a deq.Layer over the model's cell with forward solver s
// and, if b is not nil, backward configuration b (a training layer; nil
// means an evaluation layer); a, if not nil, sets the layer's fixed-point
// correction and dropout. An evaluation layer with dropout is switched to
// evaluation (deq.Layer.SetEvaluation): it applies no mask.
func (m *Model) layer(s SolverConfig, b *BackwardConfig, a *AidsConfig) (*deq.Layer, error) {
	gamma := m.cell.Gamma()
	sh := m.cell.Shape()
	norm, err := m.Config.Norm.Norm(sh.Rows, sh.Hidden)
	if err != nil {
		return nil, fmt.Errorf("train: Config.Model.Norm: %w", err)
	}
	ds := deq.Settings{
		Norm:            norm,
		ForwardSettings: s.settings(false, s.Relative),
		ForwardOracle:   s.oracle(),
		Monitor:         deq.MonitorNever,
		CertifyFloat64:  m.CertifiesFloat64(),
		Split:           m.split,
	}
	if a != nil {
		ds.CorrectionStates, ds.Dropout = a.CorrectionStates, a.Dropout
		if b != nil {
			// A fixed dropout mask scales the cell's bound by 1/(1 − p).
			gamma /= 1 - a.Dropout
		}
	}
	ds.Forward = s.method(gamma)
	if b != nil {
		// The layer reads the settings of its backward mode and ignores
		// the others' (deq.Settings), so that every mode, and its check
		// in deq.New, comes from package deq.
		ds.Backward, ds.PhantomSteps = b.Mode, b.PhantomSteps
		if !b.Solver.Method.IsZero() {
			ds.Adjoint = b.Solver.method(gamma)
			ds.AdjointSettings = b.Solver.settings(true, true)
			ds.AdjointOracle = b.Solver.oracle()
		}
	}
	l, err := deq.New(m.cell, &ds)
	if err != nil {
		return nil, err
	}
	l.SetEvaluation(b == nil)
	return l, nil
}

// Proven reports whether the map of the model's forward solves is proven
// γ̄-Lipschitz in the model's norm: the cell's own map (see
// layers.Cell.Proven), or, for a cell with float32 products, the float64
// map its forward solves are certified on (see CertifiesFloat64). When it
// is not, the deterministic solvers still run, but a contraction, and the
// stochastic solver's guarantees, are not proven. The conv cell proves its
// bound only in ℓ2 (Schatten-2) and only without GroupNorm.
func (m *Model) Proven() bool {
	norm, err := m.norm()
	return err == nil && (m.cell.Proven(norm) || m.CertifiesFloat64())
}

// CertifiesFloat64 reports whether the model's forward solves (training
// and evaluation) iterate on the cell's float32 map and are certified on
// its float64 map (deq.Settings.CertifyFloat64): true for a cell with
// float32 products (Model.Precision) whose float64 map is proven
// Lipschitz in the model's norm (layers.Referenced.ReferenceProven): the
// dense cell in its constraint's norms, the conv cell in ℓ2 without
// GroupNorm, both under the projection. The adjoint solve and the
// gradients stay those of the float32 map.
func (m *Model) CertifiesFloat64() bool {
	r, ok := m.cell.(layers.Referenced)
	if !ok || m.Config.Precision != layers.Float32 {
		return false
	}
	norm, err := m.norm()
	return err == nil && r.ReferenceProven(norm)
}

// norm returns the per-example norm of the model's hidden state.
func (m *Model) norm() (solver.Norm, error) {
	sh := m.cell.Shape()
	return m.Config.Norm.Norm(sh.Rows, sh.Hidden)
}
