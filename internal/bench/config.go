package bench

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/deqgo/deq/internal/bench/report"
)

// Section names, in the order Run runs them.
const (
	// SectionStochastic measures the samples each stochastic method needs to
	// reach a true residual ε.
	SectionStochastic = "stochastic"
	// SectionOverhead measures VR-GHAL's own work against its oracle time.
	SectionOverhead = "overhead"
	// SectionThroughput measures GFLOP/s of DEQ cell evaluations against a
	// plain matrix multiply of the same shapes, and memory.
	SectionThroughput = "throughput"
	// SectionForward measures deterministic forward solvers on a trained
	// DEQ's test-set batches.
	SectionForward = "forward"
	// SectionTraining measures GFLOP/s and memory of training epochs.
	SectionTraining = "training"
)

// Sections returns the section names in the order Run runs them.
func Sections() []string {
	return []string{SectionStochastic, SectionOverhead, SectionThroughput, SectionForward, SectionTraining}
}

// Defaults used where a Config field is zero. The quick defaults apply when
// Config.Quick is set.
const (
	DefaultSeeds        = 20
	DefaultQuickSeeds   = 3
	DefaultSeed         = 1
	DefaultSampleScale  = 0.1
	DefaultNoiseLevel   = 0.1
	DefaultStartDist    = 0.1
	DefaultBudgetFactor = 1000
	DefaultDelta        = 0.05
	DefaultMaxRunTime   = 2 * time.Minute
	DefaultSigmaDraws   = 4000
	DefaultOverheadRuns = 3
	DefaultTimeTarget   = time.Second
	DefaultQuickTime    = 50 * time.Millisecond
)

// DefaultEps returns the default accuracies of the stochastic section,
// 10^{-1}, 10^{-1.5}, …, 10^{-3}; DefaultQuickEps those of a quick run,
// 10^{-1}, 10^{-1.5} and 10^{-2}.
func DefaultEps() []float64 {
	return []float64{1e-1, 0.0316227766016838, 1e-2, 0.00316227766016838, 1e-3}
}

// DefaultQuickEps returns the accuracies of a quick run.
func DefaultQuickEps() []float64 { return []float64{1e-1, 0.0316227766016838, 1e-2} }

