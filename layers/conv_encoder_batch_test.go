package layers

import (
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/layers/internal/conv"
)

// TestConvEncoderLayersFloat32FiniteDifferences checks the gradients of
// deeper Float32 encoders against central finite differences of the
// Float64 encoder of the same parameters, the map they compute up to
// rounding.
//
// The tolerance is the finite differences' own 1e-6 (as for Float64) plus
// ρ = 1e-4 of the parameter's largest gradient entry, from float32
// rounding: a product entry of the further blocks sums at most N = 50
// terms here (9C = 36 for the convolution and its transpose, the 2·5·5
// columns of the batch for the kernels' gradient) and errs by at most
// γ_{N+2} = (N+2)u/(1 − (N+2)u) ≈ 3.1e-6 (u = 2⁻²⁴) of the sum of its
// terms' magnitudes; a gradient passes through at most 2(L − 1) = 4
// rounded products (forward and backward), so 4·γ ≈ 1.2e-5, and ρ allows
// a factor 8 for the magnitude sums exceeding the results and the
// GroupNorm's gain 1/σ. (Measured: at most 5e-7 of the largest entry.) A
// ReLU whose pre-activation changes sign under rounding would break any
// such bound; these fixed seeds have none. The Float32 gradients must
// differ from the Float64 ones somewhere, so that the check is not that of
// the Float64 encoder.
func TestConvEncoderLayersFloat32FiniteDifferences(t *testing.T) {
	const rho = 1e-4
	for _, tc := range encoderFDCases() {
		t.Run(tc.name, func(t *testing.T) {
			enc64, x, g := randomEncoder(t, tc.cfg, 2)
			cfg := tc.cfg
			cfg.Precision = Float32
			enc32, _, _ := randomEncoder(t, cfg, 2)
			require.Equal(t, Float32, enc32.Precision())
			_, grads64 := encoderGrads(t, enc64, x, g)
			_, grads32 := encoderGrads(t, enc32, x, g)
			require.NotEqual(t, grads64, grads32)
			for i, want := range encoderFD(t, enc64, x, g) {
				tol := 1e-6 + rho*slices.Max(abs(want))
				require.InDeltaSlice(t, want, grads32[i], tol, enc32.Params()[i].Name())
			}
		})
	}
}

// encoderReference computes the output of e on the batch x and the
// gradients of ⟨g, y⟩ (Params order) image by image, every block through
// im2col and one matrix product, as the encoder did before its further
// blocks ran on the whole batch.
func encoderReference(e *ConvEncoder, x, g []float64) (y []float64, grads [][]float64) {
	in, out, layers := e.InputLen(), e.OutputLen(), len(e.blocks)
	n := len(x) / in
	y = make([]float64, n*out)
	for _, p := range e.Params() {
		grads = append(grads, make([]float64, len(p.Data())))
	}
	per := len(grads) / layers
	for b := range n {
		// post[k] is block k's output, the next block's input.
		post := make([][]float64, layers)
		xhat, rstd := make([][]float64, layers), make([][]float64, layers)
		img := x[b*in : (b+1)*in]
		for k, bl := range e.blocks {
			r := bl.geom.ColRows()
			col := make([]float64, r*e.hw)
			bl.geom.Im2Col(col, img)
			pre := make([]float64, out)
			conv.Gemm(false, false, e.c, e.hw, r, 1, bl.w.Data(), r, col, e.hw, 0, pre, e.hw)
			for ch := range e.c {
				for i := range e.hw {
					pre[ch*e.hw+i] += bl.b.Data()[ch]
				}
			}
			o := slices.Clone(pre)
			if e.groups == 0 {
				e.act.apply(o)
			} else {
				xhat[k], rstd[k] = make([]float64, out), make([]float64, e.groups)
				e.norm.forward(o, xhat[k], rstd[k], pre, bl.nscale.Data(), bl.nshift.Data())
				if k < layers-1 {
					ReLU.apply(o)
				}
			}
			post[k], img = o, o
		}
		copy(y[b*out:], post[layers-1])
		d := slices.Clone(g[b*out : (b+1)*out])
		for k := layers - 1; k >= 0; k-- {
			bl := e.blocks[k]
			gw, gb := grads[k*per], grads[k*per+1]
			if e.groups == 0 {
				e.act.backward(d, post[k])
			} else {
				if k < layers-1 {
					ReLU.backward(d, post[k])
				}
				e.norm.backward(d, d, xhat[k], rstd[k], bl.nscale.Data(), grads[k*per+2], grads[k*per+3])
			}
			img := x[b*in : (b+1)*in]
			if k > 0 {
				img = post[k-1]
			}
			r := bl.geom.ColRows()
			col := make([]float64, r*e.hw)
			bl.geom.Im2Col(col, img)
			conv.Gemm(false, true, e.c, r, e.hw, 1, d, e.hw, col, e.hw, 1, gw, r)
			for ch := range e.c {
				for _, v := range d[ch*e.hw : (ch+1)*e.hw] {
					gb[ch] += v
				}
			}
			if k > 0 {
				conv.Gemm(true, false, r, e.hw, e.c, 1, bl.w.Data(), r, d, e.hw, 0, col, e.hw)
				d = make([]float64, out)
				bl.geom.Col2ImAdd(d, col)
			}
		}
	}
	return y, grads
}

