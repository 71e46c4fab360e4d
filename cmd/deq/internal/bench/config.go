package bench

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/layers"
)

// Section names, in the order Run runs them.
const (
	// sectionStochastic measures the samples each stochastic method needs to
	// reach a true residual ε.
	sectionStochastic = "stochastic"
	// sectionOverhead measures VR-GHAL's own work against its oracle time.
	sectionOverhead = "overhead"
	// sectionThroughput measures GFLOP/s of DEQ cell evaluations against a
	// plain matrix multiply of the same shapes, and memory.
	sectionThroughput = "throughput"
	// sectionForward measures deterministic forward solvers on a trained
	// DEQ's test-set batches.
	sectionForward = "forward"
	// sectionTraining measures GFLOP/s and memory of training epochs.
	sectionTraining = "training"
)

// Sections returns the section names in the order Run runs them.
func Sections() []string {
	return []string{sectionStochastic, sectionOverhead, sectionThroughput, sectionForward, sectionTraining, sectionRegime, sectionPeer}
}

// DefaultSeed and DefaultSampleScale are Config.Seed and Config.SampleScale
// where those are zero.
const (
	DefaultSeed        = 1
	DefaultSampleScale = 0.1
)

// Defaults of the other Config fields, used where they are zero. The quick
// defaults apply when Config.Quick is set.
const (
	defaultSeeds        = 20
	defaultQuickSeeds   = 3
	defaultNoiseLevel   = 0.1
	defaultStartDist    = 0.1
	defaultBudgetFactor = 1000
	defaultDelta        = 0.05
	defaultMaxRunTime   = 2 * time.Minute
	defaultSigmaDraws   = 4000
	defaultOverheadRuns = 3
	defaultTimeTarget   = time.Second
	defaultQuickTime    = 50 * time.Millisecond
)

// defaultEps returns the default accuracies of the stochastic section,
// 10^{-1}, 10^{-1.5}, …, 10^{-3}; defaultQuickEps those of a quick run,
// 10^{-1}, 10^{-1.5} and 10^{-2}.
func defaultEps() []float64 {
	return []float64{1e-1, 0.0316227766016838, 1e-2, 0.00316227766016838, 1e-3}
}