// Config configures Run. The zero value runs every section with the
// documented defaults; Quick selects a smoke-test size.
type Config struct {
	// Quick selects a run that finishes in well under a minute: fewer seeds,
	// accuracies down to 1e-2 only, the small throughput shapes, short
	// timings, and tiny models on small synthetic data sets in the forward
	// and training sections (whatever Data says). Fields set explicitly
	// take precedence.
	Quick bool
	// Sections lists the sections to run (see Sections). Empty means all.
	Sections []string
	// Problems lists the problems of the stochastic section (see
	// ProblemNames). Empty means all. The overhead section always uses its
	// own two problems.
	Problems []string
	// Seeds is the number of solver seeds per method and accuracy. Zero
	// means DefaultSeeds (DefaultQuickSeeds when Quick).
	Seeds int
	// Seed is the base seed: problem instances, σ estimates and solver seeds
	// all derive from it, so that a Config reproduces every sample count.
	// Zero means DefaultSeed.
	Seed uint64
	// Eps lists the accuracies ε of the stochastic section, each in (0, 1).
	// Nil means DefaultEps() (DefaultQuickEps() when Quick).
	Eps []float64
	// SampleScale is VR-GHAL's SampleScale (solver.VRGHAL). Zero means
	// DefaultSampleScale.
	SampleScale float64
	// NoiseLevel is the noise level σ√κ to which every problem is rescaled
	// (see the package documentation). Zero means DefaultNoiseLevel.
	NoiseLevel float64
	// StartDistance is the distance ‖x0 − x*‖ of the start point from the
	// fixed point, after rescaling, in the problem's norm. Zero means
	// DefaultStartDist.
	StartDistance float64
	// Delta is the failure probability δ of VR-GHAL and of the
	// information-theoretic floor 2σ²κ ln(1/δ)/ε². Zero means DefaultDelta.
	Delta float64
	// BudgetFactor sets the sample budget of every run to BudgetFactor times
	// the floor at the smallest ε. Zero means DefaultBudgetFactor.
	BudgetFactor float64
	// MaxRunTime is a safety limit on the wall time of one run; a run that
	// hits it is reported as such and makes the results depend on the
	// machine. Zero means DefaultMaxRunTime.
	MaxRunTime time.Duration
	// SigmaDraws is the number of unit samples drawn at x* to estimate σ.
	// Zero means DefaultSigmaDraws (a quarter when Quick).
	SigmaDraws int
	// OverheadRuns is the number of timed VR-GHAL solves per problem of the
	// overhead section. Zero means DefaultOverheadRuns.
	OverheadRuns int
	// TimeTarget is how long the throughput section times each operation
	// (per repetition, three repetitions). Zero means DefaultTimeTarget
	// (DefaultQuickTime when Quick).
	TimeTarget time.Duration
	// Shape is the dense cell shape of the throughput section. The zero
	// value means 256 examples, 128 hidden and 128 input features (32, 32,
	// 32 when Quick).
	Shape report.Shape
	// Data is the data set (a datasets.Open spec) of the forward and
	// training sections. Empty means Fashion-MNIST when it is installed
	// (datasets.Find), the synthetic digits otherwise; Quick always uses
	// small synthetic sets.
	Data string
	// CacheDir, if not empty, is where the forward section keeps its
	// trained model (report.ForwardModelName) between runs: a checkpoint of the
	// same configuration and data there is used instead of training.
	CacheDir string
	// Workers is the number of solves run in parallel. Zero means
	// runtime.GOMAXPROCS(0). Results do not depend on it.
	Workers int
	// Progress, if not nil, receives one line per finished step.
	Progress io.Writer
	// Command is the command line recorded in the report as the way to
	// reproduce it. Empty means none.
	Command string
}

// settings is a Config with defaults filled in.
type settings struct {
	Config
	run map[string]bool
}

