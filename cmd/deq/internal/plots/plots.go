package plots

import (
	"bytes"
	"image/color"
	"io"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// LogLog returns a plot with logarithmic axes, a grid and a small legend at
// the top.
func LogLog(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return p
}

// Positive returns the points (xs[i], ys[i]) whose coordinates are finite
// and positive, the ones a log–log plot can show. ys must be at least as
// long as xs.
func Positive[Y ~float64](xs []float64, ys []Y) plotter.XYs {
	var out plotter.XYs
	for i, x := range xs {
		y := float64(ys[i])
		if x > 0 && y > 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) && !math.IsNaN(y) {
			out = append(out, plotter.XY{X: x, Y: y})
		}
	}
	return out
}

// Style gives the line of the i-th series plotutil's i-th color and dashes,
// 1.5 points wide.
func Style(l *plotter.Line, i int) {
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i)
	l.Width = vg.Points(1.5)
}

// AddLevels adds to p a thin gray horizontal line from x = from to x = to at
// each of the heights ys (target accuracies or tolerances), in order.
func AddLevels(p *plot.Plot, from, to float64, ys ...float64) error {
	for _, y := range ys {
		l, err := plotter.NewLine(plotter.XYs{{X: from, Y: y}, {X: to, Y: y}})
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 160}
		l.Width = vg.Points(0.5)
		p.Add(l)
	}
	return nil
}

// WritePNG writes p to w as a PNG image of the given size.
func WritePNG(w io.Writer, p *plot.Plot, width, height vg.Length) error {
	wt, err := p.WriterTo(width, height, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// SavePNG writes p to the file path as a PNG image of the given size.
func SavePNG(path string, p *plot.Plot, width, height vg.Length) error {
	var b bytes.Buffer
	if err := WritePNG(&b, p, width, height); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// IntegerTicks is a plot.Ticker that labels integer positions only (epochs,
// iterations), at most about ten of them.
type IntegerTicks struct{}

var _ plot.Ticker = IntegerTicks{}

// Ticks implements plot.Ticker.
func (IntegerTicks) Ticks(lo, hi float64) []plot.Tick {
	first, last := math.Ceil(lo), math.Floor(hi)
	step := math.Max(1, math.Ceil((last-first)/10))
	var ts []plot.Tick
	for v := first; v <= last; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return ts
}
