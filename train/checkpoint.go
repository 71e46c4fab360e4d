package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
)

// Limits and layout constants of the checkpoint format (see
// CheckpointVersion).
const (
	checkpointMagic = "DEQTRAIN"
	headerLen       = 32
	sumLen          = sha256.Size
	maxMetaLen      = 256 << 20
	maxDataLen      = 1 << 48
)

// CheckpointVersion is the checkpoint format version this build writes
// and reads. In version 1 all integers are little-endian and a file is
//
//	offset  size  field
//	0       8     magic "DEQTRAIN"
//	8       4     format version (1)
//	12      4     reserved, zero
//	16      8     M, length of the metadata
//	24      8     D, length of the tensor data
//	32      M     metadata: JSON (configuration, position, metrics, tensor table)
//	32+M    D     tensor data: float64 values of the tensors of the table, in order
//	32+M+D  32    SHA-256 of bytes [0, 32+M+D)
//
// A file is accepted only if it has exactly this length, the magic, this
// version, the checksum, finite tensors, and metadata and a tensor table
// consistent with the model its configuration describes. A version 1 file
// of a retired cell ("wide" or "mixture", replaced by "meanfield" and
// "experts") is refused with ErrVersion: its tensors belong to a cell this
// build does not have.
const CheckpointVersion = 1

// Errors of Load and Resume; the returned errors wrap one of them.
var (
	// ErrNotCheckpoint: the file does not start with the checkpoint magic.
	ErrNotCheckpoint = errors.New("not a deq training checkpoint")
	// ErrVersion: the file is a checkpoint of another format version.
	ErrVersion = errors.New("unsupported checkpoint format version")
	// ErrTruncated: the file is shorter than its header says.
	ErrTruncated = errors.New("truncated checkpoint")
	// ErrChecksum: the file's SHA-256 does not match its content.
	ErrChecksum = errors.New("checkpoint checksum mismatch")
	// ErrCorrupt: the checksum matches but the content is inconsistent
	// (trailing bytes, bad metadata, tensors that do not fit the model).
	ErrCorrupt = errors.New("corrupt checkpoint")
	// ErrDataMismatch: Resume was given other data than the checkpoint's
	// run used.
	ErrDataMismatch = errors.New("checkpoint was trained on other data")
)

// tensorInfo names a tensor of the data section.
type tensorInfo struct {
	Name string `json:"name"`
	Rows int    `json:"rows"`
	Cols int    `json:"cols"`
}

// meta is the metadata of a checkpoint.
type meta struct {
	Config      Config         `json:"config"`
	InputDim    int            `json:"input_dim"`
	ImageRows   int            `json:"image_rows,omitempty"` // the conv model's image size
	ImageCols   int            `json:"image_cols,omitempty"`
	Classes     int            `json:"classes"`
	Data        string         `json:"data_sha256"`
	TrainSet    string         `json:"train_set"`
	TestSet     string         `json:"test_set"`
	Source      *DataSource    `json:"source,omitempty"` // absent before DataSource
	Epoch       int            `json:"epoch"`
	Batch       int            `json:"batch"`
	Steps       int            `json:"steps"`
	Bad         int            `json:"bad"`
	AdamStep    int            `json:"adam_step"`
	Projection  *int           `json:"projection_calls,omitempty"`
	Accumulator epochAcc       `json:"accumulator"`
	History     []EpochMetrics `json:"history"`
	Traces      [][]TracePoint `json:"traces"`
	Tensors     []tensorInfo   `json:"tensors"`
	CustomCell  bool           `json:"custom_cell,omitempty"` // the cell is a CellFunc's (LoadWithCell)
}

