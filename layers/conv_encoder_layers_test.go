package layers

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// encoderDigest returns an FNV-1a hash of the bits of the output and of
// every parameter gradient of a ConvEncoder of cfg on a fixed batch, and
// the output.
func encoderDigest(t *testing.T, cfg ConvEncoderConfig) (uint64, []float64) {
	t.Helper()
	enc, err := NewConvEncoder(cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 2
	x := randVec(rng, n*enc.InputLen(), 1)
	g := randVec(rng, n*enc.OutputLen(), 1)
	y := make([]float64, n*enc.OutputLen())
	require.NoError(t, enc.Forward(y, x))
	ZeroGrads(enc.Params())
	require.NoError(t, enc.Backward(g))
	h := fnv.New64a()
	put := func(v []float64) {
		var b [8]byte
		for _, f := range v {
			u := math.Float64bits(f)
			for i := range b {
				b[i] = byte(u >> (8 * i))
			}
			h.Write(b[:])
		}
	}
	put(y)
	for _, p := range enc.Params() {
		put(p.Data())
		put(p.GradData())
	}
	return h.Sum64(), y
}

// TestConvEncoderOneLayerUnchanged checks that Layers 0 and 1 are the
// one-layer encoder as it was before Layers existed: the digests were
// computed by that encoder, bit for bit, on amd64 (other architectures may
// fuse multiplications and additions, and round differently).
func TestConvEncoderOneLayerUnchanged(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the digests are those of amd64")
	}
	for _, tc := range []struct {
		name string
		cfg  ConvEncoderConfig
		want uint64
	}{
		{"groupnorm", ConvEncoderConfig{Height: 9, Width: 8, Channels: 4, Groups: 2, Seed: 21}, 0x4ec473fe3c7efc1a},
		{"relu", ConvEncoderConfig{InChannels: 2, Height: 7, Width: 7, Channels: 3, Seed: 22}, 0xfcab8fa48af51e35},
		{"tanh", ConvEncoderConfig{Height: 6, Width: 6, Channels: 2, Activation: Tanh, Seed: 23}, 0xf1db6ce81b28aff1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, layers := range []int{0, 1} {
				cfg := tc.cfg
				cfg.Layers = layers
				got, _ := encoderDigest(t, cfg)
				require.Equal(t, tc.want, got, "Layers = %d", layers)
			}
		})
	}
}

// encoderCase is a named encoder configuration of a table-driven test.
type encoderCase struct {
	name string
	cfg  ConvEncoderConfig
}

// encoderFDCases are the deeper encoders whose gradients are checked
// against finite differences.
func encoderFDCases() []encoderCase {
	return []encoderCase{
		{"2-groupnorm", ConvEncoderConfig{Height: 8, Width: 8, Channels: 4, Groups: 2, Layers: 2, Seed: 31}},
		{"3-groupnorm", ConvEncoderConfig{Height: 8, Width: 8, Channels: 4, Groups: 2, Layers: 3, Seed: 32}},
		{"2-relu", ConvEncoderConfig{Height: 8, Width: 8, Channels: 4, Layers: 2, Seed: 33}},
		{"3-relu", ConvEncoderConfig{Height: 8, Width: 8, Channels: 4, Layers: 3, Seed: 34}},
		{"3-tanh", ConvEncoderConfig{InChannels: 2, Height: 7, Width: 8, Channels: 4, Layers: 3, Activation: Tanh, Seed: 35}},
	}
}

// randomEncoder returns an encoder of cfg whose biases, GroupNorm scales
// and shifts are random (so that none is at its initial value), a batch
// of n inputs and an output cotangent, all from a fixed seed (the same for
// every precision).
func randomEncoder(t *testing.T, cfg ConvEncoderConfig, n int) (enc *ConvEncoder, x, g []float64) {
	t.Helper()
	enc, err := NewConvEncoder(cfg)
	require.NoError(t, err)
	require.Equal(t, cmp0(cfg.Layers, 1), enc.Layers())
	rng := rand.New(rand.NewPCG(36, 37))
	for _, p := range enc.Params() {
		d := p.Data()
		switch {
		case strings.HasPrefix(p.Name(), "b") || strings.HasSuffix(p.Name(), ".shift"):
			copy(d, randVec(rng, len(d), 0.3))
		case strings.HasSuffix(p.Name(), ".scale"):
			for i := range d {
				d[i] = 1 + 0.3*rng.NormFloat64()
			}
		}
	}
	x = randVec(rng, n*enc.InputLen(), 1)
	g = randVec(rng, n*enc.OutputLen(), 1)
	return enc, x, g
}

