package train

import (
	"cmp"
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
)

// Config configures a training run. The zero value of every field selects
// the documented default (Defaults returns the filled-in copy); negative,
// NaN and unknown values are errors naming the field (*FieldError).
//
// The enumerations are typed values; their text forms (the names of their
// Parse functions) are the JSON form of a Config in checkpoints and
// metrics.
//
// A Config is saved in every checkpoint, and Resume refuses a checkpoint
// whose run differs, so every field here is part of a run's identity: the
// same Config, data and build give the same metrics and checkpoint bytes.
type Config struct {
	// Seed seeds the initialisation, the per-epoch shuffles and every
	// solver draw (each batch's solves get seeds derived from Seed and the
	// batch's position).
	Seed uint64
	// Epochs is the number of passes over the training set. Zero means
	// DefaultEpochs (DefaultConvEpochs for the conv cell; see DefaultsFor).
	Epochs int
	// BatchSize is the number of images per training batch. Zero means
	// DefaultBatchSize (DefaultConvBatchSize for the conv cell). The last
	// partial batch of an epoch is dropped (training batches have a fixed
	// size); with shuffling, every image is seen in most epochs.
	BatchSize int
	// EvalBatchSize is the number of test images per evaluation batch. Zero
	// means DefaultEvalBatchSize.
	EvalBatchSize int
	// Normalize standardises the pixels with statistics of the training set
	// (saved in the model); the zero value, datasets.NormDefault, selects
	// datasets.NormGlobal, which Defaults stores.
	Normalize datasets.Normalization

	// LR is the peak learning rate of Adam. Zero means DefaultLR
	// (DefaultConvLR for the conv cell).
	LR float64
	// Schedule is the learning-rate schedule over the run's optimiser
	// steps t = 0, …, T−1 (T = Epochs × batches per epoch):
	//
	//	Cosine (the zero value)  LR·(1 + cos(πt/T))/2
	//	Step                     LR, then LR/10 from epoch ⌊Epochs/2⌋ and LR/100 from ⌊3·Epochs/4⌋
	//	Constant                 LR
	//
	// t counts the batches of the run, skipped ones included. A resumed run
	// extended to more epochs re-plans the schedule over its new Epochs
	// from its position on (see Checkpoint.Resume).
	Schedule Schedule
	// WeightDecay is the decoupled weight decay of AdamW: every step first
	// shrinks each weight matrix (not the biases) by the factor
	// 1 − lr_t·WeightDecay. Zero means none.
	WeightDecay float64
	// ClipNorm clips the gradient by its global norm: when the Euclidean
	// norm of all parameter gradients together exceeds ClipNorm, they are
	// scaled down to it. Zero means DefaultClipNorm; a negative value
	// disables clipping.
	ClipNorm float64
	// Beta1, Beta2 and AdamEps are Adam's moment decays and denominator
	// offset. Zero means DefaultBeta1, DefaultBeta2 and DefaultAdamEps.
	Beta1, Beta2, AdamEps float64

	// MaxBadBatches is the number of consecutive skipped batches (see
	// Trainer) after which training stops with ErrTooManyBadBatches. Zero
	// means DefaultMaxBadBatches.
	MaxBadBatches int

	// Model describes the network.
	Model ModelConfig
	// Forward is the forward solver of training. Zero fields take the
	// values of DefaultForward() (DefaultsFor(ConvCell).Forward for the
	// conv cell).
	Forward SolverConfig
	// Backward is the backward mode and its solver.
	Backward BackwardConfig
	// Eval is the forward solver of evaluation. Zero fields take Forward's
	// values, except that a zero Tol means Forward.Tol/10 and a zero
	// MaxIter 2·Forward.MaxIter: evaluation solves more tightly.
	Eval SolverConfig

	// Aids are the training aids of the DEQ literature (Jacobian
	// regularisation, fixed-point correction, DEQ dropout). The zero value
	// uses none of them.
	Aids AidsConfig `json:",omitzero"`

	// Augment is the data augmentation of the training batches (never of
	// the test set). Its zero value takes the cell's default,
	// DefaultsFor(Model.Cell).Augment: translations of up to
	// DefaultConvShift pixels for the conv cell, none for the others, and
	// no rotation or scaling for any cell.
	Augment AugmentConfig `json:",omitzero"`

	// Split is the number of parts into which the training and evaluation
	// layers split each batch's examples, each part solved on its own
	// goroutine (deq.Settings.Split): dense cell only. Zero and one mean
	// one solve per batch.
	Split int `json:",omitzero"`
}