// Save writes the trainer's state to path atomically: to a temporary file
// in the same directory, synced, then renamed over path (and the directory
// synced), so that path always holds either the previous checkpoint or the
// new one in full, even if the process is killed. It refuses to write
// parameters or optimiser moments that are not finite.
func (t *Trainer) Save(path string) error {
	b, err := t.marshal()
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

// marshal encodes the trainer's state.
func (t *Trainer) marshal() ([]byte, error) {
	m := meta{
		Config: t.cfg, InputDim: t.model.InputDim, Classes: t.model.Classes,
		Data: hex.EncodeToString(t.data[:]), TrainSet: t.train.Name, TestSet: t.test.Name,
		Epoch: t.epoch, Batch: t.batch, Steps: t.steps, Bad: t.bad,
		Accumulator: t.acc, Source: t.source,
	}
	m.CustomCell = t.model.custom
	if t.model.conv != nil {
		m.ImageRows, m.ImageCols = t.model.rows, t.model.cols
	}
	for _, e := range t.history {
		e.clearTimes()
		m.Traces = append(m.Traces, e.Trace)
		e.Trace = nil
		m.History = append(m.History, e)
	}
	var data []float64
	add := func(name string, rows, cols int, x []float64) error {
		if !numeric.AllFinite(x) {
			return fmt.Errorf("train: refusing to write a checkpoint: %s holds NaN or Inf", name)
		}
		m.Tensors = append(m.Tensors, tensorInfo{name, rows, cols})
		data = append(data, x...)
		return nil
	}
	names, err := t.model.tensors(add)
	if err != nil {
		return nil, err
	}
	as := t.adam.State()
	m.AdamStep = as.Step
	for i := range as.M {
		if err := add("adam.m."+names[i].Name, names[i].Rows, names[i].Cols, as.M[i]); err != nil {
			return nil, err
		}
		if err := add("adam.v."+names[i].Name, names[i].Rows, names[i].Cols, as.V[i]); err != nil {
			return nil, err
		}
	}
	if ps, ok := t.model.cell.(layers.ProjectionStater); ok {
		st := ps.ProjectionState()
		m.Projection = &st.Calls
		if err := add("cell.projection", 1, len(st.Vector), st.Vector); err != nil {
			return nil, err
		}
	}
	js, err := json.Marshal(&m)
	if err != nil {
		return nil, fmt.Errorf("train: encoding checkpoint metadata: %w", err)
	}
	buf := make([]byte, headerLen, headerLen+len(js)+8*len(data)+sumLen)
	copy(buf, checkpointMagic)
	binary.LittleEndian.PutUint32(buf[8:], CheckpointVersion)
	binary.LittleEndian.PutUint64(buf[16:], uint64(len(js)))
	binary.LittleEndian.PutUint64(buf[24:], uint64(8*len(data)))
	buf = append(buf, js...)
	for _, v := range data {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	sum := sha256.Sum256(buf)
	return append(buf, sum[:]...), nil
}

// tensors passes the model's tensors to add in checkpoint order: the input
// standardisation, then the trainable parameters (whose infos it returns,
// in the order of the optimiser's moments).
func (m *Model) tensors(add func(name string, rows, cols int, x []float64) error) ([]tensorInfo, error) {
	if m.Mean != nil {
		if err := add("input.mean", 1, len(m.Mean), m.Mean); err != nil {
			return nil, err
		}
		if err := add("input.std", 1, len(m.Std), m.Std); err != nil {
			return nil, err
		}
	}
	var out []tensorInfo
	for _, p := range m.params {
		if err := add(p.name, p.rows, p.cols, p.data); err != nil {
			return nil, err
		}
		out = append(out, tensorInfo{p.name, p.rows, p.cols})
	}
	return out, nil
}

// writeAtomic writes b to path through a synced temporary file and a
// rename.
func writeAtomic(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("train: writing checkpoint: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("train: writing checkpoint %s: %w", path, err)
		}
	}()
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if _, err = f.Write(b); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename itself durable. Some file systems cannot sync a
	// directory; the data is on disk either way.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Checkpoint is a checkpoint read by Load.
type Checkpoint struct {
	// Config is the run's configuration, defaults filled in. Raising its
	// Epochs before Resume extends the run (see Checkpoint.Resume); Resume
	// refuses any other change.
	Config Config
	// Epoch and Batch are the position of the next batch to train (Epoch
	// equals Config.Epochs when the run is complete).
	Epoch, Batch int
	// Steps is the number of optimiser steps taken.
	Steps int
	// History holds the metrics of the completed epochs (wall times zero).
	History []EpochMetrics
	// Model is the model with the checkpoint's parameters.
	Model *Model
	// TrainSet and TestSet are the names of the data sets the run used
	// (datasets.Dataset.Name, such as "fashion-mnist/train").
	TrainSet, TestSet string
	// Source is how the run's data sets were opened (Options.Source), or
	// nil if the run did not record it.
	Source *DataSource

	meta    meta
	tensors map[string][]float64
}

// Load reads and verifies a checkpoint written by Trainer.Save. The error
// wraps ErrNotCheckpoint, ErrVersion, ErrTruncated, ErrChecksum or
// ErrCorrupt when the file is not an intact checkpoint this build can read.
func Load(path string) (*Checkpoint, error) { return load(path, nil) }

// load is Load, building a CellFunc's cell with newCell (see LoadWithCell).
func load(path string, newCell CellFunc) (*Checkpoint, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("train: %s: %w (not a regular file)", path, ErrNotCheckpoint)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	ck, err := decodeWith(b, newCell)
	if err != nil {
		return nil, fmt.Errorf("train: %s: %w", path, err)
	}
	return ck, nil
}

// retiredCell returns an error wrapping ErrVersion if the metadata's
// configuration names a retired cell kind (see ParseCellKind); parse
// asks it when the metadata do not decode, as a retired kind does not.
func retiredCell(meta []byte) error {
	var m struct {
		Config struct{ Model struct{ Cell string } } `json:"config"`
	}
	if json.Unmarshal(meta, &m) != nil {
		return nil // decode reports malformed metadata
	}
	if k, ok := retiredCells[m.Config.Model.Cell]; ok {
		return fmt.Errorf("%w: the checkpoint holds the retired cell %q, replaced by %q; it cannot be loaded or resumed", ErrVersion, m.Config.Model.Cell, k)
	}
	return nil
}

// decode parses and verifies a checkpoint of a built-in cell.
func decode(b []byte) (*Checkpoint, error) { return decodeWith(b, nil) }

// decodeWith is decode with newCell, which builds a CellFunc's cell (nil
// for the built-in cells): parse, then the model's rebuild.
func decodeWith(b []byte, newCell CellFunc) (*Checkpoint, error) {
	m, tensors, err := parse(b)
	if err != nil {
		return nil, err
	}
	ck := &Checkpoint{meta: m, tensors: tensors}
	if err := ck.build(newCell); err != nil {
		return nil, err
	}
	return ck, nil
}

// parse verifies a checkpoint's header, lengths and checksum, then decodes
// its metadata (once) and its tensors, checking that the tensor table
// covers the data exactly with finite values. It builds no model: the
// cheap checks come first, so that a damaged file is refused before any
// model is allocated.
func parse(b []byte) (meta, map[string][]float64, error) {
	if len(b) < len(checkpointMagic) && bytes.HasPrefix([]byte(checkpointMagic), b) {
		return meta{}, nil, fmt.Errorf("%w: %d bytes", ErrTruncated, len(b))
	}
	if !bytes.HasPrefix(b, []byte(checkpointMagic)) {
		return meta{}, nil, ErrNotCheckpoint
	}
	if len(b) < headerLen {
		return meta{}, nil, fmt.Errorf("%w: %d bytes, shorter than the header", ErrTruncated, len(b))
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != CheckpointVersion {
		return meta{}, nil, fmt.Errorf("%w: the file has version %d, this build reads version %d", ErrVersion, v, CheckpointVersion)
	}
	ml, dl := binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
	if ml > maxMetaLen || dl > maxDataLen || dl%8 != 0 {
		return meta{}, nil, fmt.Errorf("%w: header declares %d metadata and %d data bytes", ErrCorrupt, ml, dl)
	}
	want := headerLen + ml + dl + sumLen
	switch {
	case uint64(len(b)) < want:
		return meta{}, nil, fmt.Errorf("%w: %d bytes, the header declares %d", ErrTruncated, len(b), want)
	case uint64(len(b)) > want:
		if sha256.Sum256(b[:want-sumLen]) == [32]byte(b[want-sumLen:want]) {
			return meta{}, nil, fmt.Errorf("%w: %d bytes after the checksum", ErrCorrupt, uint64(len(b))-want)
		}
		return meta{}, nil, fmt.Errorf("%w: %d bytes, the header declares %d", ErrChecksum, len(b), want)
	}
	body := b[:want-sumLen]
	if sha256.Sum256(body) != [32]byte(b[want-sumLen:]) {
		return meta{}, nil, ErrChecksum
	}
	raw := body[headerLen : headerLen+ml]
	var m meta
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&m)
	if err == nil {
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("data after the metadata object")
		}
	}
	if err != nil {
		if rerr := retiredCell(raw); rerr != nil {
			return meta{}, nil, rerr
		}
		return meta{}, nil, fmt.Errorf("%w: metadata: %v", ErrCorrupt, err)
	}
	data := body[headerLen+ml:]
	tensors := make(map[string][]float64, len(m.Tensors))
	off := 0
	for _, ti := range m.Tensors {
		left := (len(data) - off) / 8
		if ti.Rows < 0 || ti.Cols < 0 || (ti.Rows > 0 && ti.Cols > left/ti.Rows) {
			return meta{}, nil, fmt.Errorf("%w: tensor %s (%d×%d) does not fit the data", ErrCorrupt, ti.Name, ti.Rows, ti.Cols)
		}
		if _, dup := tensors[ti.Name]; dup {
			return meta{}, nil, fmt.Errorf("%w: tensor %s appears twice", ErrCorrupt, ti.Name)
		}
		x := make([]float64, ti.Rows*ti.Cols)
		for i := range x {
			x[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[off+8*i:]))
		}
		if !numeric.AllFinite(x) {
			return meta{}, nil, fmt.Errorf("%w: tensor %s holds NaN or Inf", ErrCorrupt, ti.Name)
		}
		tensors[ti.Name] = x
		off += 8 * len(x)
	}
	if off != len(data) {
		return meta{}, nil, fmt.Errorf("%w: %d data bytes not covered by the tensor table", ErrCorrupt, len(data)-off)
	}
	return m, tensors, nil
}