// withDefaults validates c and fills in defaults.
func (c Config) withDefaults() (*settings, error) {
	s := &settings{Config: c, run: map[string]bool{}}
	if len(c.Sections) == 0 {
		s.Sections = Sections()
	}
	for _, name := range s.Sections {
		if !slices.Contains(Sections(), name) {
			return nil, fmt.Errorf("bench: Config.Sections: unknown section %q (want %s)", name, strings.Join(Sections(), ", "))
		}
		s.run[name] = true
	}
	s.Sections = nil
	for _, name := range Sections() {
		if s.run[name] {
			s.Sections = append(s.Sections, name)
		}
	}
	for _, name := range c.Problems {
		if !slices.Contains(ProblemNames(), name) {
			return nil, fmt.Errorf("bench: Config.Problems: unknown problem %q (want %s)", name, strings.Join(ProblemNames(), ", "))
		}
	}
	switch {
	case c.Seeds < 0:
		return nil, fmt.Errorf("bench: Config.Seeds = %d must not be negative", c.Seeds)
	case c.Workers < 0:
		return nil, fmt.Errorf("bench: Config.Workers = %d must not be negative", c.Workers)
	case c.SigmaDraws < 0:
		return nil, fmt.Errorf("bench: Config.SigmaDraws = %d must not be negative", c.SigmaDraws)
	case c.OverheadRuns < 0:
		return nil, fmt.Errorf("bench: Config.OverheadRuns = %d must not be negative", c.OverheadRuns)
	case c.MaxRunTime < 0:
		return nil, fmt.Errorf("bench: Config.MaxRunTime = %v must not be negative", c.MaxRunTime)
	case c.TimeTarget < 0:
		return nil, fmt.Errorf("bench: Config.TimeTarget = %v must not be negative", c.TimeTarget)
	case c.Shape != report.Shape{} && (c.Shape.Batch < 1 || c.Shape.Hidden < 1 || c.Shape.Input < 1):
		return nil, fmt.Errorf("bench: Config.Shape = %+v must have positive sizes", c.Shape)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"SampleScale", c.SampleScale}, {"NoiseLevel", c.NoiseLevel}, {"StartDistance", c.StartDistance}, {"BudgetFactor", c.BudgetFactor}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return nil, fmt.Errorf("bench: Config.%s = %v must be positive and finite", f.name, f.v)
		}
	}
	if c.Delta < 0 || c.Delta >= 1 || math.IsNaN(c.Delta) {
		return nil, fmt.Errorf("bench: Config.Delta = %v outside (0, 1)", c.Delta)
	}
	if c.Eps != nil && len(c.Eps) == 0 {
		return nil, fmt.Errorf("bench: Config.Eps is empty")
	}
	for i, e := range c.Eps {
		if !(e > 0 && e < 1) {
			return nil, fmt.Errorf("bench: Config.Eps[%d] = %v outside (0, 1)", i, e)
		}
	}
	if s.Seeds == 0 {
		s.Seeds = DefaultSeeds
		if c.Quick {
			s.Seeds = DefaultQuickSeeds
		}
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	if s.Eps == nil {
		s.Eps = DefaultEps()
		if c.Quick {
			s.Eps = DefaultQuickEps()
		}
	}
	s.Eps = slices.Clone(s.Eps)
	slices.SortFunc(s.Eps, func(a, b float64) int { return -cmpFloat(a, b) })
	s.Eps = slices.Compact(s.Eps)
	orDefault(&s.SampleScale, DefaultSampleScale)
	orDefault(&s.NoiseLevel, DefaultNoiseLevel)
	orDefault(&s.StartDistance, DefaultStartDist)
	orDefault(&s.BudgetFactor, DefaultBudgetFactor)
	orDefault(&s.Delta, DefaultDelta)
	if s.MaxRunTime == 0 {
		s.MaxRunTime = DefaultMaxRunTime
	}
	if s.SigmaDraws == 0 {
		s.SigmaDraws = DefaultSigmaDraws
		if c.Quick {
			s.SigmaDraws = DefaultSigmaDraws / 4
		}
	}
	if s.OverheadRuns == 0 {
		s.OverheadRuns = DefaultOverheadRuns
	}
	if s.TimeTarget == 0 {
		s.TimeTarget = DefaultTimeTarget
		if c.Quick {
			s.TimeTarget = DefaultQuickTime
		}
	}
	if s.Shape == (report.Shape{}) {
		s.Shape = report.Shape{Batch: 256, Hidden: 128, Input: 128}
		if c.Quick {
			s.Shape = report.Shape{Batch: 32, Hidden: 32, Input: 32}
		}
	}
	if s.Workers == 0 {
		s.Workers = runtime.GOMAXPROCS(0)
	}
	return s, nil
}

func orDefault(v *float64, def float64) {
	if *v == 0 {
		*v = def
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// epsMin returns the smallest accuracy.
func (s *settings) epsMin() float64 { return s.Eps[len(s.Eps)-1] }

// floor returns the information-theoretic floor 2σ²κ ln(1/δ)/ε² for a
// problem whose noise level σ√κ is s.NoiseLevel.
func (s *settings) floor(eps float64) float64 {
	return 2 * s.NoiseLevel * s.NoiseLevel * math.Log(1/s.Delta) / (eps * eps)
}

// budget returns the sample budget of every run.
func (s *settings) budget() int64 {
	return int64(math.Ceil(s.BudgetFactor * s.floor(s.epsMin())))
}

// logf writes a progress line.
func (s *settings) logf(format string, args ...any) {
	if s.Progress != nil {
		fmt.Fprintf(s.Progress, format+"\n", args...)
	}
}