// Defaults validates c and returns a copy with every default filled in.
// Its errors are *FieldError.
func (c Config) Defaults() (Config, error) {
	d := c
	if err := nonNegative(intField{"Epochs", c.Epochs}, intField{"BatchSize", c.BatchSize}, intField{"EvalBatchSize", c.EvalBatchSize},
		intField{"MaxBadBatches", c.MaxBadBatches}, intField{"Backward.PhantomSteps", c.Backward.PhantomSteps}, intField{"Split", c.Split}); err != nil {
		return d, err
	}
	switch {
	case !validText(c.Normalize):
		return d, fieldErr("Normalize", c.Normalize, "is not a normalisation")
	case c.LR < 0 || notFinite(c.LR):
		return d, fieldErr("LR", c.LR, "must be positive and finite")
	case !c.Schedule.valid():
		return d, fieldErr("Schedule", c.Schedule, "is not a schedule")
	case c.WeightDecay < 0 || notFinite(c.WeightDecay):
		return d, fieldErr("WeightDecay", c.WeightDecay, "must be non-negative and finite")
	case notFinite(c.ClipNorm):
		return d, fieldErr("ClipNorm", c.ClipNorm, "must be finite (negative disables clipping)")
	case c.Beta1 < 0 || c.Beta1 >= 1 || math.IsNaN(c.Beta1):
		return d, fieldErr("Beta1", c.Beta1, "must lie in (0, 1)")
	case c.Beta2 < 0 || c.Beta2 >= 1 || math.IsNaN(c.Beta2):
		return d, fieldErr("Beta2", c.Beta2, "must lie in (0, 1)")
	case c.AdamEps < 0 || notFinite(c.AdamEps):
		return d, fieldErr("AdamEps", c.AdamEps, "must be positive and finite")
	case !validText(c.Backward.Mode):
		return d, fieldErr("Backward.Mode", c.Backward.Mode, "is not a backward mode")
	}
	if !c.Model.Cell.valid() {
		return d, fieldErr("Model.Cell", c.Model.Cell, "is not a cell kind")
	}
	switch {
	case c.Split > 1 && c.Model.Cell != DenseCell:
		return d, fieldErr("Split", c.Split, "applies to the dense cell only, whose cell can be forked (layers.Forker)")
	case c.Split > 1 && c.Aids.CorrectionStates > 0:
		return d, fieldErr("Split", c.Split, "cannot be combined with Aids.CorrectionStates, which collects the trajectory of one solve")
	}
	base := DefaultsFor(c.Model.Cell)
	d.Epochs = cmp.Or(c.Epochs, base.Epochs)
	d.BatchSize = cmp.Or(c.BatchSize, base.BatchSize)
	d.EvalBatchSize = cmp.Or(c.EvalBatchSize, DefaultEvalBatchSize)
	d.Normalize = cmp.Or(c.Normalize, datasets.NormGlobal)
	d.LR = cmp.Or(c.LR, base.LR)
	d.ClipNorm = cmp.Or(c.ClipNorm, DefaultClipNorm)
	d.Beta1 = cmp.Or(c.Beta1, DefaultBeta1)
	d.Beta2 = cmp.Or(c.Beta2, DefaultBeta2)
	d.AdamEps = cmp.Or(c.AdamEps, DefaultAdamEps)
	d.MaxBadBatches = cmp.Or(c.MaxBadBatches, DefaultMaxBadBatches)
	var err error
	if d.Model, err = c.Model.defaults(); err != nil {
		return d, err
	}
	if d.Forward, err = c.Forward.merge("Forward", base.Forward); err != nil {
		return d, err
	}
	d.Backward.Mode = cmp.Or(c.Backward.Mode, base.Backward.Mode)
	d.Backward.PhantomSteps = cmp.Or(c.Backward.PhantomSteps, deq.DefaultPhantomSteps)
	if d.Backward.Solver, err = c.Backward.Solver.merge("Backward.Solver", base.Backward.Solver); err != nil {
		return d, err
	}
	if d.Aids, err = c.Aids.defaults(); err != nil {
		return d, err
	}
	d.Augment = c.Augment.defaults(base.Augment)
	evalBase := d.Forward
	evalBase.Tol /= 10
	evalBase.MaxIter *= 2
	if d.Eval, err = c.Eval.merge("Eval", evalBase); err != nil {
		return d, err
	}
	if d.Model.Precision == layers.DefaultPrecision {
		d.Model.Precision = d.defaultPrecision()
	}
	return d, nil
}

