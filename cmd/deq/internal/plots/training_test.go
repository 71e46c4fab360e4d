package plots

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/train"
)

func TestWriteTraining(t *testing.T) {
	var history []train.EpochMetrics
	for e := 1; e <= 3; e++ {
		m := train.EpochMetrics{Epoch: e, TrainLoss: 1 / float64(e), TestLoss: 1.2 / float64(e), TrainAcc: 0.5 + 0.1*float64(e), TestAcc: 0.45 + 0.1*float64(e),
			SpectralRadius: 0.5 + 0.05*float64(e), SpectralNorm: 0.6 + 0.05*float64(e)}
		for i, r := range []float64{1, 0.1, 0.01 / float64(e), 1e-4} {
			m.Trace = append(m.Trace, train.TracePoint{Iter: i, Residual: r})
		}
		history = append(history, m)
	}
	dir := filepath.Join(t.TempDir(), "plots")
	paths, err := WriteTraining(dir, history, 1e-3, 0.9)
	require.NoError(t, err)
	require.Len(t, paths, 4)
	for i, name := range []string{Loss, Accuracy, Residual, Spectral} {
		require.Equal(t, filepath.Join(dir, name), paths[i])
		f, err := os.Open(paths[i])
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		require.Greater(t, img.Bounds().Dx(), 100)
	}
	// No declared bound (weight normalisation), and epochs without a
	// measurement (restored from an old checkpoint).
	history[0].SpectralRadius, history[0].SpectralNorm = 0, 0
	_, err = WriteTraining(dir, history, 1e-3, math.Inf(1))
	require.NoError(t, err)
	_, err = WriteTraining(dir, nil, 0, 0.9)
	require.Error(t, err)
}

func TestIntegerTicks(t *testing.T) {
	var labels []string
	for _, tk := range (IntegerTicks{}).Ticks(0.5, 3.2) {
		labels = append(labels, tk.Label)
	}
	require.Equal(t, []string{"1", "2", "3"}, labels)
	require.Len(t, (IntegerTicks{}).Ticks(0, 100), 11)
}
