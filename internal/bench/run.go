package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/internal/blasimpl"
)

// Target thresholds.
const (
	// TargetSpeedup is the factor by which VR-GHAL should need fewer
	// samples than the best baseline at the smallest ε on TargetProblem.
	TargetSpeedup = 10
	// TargetExponent bounds VR-GHAL's fitted exponent of samples in 1/ε on
	// TargetProblem.
	TargetExponent = 2.3
	// TargetOverhead bounds VR-GHAL's own time relative to its oracle time.
	TargetOverhead = 0.10
	// TargetProblem is the samplewise-Lipschitz (nonexpansive) problem the
	// sample targets are judged on, and TargetMethod the VR-GHAL variant.
	TargetProblem = "averaged"
	TargetMethod  = "vrghal/samplewise-lipschitz"
	// TargetGHALRatio bounds GHAL's median function evaluations relative
	// to Anderson's at relative residual TargetForwardTol on the trained
	// DEQ of the forward section.
	TargetGHALRatio  = 2.0
	TargetForwardTol = 1e-3
	// TargetTrainingEfficiency is the fraction of the same-shape matrix
	// multiply's GFLOP/s a training epoch should reach.
	TargetTrainingEfficiency = 0.4
)

// Run runs the sections of cfg and returns their report. It honours ctx
// between and within runs. Sample counts depend only on cfg (not on
// Workers or the machine) unless a run hits Config.MaxRunTime, which the
// report counts; timings depend on the machine.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	s, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &Report{
		Version: ReportVersion, Command: s.Command, Started: start.UTC().Truncate(time.Second),
		Machine: machine(), Config: s.public(),
	}
	if s.run[SectionStochastic] {
		if rep.Stochastic, err = stochastic(ctx, s); err != nil {
			return nil, err
		}
	}
	if s.run[SectionOverhead] {
		if rep.Overhead, err = overhead(ctx, s); err != nil {
			return nil, err
		}
	}
	if s.run[SectionThroughput] {
		if rep.Throughput, err = throughput(ctx, s); err != nil {
			return nil, err
		}
	}
	if s.run[SectionForward] {
		if rep.Forward, err = forward(ctx, s); err != nil {
			return nil, err
		}
	}
	if s.run[SectionTraining] {
		if rep.Training, err = training(ctx, s); err != nil {
			return nil, err
		}
	}
	rep.Targets = targets(rep)
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// public returns the settings for the report.
func (s *settings) public() Settings {
	return Settings{
		Quick: s.Quick, Sections: s.Sections, Problems: s.Problems, Seeds: s.Seeds, Seed: s.Seed, Eps: s.Eps,
		SampleScale: s.SampleScale, NoiseLevel: s.NoiseLevel, StartDist: s.StartDistance, Delta: s.Delta,
		BudgetFactor: s.BudgetFactor, Budget: s.budget(), MaxRunTime: s.MaxRunTime.String(),
		SigmaDraws: s.SigmaDraws, OverheadRuns: s.OverheadRuns, TimeTarget: s.TimeTarget.String(),
		Shape: s.Shape, Workers: s.Workers, Data: s.dataName(),
	}
}

// machine describes the running machine.
func machine() Machine {
	m := Machine{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPU: cpuModel(), NumCPU: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), BLAS: blasimpl.Name,
		Blas64: fmt.Sprintf("%T", blas64.Implementation()), Gorgonia: fmt.Sprintf("%T", G.WhichBLAS()),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.modified":
				if kv.Value == "true" {
					dirty = "+modified"
				}
			}
		}
		if rev != "" {
			m.Revision = rev + dirty
		}
	}
	return m
}

// cpuModel returns the CPU's model name from /proc/cpuinfo, or "" where
// unknown.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// targets judges the project's performance targets on the sections that ran.
func targets(rep *Report) []Target {
	out := []Target{}
	if st := rep.Stochastic; st != nil {
		for i := range st.Problems {
			pr := &st.Problems[i]
			if pr.Name != TargetProblem {
				continue
			}
			cmp := compareAtEpsMin(pr, TargetMethod)
			t := Target{
				Name: "speedup",
				Description: fmt.Sprintf("%s needs at least %d× fewer samples than the best baseline at ε = %g on %s",
					TargetMethod, TargetSpeedup, cmp.eps, TargetProblem),
				Value: Number(cmp.ratio), Threshold: TargetSpeedup, LowerBound: cmp.lowerBound,
			}
			t.Met = cmp.ratio >= TargetSpeedup
			t.Note = cmp.note
			out = append(out, t)
			if m := findMethod(pr, TargetMethod); m != nil {
				out = append(out, Target{
					Name:        "exponent",
					Description: fmt.Sprintf("fitted exponent of %s's samples in 1/ε on %s is at most %g", TargetMethod, TargetProblem, TargetExponent),
					Value:       m.Slope, Threshold: TargetExponent, Met: float64(m.Slope) <= TargetExponent,
					Note: slopeNote(pr, m),
				})
			}
		}
	}
	if oh := rep.Overhead; oh != nil {
		for _, r := range oh.Problems {
			out = append(out, Target{
				Name:        "overhead-" + r.Problem,
				Description: fmt.Sprintf("%s's own work (norms, clipping, median-of-means) is at most %g%% of its oracle time on %s", r.Method, 100*TargetOverhead, r.Problem),
				Value:       Number(r.Overhead), Threshold: TargetOverhead, Met: r.Overhead <= TargetOverhead,
			})
		}
	}
	if fw := rep.Forward; fw != nil {
		out = append(out, forwardTarget(fw))
	}
	if tr := rep.Training; tr != nil {
		out = append(out, trainingTarget(tr))
	}
	return out
}

