package train

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Plot file names written by WritePlots.
const (
	PlotLoss     = "loss.png"
	PlotAccuracy = "accuracy.png"
	PlotResidual = "residual.png"
)

// WritePlots writes PNG plots of a run's history into dir (created if
// needed): PlotLoss (training and test loss per epoch), PlotAccuracy
// (training and test accuracy per epoch) and PlotResidual (the forward
// residual against solver iterations for the first used batch of the first
// and the last epoch, on a logarithmic scale, with the tolerance tol as a
// horizontal line when positive). It returns the paths written.
func WritePlots(dir string, history []EpochMetrics, tol float64) ([]string, error) {
	if len(history) == 0 {
		return nil, fmt.Errorf("train: WritePlots: no epochs to plot")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("train: WritePlots: %w", err)
	}
	perEpoch := func(f func(EpochMetrics) float64) plotter.XYs {
		xy := make(plotter.XYs, len(history))
		for i, e := range history {
			xy[i] = plotter.XY{X: float64(e.Epoch), Y: f(e)}
		}
		return xy
	}
	var paths []string
	save := func(p *plot.Plot, name string) error {
		path := filepath.Join(dir, name)
		if err := p.Save(16*vg.Centimeter, 10*vg.Centimeter, path); err != nil {
			return fmt.Errorf("train: WritePlots: %w", err)
		}
		paths = append(paths, path)
		return nil
	}
	lines := func(title, ylabel string, legendTop bool, series ...any) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "epoch"
		p.X.Tick.Marker = integerTicks{}
		p.Y.Label.Text = ylabel
		p.Legend.Top = legendTop
		for i := 0; i < len(series); i += 2 {
			l, pts, err := plotter.NewLinePoints(series[i+1].(plotter.XYs))
			if err != nil {
				return nil, fmt.Errorf("train: WritePlots: %w", err)
			}
			c := palette[(i/2)%len(palette)]
			l.Color, pts.Color = c, c
			p.Add(l, pts)
			p.Legend.Add(series[i].(string), l, pts)
		}
		return p, nil
	}
	p, err := lines("Loss", "cross-entropy", true,
		"train", perEpoch(func(e EpochMetrics) float64 { return e.TrainLoss }),
		"test", perEpoch(func(e EpochMetrics) float64 { return e.TestLoss }))
	if err != nil {
		return nil, err
	}
	if err := save(p, PlotLoss); err != nil {
		return nil, err
	}
	p, err = lines("Accuracy", "accuracy", false,
		"train", perEpoch(func(e EpochMetrics) float64 { return e.TrainAcc }),
		"test", perEpoch(func(e EpochMetrics) float64 { return e.TestAcc }))
	if err != nil {
		return nil, err
	}
	if err := save(p, PlotAccuracy); err != nil {
		return nil, err
	}

	p = plot.New()
	p.Title.Text = "Forward residual of a training batch"
	p.X.Label.Text = "solver iteration"
	p.X.Tick.Marker = integerTicks{}
	p.Y.Label.Text = "residual ‖f(z) − z‖"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	picks := []int{0}
	if len(history) > 1 {
		picks = append(picks, len(history)-1)
	}
	maxIter := 0
	for k, i := range picks {
		var xy plotter.XYs
		for _, tp := range history[i].Trace {
			if tp.Residual > 0 {
				xy = append(xy, plotter.XY{X: float64(tp.Iter), Y: tp.Residual})
				maxIter = max(maxIter, tp.Iter)
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("train: WritePlots: %w", err)
		}
		l.Color, pts.Color = palette[k], palette[k]
		p.Add(l, pts)
		p.Legend.Add(fmt.Sprintf("epoch %d", history[i].Epoch), l, pts)
	}
	if tol > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: tol}, {X: float64(max(maxIter, 1)), Y: tol}})
		if err != nil {
			return nil, fmt.Errorf("train: WritePlots: %w", err)
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = color.Gray{Y: 100}
		p.Add(l)
		p.Legend.Add("tolerance", l)
	}
	if err := save(p, PlotResidual); err != nil {
		return nil, err
	}
	return paths, nil
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// integerTicks labels integer positions only (epochs, iterations), at most
// about ten of them.
type integerTicks struct{}

// Ticks implements plot.Ticker.
func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	first, last := math.Ceil(lo), math.Floor(hi)
	step := math.Max(1, math.Ceil((last-first)/10))
	var ts []plot.Tick
	for v := first; v <= last; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return ts
}
