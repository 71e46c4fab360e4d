package train

import (
	"errors"
	"fmt"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/layers"
)

// CellFunc builds the DEQ cell of a model trained by NewWithCell: a cell
// whose input, per example, is the encoder's input features
// (Shape().InputLen() = input = Config.Model.Encoder) and whose hidden state
// has hidden entries (Shape().HiddenLen() = hidden = Config.Model.Hidden),
// which the readout reads. The cell initialises its parameters from seed,
// which Config.Seed derives, so that a run is reproducible.
//
// The trainer reads and updates the cell's parameters (Cell.Params) through
// their Data and GradData slices, accumulates their gradients with the
// evaluators' VJP, and calls Project after every optimiser step. Weight
// decay (Config.WeightDecay) applies to every parameter except those named
// b, g or gn (optionally followed by digits and a dotted suffix: biases and
// gains).
type CellFunc func(input, hidden int, seed uint64) (layers.Cell, error)

// NewWithCell is New for a model whose DEQ cell newCell builds: any
// layers.Cell, a layers.GraphCell or a cell written by hand, deterministic
// or stochastic. The model is the dense model around it: the input is
// standardised (Config.Normalize), a dense encoder maps it to
// Config.Model.Encoder features, the DEQ layer solves z = f(z, x) with the
// cell and the readout (Config.Model.ReadoutHidden, then a dense layer)
// classifies z. The encoder's and readout's sizes come from the data (the
// image size and the number of classes) and Config.Model.Hidden and
// Encoder.
//
// The fields of Config.Model that configure a built-in cell do not apply
// and must be zero: Cell (DenseCell), Gamma, ExactEvery, Normalization,
// Precision, Units and Terms; the cell declares its own bound (Gamma) and
// proofs (Proven), and Trainer.Config reports those fields' defaults,
// which the model does not use. The solvers' refusals are those of the built-in cells:
// a stochastic method (VR-GHAL and the stochastic baselines) needs a cell
// that proves its bound in Config.Model.Norm (Cell.Proven), GHAL and
// VR-GHAL a finite bound of at most one (with dropout, after its scaling),
// and Aids.JacWeight a cell whose evaluators implement
// layers.JacobianPenalizer.
//
// Checkpoints hold the cell's parameters (named "cell." and their names)
// but no code: LoadWithCell and ResumeWithCell read them back with the
// same CellFunc, and Load and Resume refuse them with an error wrapping
// ErrCustomCell.
func NewWithCell(cfg Config, newCell CellFunc, train, test *datasets.Dataset, opts *Options) (*Trainer, error) {
	if newCell == nil {
		return nil, errors.New("train: NewWithCell: newCell is nil")
	}
	if err := cfg.Model.checkCustom(); err != nil {
		return nil, err
	}
	return newWithCell(cfg, newCell, train, test, opts)
}

// ErrCustomCell is wrapped by the error of Load and Resume for a
// checkpoint of a model whose cell a CellFunc built (see NewWithCell), and
// by that of LoadWithCell and ResumeWithCell for one of a built-in cell.
var ErrCustomCell = errors.New("checkpoint and CellFunc do not match")

// LoadWithCell is Load for a checkpoint written by a Trainer of
// NewWithCell: newCell, the CellFunc of the run, builds the cell (with the
// run's sizes and seed) and the checkpoint's values replace its
// parameters, which must have the same names and shapes. The error wraps
// ErrCustomCell when the checkpoint holds a built-in cell.
func LoadWithCell(path string, newCell CellFunc) (*Checkpoint, error) {
	if newCell == nil {
		return nil, errors.New("train: LoadWithCell: newCell is nil")
	}
	return load(path, newCell)
}

// ResumeWithCell is Resume for a checkpoint written by a Trainer of
// NewWithCell, whose CellFunc newCell is (see LoadWithCell).
func ResumeWithCell(path string, newCell CellFunc, train, test *datasets.Dataset, opts *Options) (*Trainer, error) {
	ck, err := LoadWithCell(path, newCell)
	if err != nil {
		return nil, err
	}
	return ck.Resume(train, test, opts)
}

