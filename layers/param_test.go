package layers_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gorgonia.org/tensor"

	"github.com/deqgo/deq/layers"
)

// TestNewParam checks that a parameter's slices are its storage and that
// its gorgonia views share them.
func TestNewParam(t *testing.T) {
	p := layers.NewParam("W", 2, 3)
	require.Equal(t, "W", p.Name())
	r, c := p.Dims()
	require.Equal(t, [2]int{2, 3}, [2]int{r, c})
	require.Equal(t, make([]float64, 6), p.Data())
	require.Equal(t, make([]float64, 6), p.GradData())
	p.Data()[4] = 7
	p.GradData()[1] = 5
	v := p.Value().(*tensor.Dense)
	require.Equal(t, []int{2, 3}, []int(v.Shape()))
	require.Equal(t, p.Data(), v.Data().([]float64))
	g, err := p.Grad()
	require.NoError(t, err)
	g.(*tensor.Dense).Data().([]float64)[2] = 9 // the view writes the slice
	require.Equal(t, []float64{0, 5, 9, 0, 0, 0}, p.GradData())
	layers.ZeroGrads([]*layers.Param{p})
	require.Equal(t, make([]float64, 6), p.GradData())
	require.Len(t, layers.ValueGrads([]*layers.Param{p}), 1)
	for _, bad := range []func(){
		func() { layers.NewParam("", 1, 1) },
		func() { layers.NewParam("b", 0, 1) },
		func() { layers.NewParam("b", 1, -1) },
	} {
		require.Panics(t, bad)
	}
}