// encoderGrads runs Forward on x and Backward on g from zero gradients and
// returns the output and the gradients, in Params order.
func encoderGrads(t *testing.T, enc *ConvEncoder, x, g []float64) (y []float64, grads [][]float64) {
	t.Helper()
	y = make([]float64, len(g))
	require.NoError(t, enc.Forward(y, x))
	ZeroGrads(enc.Params())
	require.NoError(t, enc.Backward(g))
	for _, p := range enc.Params() {
		grads = append(grads, slices.Clone(p.GradData()))
	}
	return y, grads
}

// encoderFD returns the central finite differences of ⟨g, y(x)⟩ with
// respect to every parameter of enc, in Params order.
func encoderFD(t *testing.T, enc *ConvEncoder, x, g []float64) [][]float64 {
	t.Helper()
	y := make([]float64, len(g))
	var fds [][]float64
	for _, p := range enc.Params() {
		d := p.Data()
		fds = append(fds, fdGrad(func(v []float64) float64 {
			copy(d, v)
			require.NoError(t, enc.Forward(y, x))
			return dot(g, y)
		}, slices.Clone(d)))
	}
	return fds
}

// TestConvEncoderLayersFiniteDifferences checks the gradient of ⟨g, y⟩ with
// respect to every parameter of deeper encoders against central finite
// differences.
func TestConvEncoderLayersFiniteDifferences(t *testing.T) {
	for _, tc := range encoderFDCases() {
		t.Run(tc.name, func(t *testing.T) {
			enc, x, g := randomEncoder(t, tc.cfg, 2)
			_, grads := encoderGrads(t, enc, x, g)
			for i, want := range encoderFD(t, enc, x, g) {
				require.InDeltaSlice(t, want, grads[i], 1e-6, enc.Params()[i].Name())
			}
		})
	}
}

// TestConvEncoderLayersStructure checks the parameters' names and shapes,
// that the first block is drawn as in a one-layer encoder of the same seed
// and the others from streams of their own, the config's errors and that
// Forward and Backward allocate nothing.
func TestConvEncoderLayersStructure(t *testing.T) {
	one, err := NewConvEncoder(ConvEncoderConfig{Channels: 8, Groups: 4, Seed: 41})
	require.NoError(t, err)
	enc, err := NewConvEncoder(ConvEncoderConfig{Channels: 8, Groups: 4, Layers: 3, Seed: 41})
	require.NoError(t, err)
	var names []string
	var shapes [][2]int
	for _, p := range enc.Params() {
		names = append(names, p.Name())
		r, c := p.Dims()
		shapes = append(shapes, [2]int{r, c})
	}
	require.Equal(t, []string{"W", "b", "gn.scale", "gn.shift", "W2", "b2", "gn2.scale", "gn2.shift", "W3", "b3", "gn3.scale", "gn3.shift"}, names)
	require.Equal(t, [2]int{8, 9}, shapes[0])
	require.Equal(t, [2]int{8, 72}, shapes[4])
	require.Equal(t, [2]int{8, 72}, shapes[8])
	require.Equal(t, one.Params()[0].Data(), enc.Params()[0].Data())
	w2, w3 := enc.Params()[4].Data(), enc.Params()[8].Data()
	require.NotEqual(t, w2, w3)
	// He initialisation: the variance is about 2/72 (the sample variance
	// of 576 draws has a standard deviation of about 0.0016; 1/72, the
	// scale without the factor 2, is 0.014 away).
	v := dot(w2, w2) / float64(len(w2))
	require.InDelta(t, 2.0/72, v, 0.005)

	c, h, w := enc.OutShape()
	require.Equal(t, []int{8, 14, 14}, []int{c, h, w})
	x := randVec(rand.New(rand.NewPCG(42, 42)), 3*784, 1)
	y := make([]float64, 3*enc.OutputLen())
	require.NoError(t, enc.Forward(y, x))
	require.Zero(t, testing.AllocsPerRun(3, func() { _ = enc.Forward(y, x) }))
	require.Zero(t, testing.AllocsPerRun(3, func() { _ = enc.Backward(y) }))
	relu, err := NewConvEncoder(ConvEncoderConfig{Channels: 4, Layers: 2, Seed: 43})
	require.NoError(t, err)
	y = y[:3*relu.OutputLen()]
	require.NoError(t, relu.Forward(y, x))
	require.Zero(t, testing.AllocsPerRun(3, func() { _ = relu.Forward(y, x) }))
	require.Zero(t, testing.AllocsPerRun(3, func() { _ = relu.Backward(y) }))

	_, err = NewConvEncoder(ConvEncoderConfig{Channels: 4, Layers: -1})
	require.ErrorContains(t, err, "Layers")
}
