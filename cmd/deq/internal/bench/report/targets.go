package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/deqgo/deq/solver"
)

// Target thresholds.
const (
	// targetSpeedup is the factor by which VR-GHAL should need fewer
	// samples than the best baseline at the smallest ε on targetProblem.
	targetSpeedup = 10
	// targetExponent bounds VR-GHAL's fitted exponent of samples in 1/ε on
	// targetProblem.
	targetExponent = 2.3
	// targetOverhead bounds VR-GHAL's own time relative to its oracle time.
	targetOverhead = 0.10
	// targetProblem is the samplewise-Lipschitz (nonexpansive) problem the
	// sample targets are judged on, with the VR-GHAL variant targetMethod.
	targetProblem = "averaged"
	// targetGHALRatio bounds GHAL's median function evaluations relative
	// to Anderson's at relative residual targetForwardTol on the trained
	// DEQ of the forward section.
	targetGHALRatio  = 2.0
	targetForwardTol = 1e-3
	// targetTrainingEfficiency is the fraction of the same-shape matrix
	// multiply's GFLOP/s a training epoch should reach.
	targetTrainingEfficiency = 0.4
)

// targetMethod returns the VR-GHAL variant the sample targets are judged
// on: VR-GHAL under the samplewise-Lipschitz model, the model of
// targetProblem.
func targetMethod() string { return VRGHALName(solver.SamplewiseLipschitz) }

// VRGHALName returns the name under which the report lists VR-GHAL run
// under the oracle model m: the method's name and the model's, joined by a
// slash.
func VRGHALName(m solver.Model) string { return solver.VRGHAL{}.String() + "/" + m.String() }

// Targets judges the project's performance targets on the sections rep
// holds, in the order stochastic, overhead, forward, training.
func Targets(rep *Report) []Target {
	out := []Target{}
	if st := rep.Stochastic; st != nil {
		for i := range st.Problems {
			pr := &st.Problems[i]
			if pr.Name != targetProblem {
				continue
			}
			cmp := compareAtEpsMin(pr, targetMethod())
			t := Target{
				Name: "speedup",
				Description: fmt.Sprintf("%s needs at least %d× fewer samples than the best baseline at ε = %g on %s",
					targetMethod(), targetSpeedup, cmp.eps, targetProblem),
				Value: Number(cmp.ratio), Threshold: targetSpeedup, LowerBound: cmp.lowerBound,
			}
			t.Met = cmp.ratio >= targetSpeedup
			t.Note = cmp.note
			out = append(out, t)
			if m := findMethod(pr, targetMethod()); m != nil {
				out = append(out, Target{
					Name:        "exponent",
					Description: fmt.Sprintf("fitted exponent of %s's samples in 1/ε on %s is at most %g", targetMethod(), targetProblem, targetExponent),
					Value:       m.Slope, Threshold: targetExponent, Met: float64(m.Slope) <= targetExponent,
					Note: slopeNote(pr, m),
				})
			}
		}
	}
	if oh := rep.Overhead; oh != nil {
		for _, r := range oh.Problems {
			out = append(out, Target{
				Name:        "overhead-" + r.Problem,
				Description: fmt.Sprintf("%s's own work (norms, clipping, median-of-means) is at most %g%% of its oracle time on %s", r.Method, 100*targetOverhead, r.Problem),
				Value:       Number(r.Overhead), Threshold: targetOverhead, Met: r.Overhead <= targetOverhead,
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
// relative residual targetForwardTol.
func forwardTarget(fw *ForwardReport) Target {
	t := Target{
		Name:        "ghal-vs-anderson",
		Description: fmt.Sprintf("GHAL needs at most %g× Anderson's median function evaluations to reach relative residual %g on the trained DEQ", targetGHALRatio, targetForwardTol),
		Value:       Number(math.NaN()), Threshold: targetGHALRatio,
	}
	calls := func(name string) float64 {
		for _, m := range fw.Methods {
			if m.Method != name {
				continue
			}
			for _, tl := range m.Tols {
				if tl.Tol == targetForwardTol {
					return float64(tl.Calls)
				}
			}
		}
		return math.NaN()
	}
	g, a := calls(solver.GHAL{}.String()), calls(solver.Anderson{}.String())
	switch {
	case math.IsNaN(g) || math.IsNaN(a):
		t.Note = fmt.Sprintf("GHAL or Anderson was not measured at %g", targetForwardTol)
	case math.IsInf(a, 1):
		t.Note = fmt.Sprintf("Anderson did not reach %g within %d iterations on most batches", targetForwardTol, fw.MaxIter)
	case math.IsInf(g, 1):
		t.Note = fmt.Sprintf("GHAL did not reach %g within %d iterations on most batches", targetForwardTol, fw.MaxIter)
	default:
		t.Value = Number(g / a)
		t.Met = g/a <= targetGHALRatio
		t.Note = fmt.Sprintf("median evaluations: GHAL %g, Anderson %g", g, a)
	}
	return t
}

// trainingTarget judges the best epoch's GFLOP/s against the same-shape
// matrix multiply.
func trainingTarget(tr *TrainingReport) Target {
	t := Target{
		Name:        "training-efficiency",
		Description: fmt.Sprintf("a training epoch's arithmetic runs at least %g%% as fast as blas64.Gemm on the same products", 100*targetTrainingEfficiency),
		Value:       Number(math.NaN()), Threshold: targetTrainingEfficiency,
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
		t.Met = e.Efficiency >= targetTrainingEfficiency
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
