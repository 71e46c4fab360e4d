package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot sizes.
const (
	plotWidth  = 7 * vg.Inch
	plotHeight = 4.5 * vg.Inch
)

// residualPlotName and samplesPlotName name a problem's PNG files.
func residualPlotName(problem string) string { return "residual_" + problem + ".png" }
func samplesPlotName(problem string) string  { return "samples_" + problem + ".png" }

// logPlot returns a plot with logarithmic axes.
func logPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return p
}

// positive returns the points with finite positive coordinates.
func positive(xs []float64, ys []Number) plotter.XYs {
	var out plotter.XYs
	for i, x := range xs {
		y := float64(ys[i])
		if x > 0 && y > 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) && !math.IsNaN(y) {
			out = append(out, plotter.XY{X: x, Y: y})
		}
	}
	return out
}

// styleLine gives the i-th method's line its color and dashes.
func styleLine(l *plotter.Line, i int) {
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i)
	l.Width = vg.Points(1.5)
}

// writeResidualPlot draws the median true residual of the returned point
// against samples drawn, for every method of a problem, with the accuracies
// as horizontal lines.
func writeResidualPlot(w io.Writer, pr *ProblemResult, seeds int) error {
	p := logPlot(fmt.Sprintf("%s: true residual of the current point (median over %d seeds)", pr.Name, seeds),
		"unit samples drawn", "‖T(x) − x‖ (exact T)")
	for i, m := range pr.Methods {
		if m.NotApplicable != "" {
			continue
		}
		xy := positive(m.Curve.Budgets, m.Curve.Median)
		if len(xy) < 2 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		styleLine(l, i)
		p.Add(l)
		p.Legend.Add(m.Method, l)
	}
	if len(pr.Eps) > 0 && len(pr.Methods) > 0 {
		b := pr.Methods[0].Curve.Budgets
		for _, e := range pr.Eps {
			l, err := plotter.NewLine(plotter.XYs{{X: 1, Y: e}, {X: b[len(b)-1], Y: e}})
			if err != nil {
				return err
			}
			l.Color = color.Gray{Y: 160}
			l.Width = vg.Points(0.5)
			p.Add(l)
		}
	}
	return save(w, p)
}

// writeSamplesPlot draws the median samples to reach ε against 1/ε, with the
// information-theoretic floor.
func writeSamplesPlot(w io.Writer, pr *ProblemResult, seeds int) error {
	p := logPlot(fmt.Sprintf("%s: samples to reach a true residual ε (median over %d seeds)", pr.Name, seeds),
		"1/ε", "unit samples")
	inv := make([]float64, len(pr.Eps))
	floor := make([]Number, len(pr.Eps))
	for i, e := range pr.Eps {
		inv[i], floor[i] = 1/e, Number(pr.Floor[i])
	}
	fl, err := plotter.NewLine(positive(inv, floor))
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
		xy := positive(inv, med)
		if len(xy) == 0 {
			continue
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		styleLine(l, i)
		s.Color = plotutil.Color(i)
		s.Shape = plotutil.Shape(i)
		p.Add(l, s)
		p.Legend.Add(m.Method, l, s)
	}
	p.Legend.Left = true
	return save(w, p)
}

func save(w io.Writer, p *plot.Plot) error {
	wt, err := p.WriterTo(plotWidth, plotHeight, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// ForwardPlotName is the file name of the forward section's plot.
const ForwardPlotName = "forward_residual.png"

// writeForwardPlot draws the relative residual against function
// evaluations of every method of the forward section on its first batch,
// with the tolerances as horizontal lines.
func writeForwardPlot(w io.Writer, fw *ForwardReport) error {
	p := logPlot(fmt.Sprintf("trained %s DEQ (%s): forward solves of the first test batch", fw.Cell, fw.Data),
		"function evaluations", "‖f(z) − z‖ / ‖f(0) − 0‖")
	last := 1.0
	for i, m := range fw.Methods {
		xy := positive(m.Curve.Budgets, m.Curve.Median)
		if len(xy) < 2 {
			continue
		}
		last = max(last, xy[len(xy)-1].X)
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		styleLine(l, i)
		p.Add(l)
		p.Legend.Add(m.Method, l)
	}
	for _, t := range fw.Tols {
		l, err := plotter.NewLine(plotter.XYs{{X: 1, Y: t}, {X: last, Y: t}})
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 160}
		l.Width = vg.Points(0.5)
		p.Add(l)
	}
	return save(w, p)
}