// forwardTarget judges GHAL's function evaluations against Anderson's at
// relative residual TargetForwardTol.
func forwardTarget(fw *ForwardReport) Target {
	t := Target{
		Name:        "ghal-vs-anderson",
		Description: fmt.Sprintf("GHAL needs at most %g× Anderson's median function evaluations to reach relative residual %g on the trained DEQ", TargetGHALRatio, TargetForwardTol),
		Value:       Number(math.NaN()), Threshold: TargetGHALRatio,
	}
	calls := func(name string) float64 {
		for _, m := range fw.Methods {
			if m.Method != name {
				continue
			}
			for _, tl := range m.Tols {
				if tl.Tol == TargetForwardTol {
					return float64(tl.Calls)
				}
			}
		}
		return math.NaN()
	}
	g, a := calls("ghal"), calls("anderson")
	switch {
	case math.IsNaN(g) || math.IsNaN(a):
		t.Note = fmt.Sprintf("GHAL or Anderson was not measured at %g", TargetForwardTol)
	case math.IsInf(a, 1):
		t.Note = fmt.Sprintf("Anderson did not reach %g within %d iterations on most batches", TargetForwardTol, fw.MaxIter)
	case math.IsInf(g, 1):
		t.Note = fmt.Sprintf("GHAL did not reach %g within %d iterations on most batches", TargetForwardTol, fw.MaxIter)
	default:
		t.Value = Number(g / a)
		t.Met = g/a <= TargetGHALRatio
		t.Note = fmt.Sprintf("median evaluations: GHAL %g, Anderson %g", g, a)
	}
	return t
}

// trainingTarget judges the best epoch's GFLOP/s against the same-shape
// matrix multiply.
func trainingTarget(tr *TrainingReport) Target {
	t := Target{
		Name:        "training-efficiency",
		Description: fmt.Sprintf("a training epoch's arithmetic runs at least %g%% as fast as blas64.Gemm on the same products", 100*TargetTrainingEfficiency),
		Value:       Number(math.NaN()), Threshold: TargetTrainingEfficiency,
	}
	best := -1
	for i, e := range tr.Epochs {
		if best < 0 || e.Efficiency > tr.Epochs[best].Efficiency {
			best = i
		}
	}
	if best >= 0 {
		e := tr.Epochs[best]
		t.Value = Number(e.Efficiency)
		t.Met = e.Efficiency >= TargetTrainingEfficiency
		t.Note = fmt.Sprintf("best of %d epochs (epoch %d): %.2f GFLOP/s against %.2f GFLOP/s", len(tr.Epochs), e.Epoch, e.GFLOPS, e.RefGFLOPS)
	}
	return t
}

// comparison is a VR-GHAL variant against the best baseline at ε_min.
type comparison struct {
	eps        float64
	vr, best   float64
	bestName   string
	ratio      float64
	lowerBound bool
	note       string
}

// compareAtEpsMin compares method with the best baseline at the smallest ε
// of pr. A baseline that did not reach ε for most seeds counts as needing
// more than the budget, which makes the ratio a lower bound.
func compareAtEpsMin(pr *ProblemResult, method string) comparison {
	last := len(pr.Eps) - 1
	c := comparison{eps: pr.Eps[last], vr: math.NaN(), best: math.Inf(1), ratio: math.NaN()}
	if m := findMethod(pr, method); m != nil && m.NotApplicable == "" {
		c.vr = float64(m.Eps[last].Median)
	}
	for _, m := range pr.Methods {
		if m.VRGHAL || m.NotApplicable != "" {
			continue
		}
		if v := float64(m.Eps[last].Median); v < c.best {
			c.best, c.bestName = v, m.Method
		}
	}
	switch {
	case math.IsNaN(c.vr) || math.IsInf(c.vr, 1):
		c.note = fmt.Sprintf("%s did not reach ε = %s for most seeds within the budget of %s samples", method, fmtEps(c.eps), sci(float64(pr.Budget)))
	case math.IsInf(c.best, 1):
		c.ratio, c.lowerBound = float64(pr.Budget)/c.vr, true
		c.note = fmt.Sprintf("no baseline reached ε = %s for most seeds within the budget of %s samples; the ratio budget/%s is a lower bound", fmtEps(c.eps), sci(float64(pr.Budget)), method)
	default:
		c.ratio = c.best / c.vr
		c.note = fmt.Sprintf("best baseline %s: median %s samples; %s: %s", c.bestName, sci(c.best), method, sci(c.vr))
	}
	return c
}

// slopeNote says which accuracies a method's slope covers.
func slopeNote(pr *ProblemResult, m *MethodResult) string {
	var used []string
	for _, e := range m.Eps {
		md := float64(e.Median)
		if e.Eps < pr.R0 && !math.IsInf(md, 1) && !math.IsNaN(md) {
			used = append(used, fmtEps(e.Eps))
		}
	}
	note := fmt.Sprintf("least squares over the %d accuracies %s", len(used), strings.Join(used, ", "))
	last := m.Eps[len(m.Eps)-1]
	if md := float64(last.Median); math.IsInf(md, 1) || math.IsNaN(md) {
		note += fmt.Sprintf("; ε = %s was not reached within the budget, so the slope does not cover it", fmtEps(last.Eps))
	}
	return note
}

func findMethod(pr *ProblemResult, name string) *MethodResult {
	for i := range pr.Methods {
		if pr.Methods[i].Method == name {
			return &pr.Methods[i]
		}
	}
	return nil
}
