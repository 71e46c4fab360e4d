package report

import (
	"math"
	"strconv"
	"time"
)

// ReportVersion is the version of the JSON schema of Report.
const ReportVersion = 1

// ThroughputReps is the number of timed repetitions of every operation of
// the throughput and training sections; each rate is the best repetition's.
const ThroughputReps = 3

// ForwardModelName is the file name, in the output directory of `deq bench`
// (the measurements' cache directory), of the trained model the forward
// section caches.
const ForwardModelName = "forward-model.ckpt"

// Report is everything Run measured; Write stores it as JSON, Markdown and
// PNG plots. Sections that did not run are nil.
type Report struct {
	Version int `json:"version"`
	// Command reproduces the report (Config.Command).
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	// Seconds is the wall time of the whole run.
	Seconds float64  `json:"seconds"`
	Machine Machine  `json:"machine"`
	Config  Settings `json:"config"`

	Stochastic *StochasticReport `json:"stochastic,omitempty"`
	Overhead   *OverheadReport   `json:"overhead,omitempty"`
	Throughput *ThroughputReport `json:"throughput,omitempty"`
	Forward    *ForwardReport    `json:"forward,omitempty"`
	Training   *TrainingReport   `json:"training,omitempty"`
	Regime     *RegimeReport     `json:"regime,omitempty"`
	Peer       *PeerReport       `json:"peer,omitempty"`
	// Targets are the project's performance targets with their verdicts,
	// for the sections that ran.
	Targets []Target `json:"targets"`
}

