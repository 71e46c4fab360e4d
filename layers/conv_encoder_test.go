package layers

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// encoderGraph is the gorgonia graph of a ConvEncoder on n images, used by
// the tests.
type encoderGraph struct {
	g   *G.ExprGraph
	x   []float64
	out *G.Node
	ps  G.Nodes // W, b (, scale, shift), in Params order
}

func (e *ConvEncoder) newGraph(n int) (*encoderGraph, error) {
	if e.Layers() != 1 {
		return nil, fmt.Errorf("newGraph builds the first block only; the encoder has %d", e.Layers())
	}
	eg := &encoderGraph{g: G.NewGraph(), x: make([]float64, n*e.InputLen())}
	gr := graph{eg.g}
	err := build("ConvEncoder", func() {
		x := gr.bound("x", tensorOver(eg.x, n, e.blocks[0].geom.In, e.blocks[0].geom.H, e.blocks[0].geom.W))
		w := gr.bound("W", tensorOver(e.blocks[0].w.Data(), e.c, e.blocks[0].geom.In, ConvKernel, ConvKernel))
		b := gr.bound("b", tensorOver(e.blocks[0].b.Data(), 1, e.c, 1, 1))
		eg.ps = G.Nodes{w, b}
		y := G.Must(G.Conv2d(x, w, tensor.Shape{ConvKernel, ConvKernel}, []int{1, 1}, []int{2, 2}, []int{1, 1}))
		y = G.Must(G.BroadcastAdd(y, b, nil, []byte{0, 2, 3}))
		if e.groups == 0 {
			y = e.act.node(y)
		} else {
			// The GroupNorm replaces σ.
			sc := gr.bound("gn.scale", tensorOver(e.blocks[0].nscale.Data(), 1, e.c, 1, 1))
			sh := gr.bound("gn.shift", tensorOver(e.blocks[0].nshift.Data(), 1, e.c, 1, 1))
			eg.ps = append(eg.ps, sc, sh)
			y = groupNormNode(y, n, e.c, e.blocks[0].geom.OutH(), e.blocks[0].geom.OutW(), e.groups, sc, sh)
		}
		eg.out = y
	})
	if err != nil {
		return nil, err
	}
	return eg, nil
}

func TestConvEncoderMatchesGorgonia(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ConvEncoderConfig
		fd   bool
	}{
		{"mnist-shape", ConvEncoderConfig{Channels: 3, Seed: 1}, false},
		{"odd-groupnorm", ConvEncoderConfig{InChannels: 2, Height: 7, Width: 8, Channels: 4, Groups: 2, Seed: 2}, false},
		{"tanh-groupnorm", ConvEncoderConfig{InChannels: 2, Height: 6, Width: 5, Channels: 4, Groups: 1, Activation: Tanh, Seed: 3}, true},
		{"tanh", ConvEncoderConfig{Height: 5, Width: 5, Channels: 2, Activation: Tanh, Seed: 4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, err := NewConvEncoder(tc.cfg)
			require.NoError(t, err)
			rng := rand.New(rand.NewPCG(5, 5))
			copy(enc.blocks[0].b.Data(), randVec(rng, len(enc.blocks[0].b.Data()), 0.3))
			if enc.blocks[0].nscale != nil {
				copy(enc.blocks[0].nshift.Data(), randVec(rng, len(enc.blocks[0].nshift.Data()), 0.3))
				for i := range enc.blocks[0].nscale.Data() {
					enc.blocks[0].nscale.Data()[i] = 1 + 0.3*rng.NormFloat64()
				}
			}
			const n = 2
			x := randVec(rng, n*enc.InputLen(), 1)
			g := randVec(rng, n*enc.OutputLen(), 1)
			y := make([]float64, n*enc.OutputLen())
			require.NoError(t, enc.Forward(y, x))
			ZeroGrads(enc.Params())
			require.NoError(t, enc.Backward(g))

			eg, err := enc.newGraph(n)
			require.NoError(t, err)
			copy(eg.x, x)
			var grads G.Nodes
			var gData []float64
			var outV G.Value
			var read *G.Node
			require.NoError(t, build("test", func() {
				// Read the output before backprop, whose in-place ops may
				// overwrite it.
				read = G.Read(eg.out, &outV)
				gN := graph{eg.g}.bound("g", tensorOver(make([]float64, len(g)), eg.out.Shape()...))
				gData = gN.Value().Data().([]float64)
				grads = backprop(eg.out, gN, eg.ps)
			}))
			copy(gData, g)
			require.NoError(t, newMachine(eg.g, append(G.Nodes{read}, grads...)...).run())
			requireRel(t, outV.Data().([]float64), y, 1e-10, "forward")
			for i, p := range enc.Params() {
				requireRel(t, nodeData(grads[i]), p.GradData(), 1e-10, p.Name())
			}
			if !tc.fd {
				return
			}
			for _, p := range enc.Params() {
				d := p.Data()
				want := fdGrad(func(v []float64) float64 {
					copy(d, v)
					require.NoError(t, enc.Forward(y, x))
					return dot(g, y)
				}, slices.Clone(d))
				require.InDeltaSlice(t, want, p.GradData(), 1e-6, p.Name())
			}
		})
	}
}

func TestConvEncoderShapesAndAllocations(t *testing.T) {
	enc, err := NewConvEncoder(ConvEncoderConfig{Channels: 8, Groups: 4})
	require.NoError(t, err)
	c, h, w := enc.OutShape()
	require.Equal(t, []int{8, 14, 14}, []int{c, h, w})
	require.Equal(t, 784, enc.InputLen())
	x := make([]float64, 3*784)
	y := make([]float64, 3*enc.OutputLen())
	require.NoError(t, enc.Forward(y, x))
	require.Zero(t, testing.AllocsPerRun(3, func() { _ = enc.Forward(y, x) }))
	require.Zero(t, testing.AllocsPerRun(3, func() { _ = enc.Backward(y) }))
	require.ErrorContains(t, enc.Forward(y, x[:100]), "input length")
	_, err = NewConvEncoder(ConvEncoderConfig{})
	require.ErrorContains(t, err, "Channels")
	_, err = NewConvEncoder(ConvEncoderConfig{Channels: 3, Groups: 2})
	require.ErrorContains(t, err, "Groups")
	fresh, _ := NewConvEncoder(ConvEncoderConfig{Channels: 2})
	require.ErrorContains(t, fresh.Backward(nil), "Forward")
}

// TestConvEncoderGroupNormReplacesActivation checks that with Groups the
// encoder normalises the convolution's output itself: σ does not apply, so
// ReLU and tanh encoders of the same seed agree, and negative
// pre-activations survive (a ReLU before the GroupNorm would map every
// negative one of a channel to the same value).
func TestConvEncoderGroupNormReplacesActivation(t *testing.T) {
	var outs [2][]float64
	rng := rand.New(rand.NewPCG(7, 7))
	x := make([]float64, 3*8*8)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i, act := range []Activation{ReLU, Tanh} {
		enc, err := NewConvEncoder(ConvEncoderConfig{Height: 8, Width: 8, Channels: 4, Groups: 2, Activation: act, Seed: 9})
		require.NoError(t, err)
		outs[i] = make([]float64, 3*enc.OutputLen())
		require.NoError(t, enc.Forward(outs[i], x))
	}
	require.Equal(t, outs[0], outs[1])
	// Without the ReLU, the values of a channel are all distinct.
	seen := map[float64]bool{}
	for _, v := range outs[0][:16] {
		require.False(t, seen[v], "repeated value %v in a channel: σ applied before the GroupNorm", v)
		seen[v] = true
	}
}
