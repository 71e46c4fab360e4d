package datasets

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMNIST10kIsTheHeadOfMNISTTraining checks the provenance that
// docs/datasets.md states: the 10,000 digits of mnist-10k are, image for
// image and label for label, the first 10,000 images of the official MNIST
// training set, so none of them is an official test image. It runs where
// both sets are found (installed or cached), and is skipped otherwise and
// with -short.
func TestMNIST10kIsTheHeadOfMNISTTraining(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 60,000 images; runs in the full suite")
	}
	read := func(name string) (im [2]*Images, labels [2][]uint8) {
		dir, err := Find(name, nil)
		if err != nil {
			t.Skipf("%s not found: %v", name, err)
		}
		paths, err := standardPaths(dir)
		require.NoError(t, err)
		for s := range 2 { // training, test
			im[s], err = ReadImagesFile(paths[2*s], nil)
			require.NoError(t, err)
			labels[s], err = ReadLabelsFile(paths[2*s+1], nil)
			require.NoError(t, err)
		}
		return im, labels
	}
	full, fullLabels := read(MNIST)
	small, smallLabels := read(MNIST10k)
	const dim = 28 * 28
	head := make(map[string]uint8, 10000)
	for i := range 10000 {
		head[string(full[0].Pix[i*dim:(i+1)*dim])] = fullLabels[0][i]
	}
	official := make(map[string]bool, 10000)
	for i := range full[1].N {
		official[string(full[1].Pix[i*dim:(i+1)*dim])] = true
	}
	n := 0
	for s := range 2 {
		for i := range small[s].N {
			img := string(small[s].Pix[i*dim : (i+1)*dim])
			label, ok := head[img]
			require.True(t, ok, "mnist-10k set %d image %d is not among the first 10,000 official training images", s, i)
			require.Equal(t, label, smallLabels[s][i], "mnist-10k set %d image %d", s, i)
			require.False(t, official[img], "mnist-10k set %d image %d is an official test image", s, i)
			n++
		}
	}
	require.Equal(t, 10000, n)
}