// defaultQuickEps returns the accuracies of a quick run.
func defaultQuickEps() []float64 { return []float64{1e-1, 0.0316227766016838, 1e-2} }

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
	// PeerModels lists the models of the peer section (see PeerModels).
	// Empty means all.
	PeerModels []string
	// PeerThreads is the number of threads of the PyTorch peer
	// (torch.set_num_threads). Zero means DefaultPeerThreads.
	PeerThreads int
	// PeerPrecision is the precision of our side's cell products in the
	// peer section (train.ModelConfig.Precision). The zero value,
	// layers.DefaultPrecision, keeps `deq train`'s default, as the section's
	// models are `deq train`'s: train.DefaultConvPrecision (float32) for
	// the conv model, float64 for the dense one. (Before
	// train.DefaultConvPrecision it meant float64 for both.)
	PeerPrecision layers.Precision
	// PeerSplit is the number of concurrent parts into which our side
	// splits each batch of the dense model in the peer section
	// (train.Config.Split). Zero means DefaultPeerSplit; one means one
	// solve per batch.
	PeerSplit int
	// Seeds is the number of solver seeds per method and accuracy. Zero
	// means 20 (3 when Quick).
	Seeds int
	// Seed is the base seed: problem instances, σ estimates and solver seeds
	// all derive from it, so that a Config reproduces every sample count.
	// Zero means DefaultSeed.
	Seed uint64
	// Eps lists the accuracies ε of the stochastic section, each in (0, 1).
	// Nil means 10^{-1}, 10^{-1.5}, …, 10^{-3} (down to 10^{-2}
	// when Quick).
	Eps []float64
	// SampleScale is VR-GHAL's SampleScale (solver.VRGHAL). Zero means
	// DefaultSampleScale.
	SampleScale float64
	// NoiseLevel is the noise level σ√κ to which every problem is rescaled
	// (see the package documentation). Zero means 0.1.
	NoiseLevel float64
	// StartDistance is the distance ‖x0 − x*‖ of the start point from the
	// fixed point, after rescaling, in the problem's norm. Zero means
	// 0.1.
	StartDistance float64
	// Delta is the failure probability δ of VR-GHAL and of the
	// information-theoretic floor 2σ²κ ln(1/δ)/ε². Zero means 0.05.
	Delta float64
	// BudgetFactor sets the sample budget of every run to BudgetFactor times
	// the floor at the smallest ε. Zero means 1000.
	BudgetFactor float64
	// MaxRunTime is a safety limit on the wall time of one run; a run that
	// hits it is reported as such and makes the results depend on the
	// machine. Zero means two minutes.
	MaxRunTime time.Duration
	// SigmaDraws is the number of unit samples drawn at x* to estimate σ.
	// Zero means 4000 (1000 when Quick).
	SigmaDraws int
	// OverheadRuns is the number of timed VR-GHAL solves per problem of the
	// overhead section. Zero means 3.
	OverheadRuns int
	// TimeTarget is how long the throughput section times each operation
	// (per repetition, three repetitions). Zero means one second
	// (50 ms when Quick).
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
	for _, name := range c.PeerModels {
		if !slices.Contains(PeerModels(), name) {
			return nil, fmt.Errorf("bench: Config.PeerModels: unknown model %q (want %s)", name, strings.Join(PeerModels(), ", "))
		}
	}
	if _, err := c.PeerPrecision.MarshalText(); err != nil {
		return nil, fmt.Errorf("bench: Config.PeerPrecision: %w", err)
	}
	for _, f := range []struct {
		name     string
		negative bool
		v        any
	}{
		{"Seeds", c.Seeds < 0, c.Seeds}, {"Workers", c.Workers < 0, c.Workers}, {"PeerThreads", c.PeerThreads < 0, c.PeerThreads}, {"PeerSplit", c.PeerSplit < 0, c.PeerSplit},
		{"SigmaDraws", c.SigmaDraws < 0, c.SigmaDraws}, {"OverheadRuns", c.OverheadRuns < 0, c.OverheadRuns},
		{"MaxRunTime", c.MaxRunTime < 0, c.MaxRunTime}, {"TimeTarget", c.TimeTarget < 0, c.TimeTarget},
	} {
		if f.negative {
			return nil, fmt.Errorf("bench: Config.%s = %v must not be negative", f.name, f.v)
		}
	}
	switch {
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
	s.Seeds = cmp.Or(s.Seeds, ifQuick(c.Quick, defaultQuickSeeds, defaultSeeds))
	s.Seed = cmp.Or(s.Seed, DefaultSeed)
	if s.Eps == nil {
		s.Eps = ifQuick(c.Quick, defaultQuickEps, defaultEps)()
	}
	s.Eps = slices.Clone(s.Eps)
	slices.SortFunc(s.Eps, func(a, b float64) int { return cmp.Compare(b, a) })
	s.Eps = slices.Compact(s.Eps)
	s.SampleScale = cmp.Or(s.SampleScale, DefaultSampleScale)
	s.NoiseLevel = cmp.Or(s.NoiseLevel, defaultNoiseLevel)
	s.StartDistance = cmp.Or(s.StartDistance, defaultStartDist)
	s.BudgetFactor = cmp.Or(s.BudgetFactor, defaultBudgetFactor)
	s.Delta = cmp.Or(s.Delta, defaultDelta)
	s.MaxRunTime = cmp.Or(s.MaxRunTime, defaultMaxRunTime)
	s.SigmaDraws = cmp.Or(s.SigmaDraws, ifQuick(c.Quick, defaultSigmaDraws/4, defaultSigmaDraws))
	s.OverheadRuns = cmp.Or(s.OverheadRuns, defaultOverheadRuns)
	s.TimeTarget = cmp.Or(s.TimeTarget, ifQuick(c.Quick, defaultQuickTime, defaultTimeTarget))
	s.Shape = cmp.Or(s.Shape, ifQuick(c.Quick, report.Shape{Batch: 32, Hidden: 32, Input: 32}, report.Shape{Batch: 256, Hidden: 128, Input: 128}))
	s.Workers = cmp.Or(s.Workers, runtime.GOMAXPROCS(0))
	s.PeerThreads = cmp.Or(s.PeerThreads, DefaultPeerThreads)
	s.PeerSplit = cmp.Or(s.PeerSplit, DefaultPeerSplit)
	return s, nil
}

// ifQuick returns quick when q is set, else full.
func ifQuick[T any](q bool, quick, full T) T {
	if q {
		return quick
	}
	return full
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
