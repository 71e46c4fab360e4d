package train

import (
	"errors"
	"fmt"

	"github.com/deqgo/deq/internal/enum"
	"github.com/deqgo/deq/solver"
)

// ErrUnknownName is wrapped by the errors of the Parse functions of this
// package (and of the UnmarshalText methods that call them) for a name they
// do not accept.
var ErrUnknownName = errors.New("train: unknown")

// CellKind selects the DEQ cell of a model (see ModelConfig.Cell).
type CellKind int

const (
	// DenseCell, the zero value, is the deterministic layers.Dense cell.
	DenseCell CellKind = iota
	// MeanFieldCell is the stochastic layers.MeanField cell: the
	// injection of the encoder's features plus the mean-field average of
	// ModelConfig.Units hidden units, of which only the average is
	// sampled.
	MeanFieldCell
	// ExpertsCell is the stochastic layers.Experts cell: the injection
	// plus the average of ModelConfig.Terms dense experts.
	ExpertsCell
	// ConvCell is the convolutional layers.Conv cell on
	// ModelConfig.Channels channels, behind a layers.ConvEncoder and read
	// out through 2×2 average pooling; stochastic with ModelConfig.Kernels
	// > 1.
	ConvCell
)

// Schedule is a learning-rate schedule (see Config.Schedule).
type Schedule int

const (
	// Cosine, the zero value, decays the learning rate as
	// LR·(1 + cos(πt/T))/2 over the run's T optimiser steps.
	Cosine Schedule = iota
	// Step uses LR, then LR/10 from epoch ⌊Epochs/2⌋ and LR/100 from epoch
	// ⌊3·Epochs/4⌋.
	Step
	// Constant keeps LR.
	Constant
)

// The names of the package's enumerations, one table each.
var (
	cells     = enum.Table[CellKind]{Names: []string{"dense", "meanfield", "experts", "conv"}, Unknown: ErrUnknownName, What: "cell"}
	schedules = enum.Table[Schedule]{Names: []string{"cosine", "step", "constant"}, Unknown: ErrUnknownName, What: "schedule"}
)

// retiredCells maps the names of the cells this package no longer offers
// to those of the cells that replaced them.
var retiredCells = map[string]CellKind{"wide": MeanFieldCell, "mixture": ExpertsCell}

// CellKinds returns the cell kinds, in the order of their values.
func CellKinds() []CellKind { return cells.Values() }

// Schedules returns the schedules, in the order of their values.
func Schedules() []Schedule { return schedules.Values() }

// String returns the name ParseCellKind accepts: "dense", "meanfield",
// "experts" or "conv".
func (k CellKind) String() string { return cells.Name(k) }

// String returns the name ParseSchedule accepts: "cosine", "step" or
// "constant".
func (s Schedule) String() string { return schedules.Name(s) }

func (k CellKind) valid() bool { return cells.Valid(k) }
func (s Schedule) valid() bool { return schedules.Valid(s) }

// ParseCellKind returns the cell kind named s. The retired names "wide"
// and "mixture" (the first stochastic cells, which put the input inside
// the sampled average) are refused with an error naming the cell that
// replaced them.
func ParseCellKind(s string) (CellKind, error) {
	if k, ok := retiredCells[s]; ok {
		return 0, fmt.Errorf("%w cell %q: it was replaced by %q", ErrUnknownName, s, k)
	}
	return cells.Parse(s)
}

// MarshalText implements encoding.TextMarshaler with the kind's name.
func (k CellKind) MarshalText() ([]byte, error) { return cells.MarshalText(k) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseCellKind.
func (k *CellKind) UnmarshalText(b []byte) error { return enum.Unmarshal(k, b, ParseCellKind) }

// ParseSchedule returns the schedule named s.
func ParseSchedule(s string) (Schedule, error) { return schedules.Parse(s) }

// MarshalText implements encoding.TextMarshaler with the schedule's name.
func (s Schedule) MarshalText() ([]byte, error) { return schedules.MarshalText(s) }

// UnmarshalText implements encoding.TextUnmarshaler with ParseSchedule.
func (s *Schedule) UnmarshalText(b []byte) error { return schedules.UnmarshalText(s, b) }

// Methods returns the methods a SolverConfig accepts: the entries of the
// solver registry (solver.Methods) that are not stochastic baselines, which
// need a variance bound that a DEQ cell does not have. Their order is the
// registry's.
func Methods() []solver.MethodSpec {
	var out []solver.MethodSpec
	for _, m := range solver.MethodSpecs() {
		if !m.Info().Baseline {
			out = append(out, m)
		}
	}
	return out
}

// NeedsProvenBound reports whether the guarantees of m rest on a Lipschitz
// bound γ̄ that the cell proves: those of the stochastic methods (VR-GHAL
// and growing-batch, which New refuses for a conv cell whose bound is not
// proven) and of the methods whose schedule rests on γ̄ (GHAL and VR-GHAL,
// solver.MethodInfo.NeedsGamma). Where the conv cell's run uses one, its
// default precision is layers.Float64 (see ModelConfig.Precision). It is false
// for an unset m.
func NeedsProvenBound(m solver.MethodSpec) bool {
	if m.IsZero() {
		return false
	}
	info := m.Info()
	return info.Stochastic || info.NeedsGamma
}
