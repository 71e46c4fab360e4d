package plots

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/deqgo/deq/train"
)

// File names of the plots WriteTraining writes.
const (
	Loss     = "loss.png"
	Accuracy = "accuracy.png"
	Residual = "residual.png"
	Spectral = "spectral.png"
)

// Size of the training plots.
const (
	trainingWidth  = 16 * vg.Centimeter
	trainingHeight = 10 * vg.Centimeter
)

// palette colors the series of the training plots.
var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// WriteTraining writes PNG plots of a training run's history into dir
// (created if needed): Loss (training and test loss per epoch), Accuracy
// (training and test accuracy per epoch) and Residual (the forward residual
// against solver iterations for the first used batch of the first and the
// last epoch, on a logarithmic scale, with the tolerance tol as a
// horizontal line when positive) and Spectral (the spectral radius and
// norm of ∂f/∂z at z* per epoch, with the cell's declared bound gamma as a
// horizontal line when finite; epochs restored from a checkpoint written
// before the measurement existed have none and are left out). It returns
// the paths written.
func WriteTraining(dir string, history []train.EpochMetrics, tol, gamma float64) ([]string, error) {
	if len(history) == 0 {
		return nil, fmt.Errorf("plots: WriteTraining: no epochs to plot")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: WriteTraining: %w", err)
	}
	var paths []string
	for _, pe := range []struct {
		name, title, ylabel string
		legendTop           bool
		train, test         func(train.EpochMetrics) float64
	}{
		{Loss, "Loss", "cross-entropy", true,
			func(e train.EpochMetrics) float64 { return e.TrainLoss }, func(e train.EpochMetrics) float64 { return e.TestLoss }},
		{Accuracy, "Accuracy", "accuracy", false,
			func(e train.EpochMetrics) float64 { return e.TrainAcc }, func(e train.EpochMetrics) float64 { return e.TestAcc }},
	} {
		p := countPlot(pe.title, "epoch", pe.ylabel, pe.legendTop)
		for k, s := range []struct {
			label string
			f     func(train.EpochMetrics) float64
		}{{"train", pe.train}, {"test", pe.test}} {
			xy := make(plotter.XYs, len(history))
			for i, e := range history {
				xy[i] = plotter.XY{X: float64(e.Epoch), Y: s.f(e)}
			}
			if err := addSeries(p, s.label, xy, palette[k]); err != nil {
				return nil, err
			}
		}
		path, err := save(dir, pe.name, p)
		if err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	p, err := residualPlot(history, tol)
	if err != nil {
		return nil, err
	}
	path, err := save(dir, Residual, p)
	if err != nil {
		return nil, err
	}
	paths = append(paths, path)
	if p, err = spectralPlot(history, gamma); err != nil {
		return nil, err
	}
	if path, err = save(dir, Spectral, p); err != nil {
		return nil, err
	}
	return append(paths, path), nil
}

// countPlot returns a plot whose x axis counts (epochs, iterations) with
// integer ticks, with the legend at the top when legendTop.
func countPlot(title, xLabel, yLabel string, legendTop bool) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.X.Tick.Marker = IntegerTicks{}
	p.Legend.Top = legendTop
	return p
}

// spectralPlot draws the spectral radius and norm of ∂f/∂z per epoch, with
// the declared bound gamma when finite.
func spectralPlot(history []train.EpochMetrics, gamma float64) (*plot.Plot, error) {
	p := countPlot("Jacobian ∂f/∂z at the fixed point", "epoch", "largest over the monitored test images", false)
	first, last := 0.0, 0.0
	for k, s := range []struct {
		label string
		f     func(train.EpochMetrics) float64
	}{{"spectral radius ρ", func(e train.EpochMetrics) float64 { return e.SpectralRadius }},
		{"spectral norm ‖J‖₂", func(e train.EpochMetrics) float64 { return e.SpectralNorm }}} {
		var xy plotter.XYs
		for _, e := range history {
			if v := s.f(e); v > 0 {
				xy = append(xy, plotter.XY{X: float64(e.Epoch), Y: v})
			}
		}
		if len(xy) == 0 {
			continue
		}
		first, last = xy[0].X, xy[len(xy)-1].X
		if err := addSeries(p, s.label, xy, palette[k]); err != nil {
			return nil, err
		}
	}
	if gamma > 0 && !math.IsInf(gamma, 1) && last > 0 {
		if err := addLevel(p, "declared bound γ̄", first, last, gamma); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// residualPlot draws the forward residual traces of the first and the last
// epoch, with the tolerance tol when positive.
func residualPlot(history []train.EpochMetrics, tol float64) (*plot.Plot, error) {
	p := countPlot("Forward residual of a training batch", "solver iteration", "residual ‖f(z) − z‖", true)
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
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
		if err := addSeries(p, fmt.Sprintf("epoch %d", history[i].Epoch), xy, palette[k]); err != nil {
			return nil, err
		}
	}
	if tol > 0 {
		if err := addLevel(p, "tolerance", 0, float64(max(maxIter, 1)), tol); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addLevel adds to p and its legend a dashed grey horizontal line at y
// from x0 to x1.
func addLevel(p *plot.Plot, label string, x0, x1, y float64) error {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return fmt.Errorf("plots: WriteTraining: %w", err)
	}
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	l.Color = color.Gray{Y: 100}
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

// addSeries adds the line and points xy in color c to p and its legend.
func addSeries(p *plot.Plot, label string, xy plotter.XYs, c color.Color) error {
	l, pts, err := plotter.NewLinePoints(xy)
	if err != nil {
		return fmt.Errorf("plots: WriteTraining: %w", err)
	}
	l.Color, pts.Color = c, c
	p.Add(l, pts)
	p.Legend.Add(label, l, pts)
	return nil
}

// save writes p as the PNG file name in dir and returns its path.
func save(dir, name string, p *plot.Plot) (string, error) {
	path := filepath.Join(dir, name)
	if err := SavePNG(path, p, trainingWidth, trainingHeight); err != nil {
		return "", fmt.Errorf("plots: WriteTraining: %w", err)
	}
	return path, nil
}