// defaultPrecision returns the precision that layers.DefaultPrecision stands for
// in the run d (its solvers' defaults filled in): DefaultConvPrecision
// for the conv cell unless the run's adjoint solve uses a method that
// needs a proven Lipschitz bound (a forward or evaluation one is certified
// on the float64 map, Model.CertifiesFloat64; the adjoint solve runs on
// the float32 map), and layers.Float64 otherwise (see
// ModelConfig.Precision).
func (d Config) defaultPrecision() layers.Precision {
	if d.Model.Cell != ConvCell {
		return layers.Float64
	}
	if d.Model.provableConv() && d.Backward.Mode == deq.Implicit && NeedsProvenBound(d.Backward.Solver.Method) {
		return layers.Float64
	}
	return DefaultConvPrecision
}

// names joins the names of xs with ", ".
func names[T fmt.Stringer](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, ", ")
}

// validText reports whether v is a value of its enumeration (one of
// layers' activations or normalisations): whether it has a text form.
func validText(v encoding.TextMarshaler) bool {
	_, err := v.MarshalText()
	return err == nil
}

// FieldError reports an invalid Config field.
type FieldError struct {
	// Field is the field's path below Config, such as "Model.Hidden", as
	// Diff names it.
	Field string
	// Value is the field's value.
	Value any
	// Reason says what is wrong with it.
	Reason string

	cause error // the error of the check that refused the value, if any
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("train: Config.%s = %v %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns the error of the check that refused the value when
// another package made it (for Augment.Shift, datasets.NewShifter's; for
// Augment.Rotate and Augment.Scale, datasets.NewWarper's), and
// nil otherwise.
func (e *FieldError) Unwrap() error { return e.cause }

// intField is an integer field with its path below Config, for
// nonNegative.
type intField struct {
	name string
	v    int
}

// nonNegative returns the FieldError of the first of fs that is negative,
// or nil.
func nonNegative(fs ...intField) error {
	for _, f := range fs {
		if f.v < 0 {
			return fieldErr(f.name, f.v, "must not be negative")
		}
	}
	return nil
}

func fieldErr(field string, v any, why string) error {
	return &FieldError{Field: field, Value: v, Reason: why}
}

// FieldDiff is a field in which two Configs differ (see Config.Diff).
type FieldDiff struct {
	// Field is the field's path below Config, such as "Model.Hidden" or
	// "Backward.Solver.Tol".
	Field string
	// A and B are the field's values in the receiver and the argument of
	// Diff.
	A, B any
}

// Diff returns the fields in which c and o differ, in the order of their
// declaration. Nested configurations (ModelConfig, SolverConfig,
// BackwardConfig) are compared field by field, those of embedded settings
// under their promoted names (Forward.Delta); every other field, typed values
// with a text form included, as a whole.
func (c Config) Diff(o Config) []FieldDiff {
	return diff(nil, "", reflect.ValueOf(c), reflect.ValueOf(o))
}

func diff(out []FieldDiff, prefix string, a, b reflect.Value) []FieldDiff {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		fa, fb := a.Field(i), b.Field(i)
		if f.Type.Kind() == reflect.Struct && !f.Type.Implements(textMarshaler) && hasExported(f.Type) {
			p := prefix + f.Name + "."
			if f.Anonymous {
				// Embedded settings (solver.MethodSettings): their fields
				// are named as promoted, Forward.Delta.
				p = prefix
			}
			out = diff(out, p, fa, fb)
			continue
		}
		if !fa.Equal(fb) {
			out = append(out, FieldDiff{Field: prefix + f.Name, A: fa.Interface(), B: fb.Interface()})
		}
	}
	return out
}

// textMarshaler is the type of encoding.TextMarshaler: the typed values
// (solver.MethodSpec, solver.NormSpec) implement it, the nested
// configurations do not.
var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// hasExported reports whether the struct type t has an exported field.
func hasExported(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			return true
		}
	}
	return false
}

func notFinite(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
