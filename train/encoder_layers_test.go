package train

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers"
)

// TestEncoderLayersParams checks the parameters a two-layer conv encoder
// adds to the model, after the first block's and before the readout's,
// and that weight decay applies to its kernels only.
func TestEncoderLayersParams(t *testing.T) {
	cfg := tinyConfig()
	cfg.Model = ModelConfig{Cell: ConvCell, Channels: 4, Groups: 2, EncoderLayers: 2}
	trn, err := New(cfg, squares("squares/train", 32, 6, 1), squares("squares/test", 8, 6, 2), nil)
	require.NoError(t, err)
	var names []string
	decay := map[string]bool{}
	for _, p := range trn.model.params[:8] {
		names = append(names, p.name)
		decay[p.name] = p.decay
	}
	require.Equal(t, []string{"encoder.W", "encoder.b", "encoder.gn.scale", "encoder.gn.shift",
		"encoder.W2", "encoder.b2", "encoder.gn2.scale", "encoder.gn2.shift"}, names)
	for name, d := range decay {
		require.Equal(t, name == "encoder.W" || name == "encoder.W2", d, name)
	}
	require.Equal(t, "readout.W", trn.model.params[8].name)
	require.Equal(t, 2, trn.model.conv.Layers())
	require.Equal(t, DefaultConvPrecision, trn.model.conv.Precision(), "the default precision")
}

// TestEncoderLayersPrecision checks that the conv model's encoder runs its
// further blocks in the model's precision, whichever it is.
func TestEncoderLayersPrecision(t *testing.T) {
	for _, p := range []struct {
		model  layers.Precision
		layers layers.Precision
	}{{layers.Float64, layers.Float64}, {layers.Float32, layers.Float32}} {
		cfg := tinyConfig()
		cfg.Model = ModelConfig{Cell: ConvCell, Channels: 4, Groups: 2, EncoderLayers: 3, Precision: p.model}
		trn, err := New(cfg, squares("squares/train", 32, 6, 1), squares("squares/test", 8, 6, 2), nil)
		require.NoError(t, err)
		require.Equal(t, 3, trn.model.conv.Layers())
		require.Equal(t, p.layers, trn.model.conv.Precision(), p.model)
	}
}