// build validates the metadata and rebuilds the model, with newCell for
// a CellFunc's cell.
func (ck *Checkpoint) build(newCell CellFunc) error {
	if err := checkCellFunc(ck.meta.CustomCell, newCell); err != nil {
		return err
	}
	if c := &ck.meta.Config; c.Model.Cell == ConvCell && c.Augment.Shift == 0 {
		// Written before DefaultConvShift: a conv run without
		// translations stored Shift 0, which is now spelt −1. A current
		// conv checkpoint never stores 0, so this changes no other.
		c.Augment.Shift = -1
	}
	if c := &ck.meta.Config; c.Model.Cell == ConvCell && c.Model.EncoderLayers == 0 {
		// Written before DefaultConvEncoderLayers: a one-layer encoder
		// stored 0. A current conv checkpoint stores the number.
		c.Model.EncoderLayers = 1
	}
	if c := &ck.meta.Config; c.Model.Precision == layers.DefaultPrecision {
		// Written before the Precision type: layers.Float64 was the zero
		// value, omitted, for every cell. A current checkpoint stores the
		// precision.
		c.Model.Precision = layers.Float64
	}
	m := ck.meta
	cfg, err := m.Config.Defaults()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if cfg != m.Config {
		return fmt.Errorf("%w: the configuration is not in canonical form", ErrCorrupt)
	}
	switch {
	case m.Epoch < 0 || m.Epoch > cfg.Epochs || m.Batch < 0 || m.Steps < 0 || m.Bad < 0 || m.AdamStep != m.Steps:
		return fmt.Errorf("%w: position epoch %d batch %d, %d steps (Adam %d)", ErrCorrupt, m.Epoch, m.Batch, m.Steps, m.AdamStep)
	case len(m.History) != m.Epoch || len(m.Traces) != m.Epoch:
		return fmt.Errorf("%w: %d epochs of metrics at epoch %d", ErrCorrupt, len(m.History), m.Epoch)
	}
	if err := m.Source.validate(); err != nil {
		return err
	}
	var norm *datasets.Normalizer
	if mean, ok := ck.tensors["input.mean"]; ok {
		norm = &datasets.Normalizer{Mean: mean, Std: ck.tensors["input.std"]}
		if len(norm.Std) != len(mean) || (len(mean) != 1 && len(mean) != m.InputDim) {
			return fmt.Errorf("%w: input standardisation has %d means and %d deviations", ErrCorrupt, len(mean), len(norm.Std))
		}
	}
	if (norm == nil) != (cfg.Normalize == datasets.NormNone) {
		return fmt.Errorf("%w: input standardisation does not match Normalize = %v", ErrCorrupt, cfg.Normalize)
	}
	// Refuse shapes the stored tensors cannot hold before allocating the
	// model, so that a damaged size cannot make Load allocate gigabytes.
	stored := 0.0
	for _, x := range ck.tensors {
		stored += float64(len(x))
	}
	if need := minStored(cfg.Model, m); need > stored {
		return fmt.Errorf("%w: the model needs at least %.0f parameters, the file stores %.0f values", ErrCorrupt, need, stored)
	}
	rows, cols := 1, m.InputDim // the dense models do not use the image's shape
	if cfg.Model.Cell == ConvCell {
		rows, cols = m.ImageRows, m.ImageCols
		if rows < 1 || cols < 1 || rows*cols != m.InputDim {
			return fmt.Errorf("%w: image size %d×%d for %d pixels", ErrCorrupt, rows, cols, m.InputDim)
		}
	}
	model, err := newModelWith(cfg.Model, rows, cols, m.Classes, norm, cfg.Seed, newCell)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	used := 0
	take := func(name string, rows, cols int, dst []float64) error {
		x, ok := ck.tensors[name]
		if !ok {
			return fmt.Errorf("%w: tensor %s is missing", ErrCorrupt, name)
		}
		if len(x) != rows*cols {
			return fmt.Errorf("%w: tensor %s has %d values, want %d×%d", ErrCorrupt, name, len(x), rows, cols)
		}
		copy(dst, x)
		used++
		return nil
	}
	infos, err := model.tensors(func(name string, rows, cols int, dst []float64) error { return take(name, rows, cols, dst) })
	if err != nil {
		return err
	}
	if m.Steps > 0 {
		for _, ti := range infos {
			for _, k := range []string{"adam.m.", "adam.v."} {
				if _, ok := ck.tensors[k+ti.Name]; !ok {
					return fmt.Errorf("%w: tensor %s%s is missing", ErrCorrupt, k, ti.Name)
				}
				used++
			}
		}
	}
	if ps, ok := model.cell.(layers.ProjectionStater); ok {
		v, has := ck.tensors["cell.projection"]
		if !has || m.Projection == nil {
			return fmt.Errorf("%w: the cell's projection state is missing", ErrCorrupt)
		}
		if err := ps.SetProjectionState(layers.ProjectionState{Calls: *m.Projection, Vector: v}); err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		used++
	}
	if used != len(ck.tensors) {
		return fmt.Errorf("%w: %d tensors the model does not use", ErrCorrupt, len(ck.tensors)-used)
	}
	ck.Config, ck.Epoch, ck.Batch, ck.Steps, ck.Model = cfg, m.Epoch, m.Batch, m.Steps, model
	ck.TrainSet, ck.TestSet, ck.Source = m.TrainSet, m.TestSet, m.Source
	for i, e := range m.History {
		e.Trace = m.Traces[i]
		ck.History = append(ck.History, e)
	}
	return nil
}

