package report

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/deqgo/deq/cmd/deq/internal/plots"
)

// Plot sizes.
const (
	plotWidth  = 7 * vg.Inch
	plotHeight = 4.5 * vg.Inch
)

// forwardPlotName is the file name of the forward section's plot.
const forwardPlotName = "forward_residual.png"

// residualPlotName and samplesPlotName name a problem's PNG files.
func residualPlotName(problem string) string { return "residual_" + problem + ".png" }
func samplesPlotName(problem string) string  { return "samples_" + problem + ".png" }

// addCurves adds the line of every curve with at least two points to p and
// its legend, styled by its index, skipping the indices skip reports. It
// returns the largest budget drawn (1 if none).
func addCurves(p *plot.Plot, names []string, curves []Curve, skip func(int) bool) (float64, error) {
	last := 1.0
	for i, c := range curves {
		if skip(i) {
			continue
		}
		xy := plots.Positive(c.Budgets, c.Median)
		if len(xy) < 2 {
			continue
		}
		last = max(last, xy[len(xy)-1].X)
		l, err := plotter.NewLine(xy)
		if err != nil {
			return 0, err
		}
		plots.Style(l, i)
		p.Add(l)
		p.Legend.Add(names[i], l)
	}
	return last, nil
}

// writeResidualPlot draws the median true residual of the returned point
// against samples drawn, for every method of a problem, with the accuracies
// as horizontal lines.
func writeResidualPlot(w io.Writer, pr *ProblemResult, seeds int) error {
	p := plots.LogLog(fmt.Sprintf("%s: true residual of the current point (median over %d seeds)", pr.Name, seeds),
		"unit samples drawn", "‖T(x) − x‖ (exact T)")
	names, curves := make([]string, len(pr.Methods)), make([]Curve, len(pr.Methods))
	for i, m := range pr.Methods {
		names[i], curves[i] = m.Method, m.Curve
	}
	if _, err := addCurves(p, names, curves, func(i int) bool { return pr.Methods[i].NotApplicable != "" }); err != nil {
		return err
	}
	if len(pr.Eps) > 0 && len(pr.Methods) > 0 {
		b := pr.Methods[0].Curve.Budgets
		if err := plots.AddLevels(p, 1, b[len(b)-1], pr.Eps...); err != nil {
			return err
		}
	}
	return plots.WritePNG(w, p, plotWidth, plotHeight)
}

// writeSamplesPlot draws the median samples to reach ε against 1/ε, with the
// information-theoretic floor.
func writeSamplesPlot(w io.Writer, pr *ProblemResult, seeds int) error {
	p := plots.LogLog(fmt.Sprintf("%s: samples to reach a true residual ε (median over %d seeds)", pr.Name, seeds),
		"1/ε", "unit samples")
	inv := make([]float64, len(pr.Eps))
	for i, e := range pr.Eps {
		inv[i] = 1 / e
	}
	fl, err := plotter.NewLine(plots.Positive(inv, pr.Floor))
	if err != nil {
		return err
	}
	fl.Color, fl.Width, fl.Dashes = color.Black, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(fl)
	p.Legend.Add("floor 2σ²κ ln(1/δ)/ε²", fl)
	for i, m := range pr.Methods {
		if m.NotApplicable != "" {
			continue
		}
		med := make([]Number, len(m.Eps))
		for j, e := range m.Eps {
			med[j] = e.Median
		}
		xy := plots.Positive(inv, med)
		if len(xy) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		plots.Style(l, i)
		s.Color = plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		p.Add(l, s)
		p.Legend.Add(m.Method, l, s)
	}
	p.Legend.Left = true
	return plots.WritePNG(w, p, plotWidth, plotHeight)
}

// writeForwardPlot draws the relative residual against function
// evaluations of every method of the forward section on its first batch,
// with the tolerances as horizontal lines.
func writeForwardPlot(w io.Writer, fw *ForwardReport) error {
	p := plots.LogLog(fmt.Sprintf("trained %s DEQ (%s): forward solves of the first test batch", fw.Cell, fw.Data),
		"function evaluations", "‖f(z) − z‖ / ‖f(0) − 0‖")
	names, curves := make([]string, len(fw.Methods)), make([]Curve, len(fw.Methods))
	for i, m := range fw.Methods {
		names[i], curves[i] = m.Method, m.Curve
	}
	last, err := addCurves(p, names, curves, func(int) bool { return false })
	if err != nil {
		return err
	}
	if err := plots.AddLevels(p, 1, last, fw.Tols...); err != nil {
		return err
	}
	return plots.WritePNG(w, p, plotWidth, plotHeight)
}