// Machine describes where the report was measured.
type Machine struct {
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	CPU        string `json:"cpu"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	// BLAS is internal/blasimpl.Name, the implementation compiled in.
	BLAS string `json:"blas"`
	// Blas64 and Gorgonia name the implementations installed in gonum's
	// blas64 (the cells' forward path and the reference multiply) and in
	// gorgonia (the VJP graphs).
	Blas64   string `json:"blas64"`
	Gorgonia string `json:"gorgonia_blas"`
	// Revision is the commit the binary was built from: the VCS revision
	// stamped in it, or else `git describe` of the working directory, with
	// "+modified" or "-dirty" for uncommitted changes; "" when unknown.
	Revision string `json:"revision,omitempty"`
	// LoadStart and LoadEnd are the 1-, 5- and 15-minute load averages of
	// the machine when the run started and when it ended; nil when unknown.
	LoadStart []float64 `json:"load_start,omitempty"`
	LoadEnd   []float64 `json:"load_end,omitempty"`
}

// Settings are the Config values in force, defaults filled in.
type Settings struct {
	Quick        bool      `json:"quick"`
	Sections     []string  `json:"sections"`
	Problems     []string  `json:"problems,omitempty"`
	Seeds        int       `json:"seeds"`
	Seed         uint64    `json:"seed"`
	Eps          []float64 `json:"eps"`
	SampleScale  float64   `json:"sample_scale"`
	NoiseLevel   float64   `json:"noise_level"`
	StartDist    float64   `json:"start_distance"`
	Delta        float64   `json:"delta"`
	BudgetFactor float64   `json:"budget_factor"`
	Budget       int64     `json:"budget"`
	MaxRunTime   string    `json:"max_run_time"`
	SigmaDraws   int       `json:"sigma_draws"`
	OverheadRuns int       `json:"overhead_runs"`
	TimeTarget   string    `json:"time_target"`
	Shape        Shape     `json:"shape"`
	Workers      int       `json:"workers"`
	Data         string    `json:"data,omitempty"`
}

// StochasticReport is the stochastic section: samples to reach a true
// residual ε.
type StochasticReport struct {
	Problems []ProblemResult `json:"problems"`
	// TimeLimited counts runs stopped by Config.MaxRunTime; when it is not
	// zero the sample counts depend on the machine.
	TimeLimited int `json:"time_limited"`
	// Seconds is the wall time of the section.
	Seconds float64 `json:"seconds"`
}

// ProblemResult is one problem of the stochastic section.
type ProblemResult struct {
	Name    string  `json:"name"`
	Summary string  `json:"summary"`
	Len     int     `json:"len"`
	Norm    string  `json:"norm"`
	Model   string  `json:"model"`
	Gamma   float64 `json:"gamma"`
	// Terms is the number of terms of a finite-sum oracle (0: not one).
	Terms int     `json:"terms"`
	Kappa float64 `json:"kappa"`
	// SigmaNative is σ̂, estimated from unit samples at x* in the problem's
	// norm before rescaling; SigmaL2 the problem's own ℓ2 noise scale (null
	// when it reports none).
	SigmaNative float64 `json:"sigma_native"`
	SigmaL2     Number  `json:"sigma_l2"`
	// Scale is the factor c of the change of units x ↦ c·x, and Sigma the
	// rescaled σ̂ = c·SigmaNative, so that Sigma·√Kappa = NoiseLevel.
	Scale float64 `json:"scale"`
	Sigma float64 `json:"sigma"`
	// R0 = ‖T(x0) − x0‖ and Dist0 = ‖x0 − x*‖ after rescaling.
	R0    float64 `json:"r0"`
	Dist0 float64 `json:"dist0"`
	// ExactLipschitz is ‖A‖ of an affine exact operator T(x) = Ax + b in the
	// problem's norm, computed from its matrix (null when not computed).
	ExactLipschitz Number `json:"exact_lipschitz"`
	// FixedPoint says where x* comes from.
	FixedPoint string `json:"fixed_point"`
	// Floor[i] is 2σ²κ ln(1/δ)/Eps[i]² for the accuracies of the section.
	Eps     []float64      `json:"eps"`
	Floor   []float64      `json:"floor"`
	Budget  int64          `json:"budget"`
	Methods []MethodResult `json:"methods"`
}

// MethodResult is one method on one problem.
type MethodResult struct {
	Method   string `json:"method"`
	VRGHAL   bool   `json:"vrghal"`
	PerEps   bool   `json:"per_eps"`
	Settings string `json:"settings"`
	// NotApplicable, when not empty, says why the method did not run.
	NotApplicable string      `json:"not_applicable,omitempty"`
	Eps           []EpsResult `json:"eps"`
	// Slope is the least-squares slope of log(median samples) against
	// log(1/ε) over the SlopePoints accuracies below the start point's
	// residual R0 whose median was reached; null with fewer than two.
	// Accuracies the start point already meets measure a method's start-up
	// cost, not its scaling, and are left out.
	Slope       Number `json:"slope"`
	SlopePoints int    `json:"slope_points"`
	// Statuses counts how the runs ended: "reached" (true residual at the
	// target) or the solver.Status that stopped them first.
	Statuses map[string]int `json:"statuses"`
	Runs     int            `json:"runs"`
	// Seconds adds up the wall time of the runs.
	Seconds float64 `json:"seconds"`
	// Curve is the true residual of the returned point against the sample
	// budget, for the runs to the smallest ε.
	Curve Curve `json:"curve"`
}

// EpsResult holds the samples a method needed to reach accuracy Eps.
type EpsResult struct {
	Eps float64 `json:"eps"`
	// Samples[i] is the samples seed i needed; null when it did not reach
	// Eps within the budget.
	Samples []Number `json:"samples"`
	Reached int      `json:"reached"`
	// Median and P90 are nearest-rank quantiles over seeds, unreached seeds
	// counting as +∞ (null when the quantile is not reached).
	Median Number  `json:"median"`
	P90    Number  `json:"p90"`
	Floor  float64 `json:"floor"`
	// RatioToFloor is Median/Floor.
	RatioToFloor Number `json:"ratio_to_floor"`
}

// Curve is the true residual of the point a method returns under a sample
// budget, against the budget: the median and the 10% and 90% nearest-rank
// quantiles over seeds.
type Curve struct {
	Budgets []float64 `json:"budgets"`
	Median  []Number  `json:"median"`
	P10     []Number  `json:"p10"`
	P90     []Number  `json:"p90"`
}

// OverheadReport is the overhead section: VR-GHAL's own work against the
// time spent in its oracle.
type OverheadReport struct {
	Problems []OverheadResult `json:"problems"`
}

// OverheadResult is the overhead of VR-GHAL on one problem.
type OverheadResult struct {
	Problem string `json:"problem"`
	Method  string `json:"method"`
	// Budget is the sample budget of each timed solve, Tol its tolerance
	// on VR-GHAL's estimated residual.
	Budget int64   `json:"budget"`
	Tol    float64 `json:"tol"`
	Runs   int     `json:"runs"`
	// Calls and Samples are medians (nearest rank) over runs.
	Calls   int64 `json:"calls"`
	Samples int64 `json:"samples"`
	// OracleSeconds and TotalSeconds are medians (nearest rank) over runs
	// of the time inside Oracle.Eval and of the whole solve.
	OracleSeconds float64 `json:"oracle_seconds"`
	TotalSeconds  float64 `json:"total_seconds"`
	// Overhead is the median (nearest rank) over runs of
	// (total − oracle)/oracle; NaN when no oracle call fitted in the budget.
	Overhead float64 `json:"overhead"`
}

// ThroughputReport is the throughput section.
type ThroughputReport struct {
	Shape     Shape            `json:"shape"`
	Workloads []WorkloadResult `json:"workloads"`
	Memory    Memory           `json:"memory"`
}

// WorkloadResult is the throughput of one timed operation and of its
// reference, plain matrix multiplies of the same shapes.
type WorkloadResult struct {
	Name string `json:"name"`
	// FLOPs counts the floating-point operations of one operation (see the
	// package documentation).
	FLOPs        float64 `json:"flops"`
	SecondsPerOp float64 `json:"seconds_per_op"`
	GFLOPS       float64 `json:"gflops"`
	BytesPerOp   float64 `json:"bytes_per_op"`
	AllocsPerOp  float64 `json:"allocs_per_op"`
	// Reference describes the plain multiply; RefGFLOPS is its rate and
	// Efficiency = GFLOPS/RefGFLOPS.
	Reference  string  `json:"reference"`
	RefGFLOPS  float64 `json:"ref_gflops"`
	Efficiency float64 `json:"efficiency"`
}

// Memory is the process's memory use at the end of the throughput section.
type Memory struct {
	// HeapSys is the heap memory obtained from the OS (runtime.MemStats),
	// TotalAlloc the bytes allocated over the whole run.
	HeapSys    uint64 `json:"heap_sys"`
	TotalAlloc uint64 `json:"total_alloc"`
	// MaxRSS is the peak resident set size (getrusage), 0 where unknown.
	MaxRSS uint64 `json:"max_rss"`
}

// Target is a performance target of the project with its verdict.
type Target struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Value is the measured quantity and Threshold the target; Met says
	// whether it holds. LowerBound marks a Value that is only a lower bound
	// (a baseline did not reach ε within the budget).
	Value      Number  `json:"value"`
	Threshold  float64 `json:"threshold"`
	Met        bool    `json:"met"`
	LowerBound bool    `json:"lower_bound,omitempty"`
	Note       string  `json:"note,omitempty"`
}

// ForwardReport is the forward section: deterministic solvers on a trained
// DEQ's test-set batches.
type ForwardReport struct {
	// Data is the test set solved and TrainData the training set; Cell,
	// Hidden and Epochs describe the trained model, Gamma its Lipschitz bound γ̄ (passed to GHAL) and Norm the
	// norm of its residuals. Cached says the model came from
	// Config.CacheDir rather than being trained in this run.
	Data      string  `json:"data"`
	TrainData string  `json:"train_data"`
	Cell      string  `json:"cell"`
	Hidden    int     `json:"hidden"`
	Epochs    int     `json:"epochs"`
	Gamma     float64 `json:"gamma"`
	Norm      string  `json:"norm"`
	Cached    bool    `json:"cached"`
	// Batches test batches of BatchSize images were solved from z = 0 by
	// every method, each solve capped at MaxIter iterations.
	Batches   int             `json:"batches"`
	BatchSize int             `json:"batch_size"`
	MaxIter   int             `json:"max_iter"`
	Tols      []float64       `json:"tols"`
	Methods   []ForwardMethod `json:"methods"`
	Seconds   float64         `json:"seconds"`
}

// ForwardMethod is one method of the forward section.
type ForwardMethod struct {
	Method string       `json:"method"`
	Tols   []ForwardTol `json:"tols"`
	// Curve is the relative residual against oracle calls of the solve of
	// the first batch (Median holds that one run's values).
	Curve Curve `json:"curve"`
}

// ForwardTol is the cost of reaching one relative residual.
type ForwardTol struct {
	Tol float64 `json:"tol"`
	// Reached counts the batches whose solve reached Tol within MaxIter.
	Reached int `json:"reached"`
	// Calls and Seconds are nearest-rank medians over batches of the
	// oracle calls (function evaluations) and wall time until the relative
	// residual first fell to Tol; null when most batches did not reach it.
	Calls   Number `json:"calls"`
	Seconds Number `json:"seconds"`
}

// TrainingReport is the training section: the arithmetic throughput and
// memory of training epochs.
type TrainingReport struct {
	// Data is the training set; the model is a Cell DEQ classifier of
	// Pixels inputs, Encoder features, Hidden units and Classes outputs,
	// trained in batches of BatchSize with the Forward solver and the
	// Backward mode.
	Data      string        `json:"data"`
	Cell      string        `json:"cell"`
	Pixels    int           `json:"pixels"`
	Encoder   int           `json:"encoder"`
	Hidden    int           `json:"hidden"`
	Classes   int           `json:"classes"`
	BatchSize int           `json:"batch_size"`
	Forward   string        `json:"forward"`
	Backward  string        `json:"backward"`
	Epochs    []EpochResult `json:"epochs"`
	// HeapAfterEpoch[i] is runtime.MemStats.HeapAlloc after epoch i+1 and
	// a runtime.GC; HeapGrowth is (last − first)/first.
	HeapAfterEpoch []uint64 `json:"heap_after_epoch"`
	HeapGrowth     float64  `json:"heap_growth"`
	// MaxRSS is the process's peak resident set size (getrusage) at the
	// end of the section, 0 where unknown.
	MaxRSS  uint64  `json:"max_rss"`
	Seconds float64 `json:"seconds"`
}

// EpochResult is one training epoch.
type EpochResult struct {
	Epoch    int `json:"epoch"`
	Batches  int `json:"batches"`
	Examples int `json:"examples"`
	// FwdCalls, CertCalls and AdjCalls are the forward solver's, its
	// certificate's and the adjoint solver's oracle calls, VJPs the full
	// vector–Jacobian products, all summed over the epoch.
	FwdCalls  int64 `json:"fwd_calls"`
	CertCalls int64 `json:"cert_calls"`
	AdjCalls  int64 `json:"adj_calls"`
	VJPs      int64 `json:"vjps"`
	// FLOPs counts the epoch's matrix products (see the package
	// documentation); Seconds is its training wall time (the test-set
	// evaluation excluded) and GFLOPS = FLOPs/Seconds.
	FLOPs   float64 `json:"flops"`
	Seconds float64 `json:"seconds"`
	GFLOPS  float64 `json:"gflops"`
	// RefSeconds is the time blas64.Gemm takes for the same products, each
	// shape timed alone, RefGFLOPS = FLOPs/RefSeconds, and Efficiency =
	// GFLOPS/RefGFLOPS.
	RefSeconds float64 `json:"ref_seconds"`
	RefGFLOPS  float64 `json:"ref_gflops"`
	Efficiency float64 `json:"efficiency"`
	// HeapPeak is the largest runtime.MemStats.HeapInuse seen after a
	// batch of the epoch.
	HeapPeak uint64  `json:"heap_peak"`
	TestAcc  float64 `json:"test_acc"`
}

// Shape is a dense cell shape for the throughput section: Batch examples of
// Hidden hidden and Input input features.
type Shape struct {
	Batch, Hidden, Input int
}

// Number is a float64 that encodes NaN and ±Inf as JSON null.
type Number float64

// MarshalJSON implements json.Marshaler.
func (n Number) MarshalJSON() ([]byte, error) {
	v := float64(n)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler; null decodes as NaN.
func (n *Number) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Number(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	*n = Number(v)
	return err
}
