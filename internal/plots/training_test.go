package plots

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/train"
)

func TestWriteTraining(t *testing.T) {
	var history []train.EpochMetrics
	for e := 1; e <= 3; e++ {
		m := train.EpochMetrics{Epoch: e, TrainLoss: 1 / float64(e), TestLoss: 1.2 / float64(e), TrainAcc: 0.5 + 0.1*float64(e), TestAcc: 0.45 + 0.1*float64(e)}
		for i, r := range []float64{1, 0.1, 0.01 / float64(e), 1e-4} {
			m.Trace = append(m.Trace, train.TracePoint{Iter: i, Residual: r})
		}
		history = append(history, m)
	}
	dir := filepath.Join(t.TempDir(), "plots")
	paths, err := WriteTraining(dir, history, 1e-3)
	require.NoError(t, err)
	require.Len(t, paths, 3)
	for i, name := range []string{Loss, Accuracy, Residual} {
		require.Equal(t, filepath.Join(dir, name), paths[i])
		f, err := os.Open(paths[i])
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		require.Greater(t, img.Bounds().Dx(), 100)
	}
	_, err = WriteTraining(dir, nil, 0)
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
