package deqtest

import (
	"fmt"
	"math"
)

// Default values used where an Options field is zero.
const (
	DefaultBatch      = 2
	DefaultPoints     = 3
	DefaultDraws      = 20000
	DefaultSampleSize = 1
	DefaultAlpha      = 1e-6
	DefaultBudget     = 1 << 20
	DefaultDelta      = 1e-3
	DefaultSolveTol   = 1e-3
	DefaultPairs      = 100
	DefaultAscent     = 10
	DefaultStep       = 1e-6
	DefaultRelTol     = 1e-6
	DefaultMaxCoords  = 64
	DefaultRetries    = 2
)

// FixedPointTol is the residual tolerance, in the norm checked, of the
// deterministic solve that gives CheckFixedPoint's reference z*.
const FixedPointTol = 1e-10

// DefaultNorms are the per-example norms (solver.ParseNorm names) the
// certificate and Lipschitz checks try when Options.Norms is nil: the ones
// a cell can prove among ℓ2, ℓ∞, ℓ3, ℓ4 and Schatten-2, -4 and -∞.
var DefaultNorms = []string{"l2", "linf", "lp:3", "lp:4", "schatten:2", "schatten:4", "schatten:inf"}

// Options control the checks. The zero value of every field selects its
// documented default, so a nil *Options means the defaults. Negative and
// NaN values are errors, reported through t.Errorf.
type Options struct {
	// Seed seeds every random draw: points, cotangents, sample seeds and the
	// solvers' seeds. Zero is a seed like any other.
	Seed uint64
	// Batch is the number of examples per batch. Zero means DefaultBatch.
	Batch int
	// Points is the number of random points (z, x) at which the
	// unbiasedness, finite-difference and Lipschitz checks run. Zero means
	// DefaultPoints. Inputs are drawn with entries N(0, 1) or N(0, 0.01)
	// (alternately), states with a scale that varies with the point.
	Points int
	// Draws is the number of oracle draws averaged per point by
	// CheckUnbiased (a deterministic oracle gets two). Zero means
	// DefaultDraws.
	Draws int
	// SampleSize is the Sample.Size of the sampled evaluations of
	// CheckUnbiased, CheckVJP and CheckLipschitz. Zero means
	// DefaultSampleSize, one unit sample, the largest variance.
	SampleSize int
	// Alpha is the probability that CheckUnbiased fails on a correct cell
	// (up to the normal approximation of the mean of Draws draws): the
	// Bonferroni correction splits it over every coordinate of every point.
	// Zero means DefaultAlpha. Must lie in (0, 1).
	Alpha float64
	// Norms are the candidate per-example norms, as solver.ParseNorm names
	// them; CheckFixedPoint and CheckLipschitz run in those in which
	// Cell.Proven holds. Nil means DefaultNorms.
	Norms []string
	// Budget is the number of unit samples the stochastic solve of
	// CheckFixedPoint may draw (solver.Settings.MaxSamples). Zero means
	// DefaultBudget.
	Budget int64
	// SolveBatch is the minibatch size of CheckFixedPoint's stochastic
	// solve and of its certificate's calls. Zero means the largest power of
	// two below the evaluator's Terms() (1 when Terms() ≤ 2), the largest
	// size that is sampled rather than averaged exactly.
	SolveBatch int
	// SolveTol is the stochastic solve's residual tolerance. Zero means
	// DefaultSolveTol.
	SolveTol float64
	// Delta is the failure probability of the stochastic solve's
	// certificate, hence of CheckFixedPoint on a correct cell, per norm.
	// Zero means DefaultDelta. Must lie in (0, 1).
	Delta float64
	// Pairs is the number of random pairs per point and norm of
	// CheckLipschitz, and Ascent the number of adversarial pairs (each a
	// step of power iteration on JᵀJ through VJPHidden) per point. Zero
	// means DefaultPairs and DefaultAscent.
	Pairs, Ascent int
	// Step is the central finite-difference step h of CheckVJP. Zero means
	// DefaultStep.
	Step float64
	// RelTol is CheckVJP's relative tolerance (see CheckVJP). Zero means
	// DefaultRelTol.
	RelTol float64
	// MaxCoords is the number of coordinates per argument (z, x, each
	// parameter) that CheckVJP perturbs, drawn at random when the argument
	// has more. Zero means DefaultMaxCoords.
	MaxCoords int
	// Retries is the number of further random points at which CheckVJP
	// repeats a point whose finite differences disagree before it reports
	// the disagreement. Zero means DefaultRetries.
	Retries int
}

// withDefaults validates o and returns a copy with defaults filled in.
func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
		c.Norms = append([]string(nil), o.Norms...)
	}
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"Batch", &c.Batch, DefaultBatch},
		{"Points", &c.Points, DefaultPoints},
		{"Draws", &c.Draws, DefaultDraws},
		{"SampleSize", &c.SampleSize, DefaultSampleSize},
		{"Pairs", &c.Pairs, DefaultPairs},
		{"Ascent", &c.Ascent, DefaultAscent},
		{"MaxCoords", &c.MaxCoords, DefaultMaxCoords},
		{"Retries", &c.Retries, DefaultRetries},
		{"SolveBatch", &c.SolveBatch, 0},
	}
	for _, f := range ints {
		if *f.v < 0 {
			return c, fmt.Errorf("deqtest: Options.%s = %d must not be negative", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.Budget < 0 {
		return c, fmt.Errorf("deqtest: Options.Budget = %d must not be negative", c.Budget)
	}
	if c.Budget == 0 {
		c.Budget = DefaultBudget
	}
	floats := []struct {
		name     string
		v        *float64
		def      float64
		belowOne bool
	}{
		{"Alpha", &c.Alpha, DefaultAlpha, true},
		{"Delta", &c.Delta, DefaultDelta, true},
		{"SolveTol", &c.SolveTol, DefaultSolveTol, false},
		{"Step", &c.Step, DefaultStep, false},
		{"RelTol", &c.RelTol, DefaultRelTol, false},
	}
	for _, f := range floats {
		v := *f.v
		if math.IsNaN(v) || v < 0 || math.IsInf(v, 0) || (f.belowOne && v >= 1) {
			lim := "positive and finite"
			if f.belowOne {
				lim = "in (0, 1)"
			}
			return c, fmt.Errorf("deqtest: Options.%s = %v must be %s", f.name, v, lim)
		}
		if v == 0 {
			*f.v = f.def
		}
	}
	if c.Norms == nil {
		c.Norms = append([]string(nil), DefaultNorms...)
	}
	return c, nil
}