// checkCellFunc refuses a checkpoint whose cell is a CellFunc's (custom)
// without a CellFunc, and one of a built-in cell with one.
func checkCellFunc(custom bool, newCell CellFunc) error {
	switch {
	case custom && newCell == nil:
		return fmt.Errorf("%w: the checkpoint's cell was built by a CellFunc; load it with LoadWithCell or ResumeWithCell", ErrCustomCell)
	case !custom && newCell != nil:
		return fmt.Errorf("%w: the checkpoint holds a built-in cell; load it with Load or Resume", ErrCustomCell)
	}
	return nil
}

// minStored is the least number of values the checkpoint of m must store
// (see ModelConfig.minParams), for a CellFunc's cell the dense encoder's
// weights alone.
func minStored(c ModelConfig, m meta) float64 {
	if !m.CustomCell {
		return c.minParams(m.InputDim, m.Classes)
	}
	return float64(m.InputDim) * float64(c.Encoder)
}

// checkCustom refuses the fields of a model configuration that configure
// a built-in cell (see NewWithCell).
func (m ModelConfig) checkCustom() error {
	const reason = "does not apply to a CellFunc's cell (the cell declares its own bound and proofs); leave it zero"
	switch {
	case m.Cell != DenseCell:
		return fieldErr("Model.Cell", m.Cell, reason)
	case m.Gamma != 0:
		return fieldErr("Model.Gamma", m.Gamma, reason)
	case m.ExactEvery != 0:
		return fieldErr("Model.ExactEvery", m.ExactEvery, reason)
	case m.Normalization != layers.Projection:
		return fieldErr("Model.Normalization", m.Normalization, reason)
	case m.Precision != layers.DefaultPrecision:
		return fieldErr("Model.Precision", m.Precision, reason)
	case m.Units != 0:
		return fieldErr("Model.Units", m.Units, reason)
	case m.Terms != 0:
		return fieldErr("Model.Terms", m.Terms, reason)
	}
	return nil
}

// newCustom builds the model's cell with newCell and checks that it fits
// the model: its input is the encoder's features, its state what the
// readout reads, and its parameters are named uniquely.
func (m *Model) newCustom(cfg ModelConfig, newCell CellFunc, seed uint64) error {
	cell, err := newCell(cfg.Encoder, cfg.Hidden, seed)
	if err != nil {
		return fmt.Errorf("train: NewWithCell: newCell: %w", err)
	}
	if cell == nil {
		return errors.New("train: NewWithCell: newCell returned a nil cell")
	}
	sh := cell.Shape()
	if sh.InputLen() != cfg.Encoder || sh.HiddenLen() != cfg.Hidden {
		return fmt.Errorf("train: NewWithCell: the cell's shape %+v has input length %d and state length %d, want Model.Encoder = %d and Model.Hidden = %d",
			sh, sh.InputLen(), sh.HiddenLen(), cfg.Encoder, cfg.Hidden)
	}
	seen := make(map[string]bool)
	for i, p := range cell.Params() {
		switch {
		case p == nil:
			return fmt.Errorf("train: NewWithCell: the cell's parameter %d is nil", i)
		case seen[p.Name()]:
			return fmt.Errorf("train: NewWithCell: the cell has two parameters named %q", p.Name())
		}
		seen[p.Name()] = true
	}
	if _, err := cfg.Norm.Norm(sh.Rows, sh.Hidden); err != nil {
		return fmt.Errorf("train: Config.Model.Norm: %w", err)
	}
	m.cell, m.custom = cell, true
	m.encLen, m.readLen = cfg.Encoder, cfg.Hidden
	return nil
}

// cellName names the model's cell in messages.
func (m *Model) cellName() string {
	if m.custom {
		return "CellFunc's"
	}
	return m.Config.Cell.String()
}
