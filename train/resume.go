package train

import (
	"encoding/hex"
	"fmt"

	"github.com/deqgo/deq/datasets"
)

// DataSource records how a run's training and test sets were opened with
// datasets.Open, so that a resumed run can open the same sets: a Trainer
// stores Options.Source in its checkpoints, and Load returns it as
// Checkpoint.Source. Training does not use it otherwise, and Resume checks
// the sets it is given against the checkpoint's digest of the data
// whatever the source says.
type DataSource struct {
	// Spec is Open's spec: a data set's name (such as
	// datasets.FashionMNIST) or a directory of IDX files.
	Spec string `json:"spec"`
	// Seed is datasets.Options.Seed: the seed of the validation split and
	// of the synthetic digits.
	Seed uint64 `json:"seed"`
	// Sizes is datasets.Options.Sizes: the training and test limits and
	// the number of held-out validation images.
	Sizes datasets.SizeOptions `json:"sizes"`
	// ValidationAsTest reports that the run's test set is the held-out
	// validation set (datasets.Data.Validation) instead of the data set's
	// own test set.
	ValidationAsTest bool `json:"validation_as_test,omitempty"`
}

// validate refuses a source with negative sizes.
func (s *DataSource) validate() error {
	if s == nil {
		return nil
	}
	if z := s.Sizes; z.TrainLimit < 0 || z.TestLimit < 0 || z.Validation < 0 {
		return fmt.Errorf("%w: data source with negative sizes %+v", ErrCorrupt, z)
	}
	return nil
}

// Resume returns a Trainer that continues the run saved in the checkpoint
// at path, on the same training and test sets (checked against the
// digest the checkpoint holds; the error wraps ErrDataMismatch otherwise).
// Run then continues from the checkpoint's position. A nil opts means no
// options. To extend the run to more epochs, use Load, raise
// Checkpoint.Config.Epochs and call Checkpoint.Resume.
func Resume(path string, train, test *datasets.Dataset, opts *Options) (*Trainer, error) {
	ck, err := Load(path)
	if err != nil {
		return nil, err
	}
	return ck.Resume(train, test, opts)
}

// Resume returns a Trainer that continues the checkpoint's run (see the
// function Resume) with the configuration stored in the checkpoint.
//
// The one setting a resumed run may change is the number of epochs: with
// ck.Config.Epochs raised above the stored value, Run continues to the new
// total, whether or not the stored run was complete. Every other field of
// ck.Config must keep its stored value, and Epochs may not be lowered; the
// error is a *FieldError naming the field otherwise. A run interrupted
// after an extension resumes exactly like any other, as its checkpoints
// store the new total.
//
// # Extending the learning-rate schedule
//
// The schedule is always the one planned over the run's current
// Config.Epochs (see Config.Schedule): extending a run re-plans it over the
// new total from the checkpoint's position on. The batches already trained
// keep the rates they had; every later batch gets the rate that a run
// planned for the new total from the start gives at the same position. For
// the cosine schedule, extending a complete run of E epochs to N restarts
// the rate at LR·(1 + cos(πE/N))/2 (LR/4 for 10 to 15 epochs) and anneals
// it to zero at the new end; the step schedule's drops move to ⌊N/2⌋ and
// ⌊3N/4⌋; the constant schedule is unchanged, so that an extended constant
// run equals, bit for bit, a run planned for N epochs from the start. The
// continuation depends only on the checkpoint and N, so it is
// deterministic. Options.Source, if nil, keeps the checkpoint's Source.
func (ck *Checkpoint) Resume(train, test *datasets.Dataset, opts *Options) (*Trainer, error) {
	cfg, err := ck.resumeConfig()
	if err != nil {
		return nil, err
	}
	if err := checkData(train, test); err != nil {
		return nil, err
	}
	if fp := fingerprint(train, test); hex.EncodeToString(fp[:]) != ck.meta.Data {
		return nil, fmt.Errorf("train: %w (%s: %d images, %s: %d images differ from the run's)", ErrDataMismatch, train.Name, train.Len(), test.Name, test.Len())
	}
	if train.Dim() != ck.Model.InputDim || train.Classes != ck.Model.Classes {
		return nil, fmt.Errorf("train: %w", ErrDataMismatch)
	}
	t, err := newTrainer(cfg, ck.Model, train, test, opts)
	if err != nil {
		return nil, err
	}
	if t.source == nil && ck.Source != nil {
		s := *ck.Source
		t.source = &s
	}
	if ck.Batch > t.batcher.Batches() || (ck.Epoch == ck.meta.Config.Epochs && ck.Batch != 0) {
		return nil, fmt.Errorf("train: %w: batch %d of %d", ErrCorrupt, ck.Batch, t.batcher.Batches())
	}
	as := AdamState{Step: ck.meta.AdamStep}
	if as.Step > 0 {
		infos, _ := ck.Model.tensors(func(string, int, int, []float64) error { return nil })
		for _, ti := range infos {
			as.M = append(as.M, ck.tensors["adam.m."+ti.Name])
			as.V = append(as.V, ck.tensors["adam.v."+ti.Name])
		}
	}
	if err := t.adam.SetState(as); err != nil {
		return nil, fmt.Errorf("train: %w: %v", ErrCorrupt, err)
	}
	t.epoch, t.batch, t.steps, t.bad = ck.Epoch, ck.Batch, ck.Steps, ck.meta.Bad
	t.acc = ck.meta.Accumulator
	t.history = ck.History
	return t, nil
}

// resumeConfig returns the configuration with which the checkpoint's run
// continues: the stored one, with Epochs raised to ck.Config.Epochs.
func (ck *Checkpoint) resumeConfig() (Config, error) {
	stored := ck.meta.Config
	for _, d := range ck.Config.Diff(stored) {
		switch {
		case d.Field != "Epochs":
			return Config{}, fieldErr(d.Field, d.A, fmt.Sprintf("differs from the checkpoint's %v: a resumed run keeps its configuration (only Epochs may be raised)", d.B))
		case ck.Config.Epochs < stored.Epochs:
			return Config{}, fieldErr(d.Field, d.A, fmt.Sprintf("is below the checkpoint's %d: a resumed run can be extended, not shortened", stored.Epochs))
		}
	}
	cfg := stored
	cfg.Epochs = ck.Config.Epochs
	return cfg, nil
}