// requireRelClose requires ‖got − want‖∞ ≤ rel·‖want‖∞ (relative to the
// largest entry: entries near zero carry the rounding of the larger terms
// they cancel).
func requireRelClose(t *testing.T, want, got []float64, rel float64, name string) {
	t.Helper()
	require.Len(t, got, len(want), name)
	scale := slices.Max(abs(want))
	for i, w := range want {
		if d := math.Abs(got[i] - w); d > rel*scale {
			t.Fatalf("%s[%d] = %v, want %v: |Δ| = %.3g > %.3g", name, i, got[i], w, d, rel*scale)
		}
	}
}

// atLeastTwoProcs sets GOMAXPROCS to at least n ≥ 2 for the test, so that
// the encoders' teams (made when a batch size is first seen) have several
// parts.
func atLeastTwoProcs(t *testing.T, n int) {
	prev := runtime.GOMAXPROCS(max(n, runtime.GOMAXPROCS(0)))
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

// encoderShapes are deeper encoders of odd and small sizes: 5×5 and 6×6
// images give 3×3 after the stride-2 block, 34×34 gives 17×17 (an image's
// columns then exceed one chunk of conv.Shifted's products).
func encoderShapes() []encoderCase {
	return []encoderCase{
		{"5x5-groupnorm-3", ConvEncoderConfig{Height: 5, Width: 5, Channels: 4, Groups: 2, Layers: 3, Seed: 51}},
		{"6x6-relu-2", ConvEncoderConfig{Height: 6, Width: 6, Channels: 3, Layers: 2, Seed: 52}},
		{"7x8-tanh-3", ConvEncoderConfig{InChannels: 2, Height: 7, Width: 8, Channels: 4, Activation: Tanh, Layers: 3, Seed: 53}},
		{"28x28-groupnorm-2", ConvEncoderConfig{Channels: 6, Groups: 3, Layers: 2, Seed: 54}},
		{"34x34-groupnorm-3", ConvEncoderConfig{Height: 34, Width: 34, Channels: 4, Groups: 1, Layers: 3, Seed: 55}},
	}
}

// TestConvEncoderBatchedMatchesReference checks the Float64 encoder's
// outputs and gradients against the image-by-image im2col reference to
// 1e-12 of the largest entry (the two sum the same products in different
// orders), for batches of 1, 2 and 5 images split between up to three
// parts, each batch size seen twice (the second time from its cached
// workspace, after other sizes).
func TestConvEncoderBatchedMatchesReference(t *testing.T) {
	atLeastTwoProcs(t, 3)
	for _, tc := range encoderShapes() {
		t.Run(tc.name, func(t *testing.T) {
			enc, x, g := randomEncoder(t, tc.cfg, 5)
			for _, n := range []int{1, 2, 5, 1, 5} {
				xs, gs := x[:n*enc.InputLen()], g[:n*enc.OutputLen()]
				wantY, wantGrads := encoderReference(enc, xs, gs)
				y, grads := encoderGrads(t, enc, xs, gs)
				requireRelClose(t, wantY, y, 1e-12, "y")
				for i, p := range enc.Params() {
					requireRelClose(t, wantGrads[i], grads[i], 1e-12, p.Name())
				}
			}
		})
	}
}

// TestConvEncoderLayersDoNotAllocate checks that Forward and Backward of
// deeper encoders allocate nothing after the first call, in both
// precisions, for a batch of one image and one of several split between
// parts.
func TestConvEncoderLayersDoNotAllocate(t *testing.T) {
	atLeastTwoProcs(t, 2)
	for _, prec := range []Precision{Float64, Float32} {
		for _, tc := range encoderShapes() {
			cfg := tc.cfg
			cfg.Precision = prec
			enc, x, g := randomEncoder(t, cfg, 5)
			for _, n := range []int{1, 5} {
				xs, gs := x[:n*enc.InputLen()], g[:n*enc.OutputLen()]
				y := make([]float64, len(gs))
				require.NoError(t, enc.Forward(y, xs))
				require.NoError(t, enc.Backward(gs))
				name := prec.String() + " " + tc.name
				require.Zero(t, testing.AllocsPerRun(3, func() { _ = enc.Forward(y, xs) }), name, n)
				require.Zero(t, testing.AllocsPerRun(3, func() { _ = enc.Backward(gs) }), name, n)
			}
		}
	}
}

// TestConvEncoderPrecision checks that a one-layer encoder is the same in
// both precisions (its only block is float64), that the further blocks of
// a deeper one are not, and the config's error for an unknown precision.
func TestConvEncoderPrecision(t *testing.T) {
	cfg := ConvEncoderConfig{Height: 9, Width: 8, Channels: 4, Groups: 2, Seed: 21}
	want, _ := encoderDigest(t, cfg)
	cfg.Precision = Float32
	got, _ := encoderDigest(t, cfg)
	require.Equal(t, want, got)
	cfg.Layers = 2
	got, _ = encoderDigest(t, cfg)
	cfg.Precision = Float64
	want, _ = encoderDigest(t, cfg)
	require.NotEqual(t, want, got)

	_, err := NewConvEncoder(ConvEncoderConfig{Channels: 4, Layers: 2, Precision: 7})
	require.ErrorContains(t, err, "ConvEncoderConfig.Precision")
}
