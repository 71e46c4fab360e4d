package train

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWritePlots(t *testing.T) {
	tr, te := blobData(128, 50)
	trn, err := New(tinyConfig(), tr, te, nil)
	require.NoError(t, err)
	res, err := trn.Run(context.Background())
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "plots")
	paths, err := WritePlots(dir, res.Epochs, 1e-3)
	require.NoError(t, err)
	require.Len(t, paths, 3)
	for i, name := range []string{PlotLoss, PlotAccuracy, PlotResidual} {
		require.Equal(t, filepath.Join(dir, name), paths[i])
		f, err := os.Open(paths[i])
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		require.Greater(t, img.Bounds().Dx(), 100)
	}
	_, err = WritePlots(dir, nil, 0)
	require.Error(t, err)
}