// minParams returns a lower bound on the number of parameters of a model
// with this configuration (encoder and readout weights and the cell's
// largest matrices), computed in float64 so that it cannot overflow.
func (c ModelConfig) minParams(inputDim, classes int) float64 {
	h, e := float64(c.Hidden), float64(c.Encoder)
	n := float64(inputDim)*e + h*float64(classes)
	switch c.Cell {
	case DenseCell:
		n += h * (h + e)
	case MeanFieldCell:
		n += float64(c.Units)*2*h + e*h
	case ExpertsCell:
		n += float64(c.Terms)*h*h + e*h
	case ConvCell:
		// The encoder's and the cell's kernels: 9·C per channel each, and
		// 9·C² per further encoder block.
		ch := float64(c.Channels)
		n = 9*ch + 9*ch*ch*(float64(max(c.Kernels, 1))+float64(max(c.EncoderLayers, 1))-1) + float64(classes)
	}
	if r := float64(c.ReadoutHidden); r > 0 {
		// The hidden layer: L·r + r·classes in place of the L·classes
		// counted above, L the readout's features: h for the vector cells,
		// at least 1 for conv.
		l := h
		if c.Cell == ConvCell {
			l = 1
		}
		n += l*r + r*float64(classes) - l*float64(classes)
	}
	return n
}
