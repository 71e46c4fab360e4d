package layers

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/deqgo/deq/internal/blasimpl"
	"github.com/deqgo/deq/solver"
)

// Conv benchmark shape: the peer's MNIST cell, a batch of 64 examples of
// 48 channels of 14×14 pixels; the stochastic cell has 8 kernels and
// samples 2. The conv benchmarks install the BLAS that deq's command uses
// (blasimpl.Use: OpenBLAS with -tags netlib, as make bin/deq builds it;
// gonum's pure Go otherwise), for themselves and the benchmarks that run
// after them.
const (
	benchConvBatch    = 64
	benchConvChannels = 48
	benchConvSide     = 14
	benchConvKernels  = 8
	benchConvSample   = 2
)

// benchConvFlops is the multiply–add count, doubled, of one 3×3
// convolution of the whole benchmark batch: 2·C·9C·HW·n.
const benchConvFlops = 2 * benchConvChannels * 9 * benchConvChannels * benchConvSide * benchConvSide * benchConvBatch

// benchConv times one evaluator operation ("eval", "vjp-hidden" or "vjp")
// of a Conv cell with the given number of kernels and sample size (0:
// exact) on the benchmark batch, and reports GFLOP/s counting convs
// convolutions of the batch per operation.
func benchConv(b *testing.B, cfg ConvConfig, op string, size int, convs float64) {
	blasimpl.Use()
	cfg.Channels, cfg.Height, cfg.Width, cfg.Seed = benchConvChannels, benchConvSide, benchConvSide, 1
	c, err := NewConv(cfg)
	if err != nil {
		b.Fatal(err)
	}
	benchOpN(b, c, benchConvBatch, op, size)
	b.ReportMetric(convs*benchConvFlops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkConvEval(b *testing.B) { benchConv(b, ConvConfig{}, "eval", 0, 1) }

// BenchmarkConvVJPHidden repeats the VJP at one point, as the adjoint solve
// of implicit differentiation does: every call after the first reuses the
// forward pass, so it counts one convolution.
func BenchmarkConvVJPHidden(b *testing.B) { benchConv(b, ConvConfig{}, "vjp-hidden", 0, 1) }

// BenchmarkConvVJPHiddenNewPoint alternates between two points, so that
// every call computes the forward pass too (two convolutions).
func BenchmarkConvVJPHiddenNewPoint(b *testing.B) {
	blasimpl.Use()
	c, err := NewConv(ConvConfig{Channels: benchConvChannels, Height: benchConvSide, Width: benchConvSide, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	e, err := c.Evaluator(benchConvBatch)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if err := e.SetInput(randVec(rng, benchConvBatch*c.Shape().InputLen(), 1)); err != nil {
		b.Fatal(err)
	}
	zs := [2][]float64{randVec(rng, e.Len(), 1), randVec(rng, e.Len(), 1)}
	g, dst := randVec(rng, e.Len(), 1), make([]float64, e.Len())
	s := solver.Sample{Seed: 1, Size: 1}
	if _, err := e.VJPHidden(dst, zs[1], g, s); err != nil { // allocate the VJP scratch
		b.Fatal(err)
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.VJPHidden(dst, zs[i%2], g, s); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(2*benchConvFlops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkConvVJP repeats the full VJP (with the state's cotangent) at one
// point: after the first call it reuses the forward pass and counts two
// convolutions (the weight gradient and the transposed convolution), as do
// BenchmarkConvVJPGroupNorm and, per sampled kernel, the sampled
// BenchmarkConvVJPHiddenSampled one (its sample is the same every call).
func BenchmarkConvVJP(b *testing.B) { benchConv(b, ConvConfig{}, "vjp", 0, 2) }
func BenchmarkConvEvalFloat32(b *testing.B) {
	benchConv(b, ConvConfig{Precision: Float32}, "eval", 0, 1)
}
func BenchmarkConvVJPHiddenFloat32(b *testing.B) {
	benchConv(b, ConvConfig{Precision: Float32}, "vjp-hidden", 0, 1)
}
func BenchmarkConvVJPFloat32(b *testing.B) { benchConv(b, ConvConfig{Precision: Float32}, "vjp", 0, 2) }

// BenchmarkConvEvalDefault and BenchmarkConvVJPDefault time the cell of
// deq train --cell conv at its defaults: GroupNorm of gcd(48, 8) = 8
// groups, float32 products.
func BenchmarkConvEvalDefault(b *testing.B) {
	benchConv(b, ConvConfig{Groups: 8, Precision: Float32}, "eval", 0, 1)
}
func BenchmarkConvVJPDefault(b *testing.B) {
	benchConv(b, ConvConfig{Groups: 8, Precision: Float32}, "vjp", 0, 2)
}
func BenchmarkConvEvalGroupNorm(b *testing.B) {
	benchConv(b, ConvConfig{Groups: 4}, "eval", 0, 1)
}
func BenchmarkConvVJPGroupNorm(b *testing.B) { benchConv(b, ConvConfig{Groups: 4}, "vjp", 0, 2) }
func BenchmarkConvEvalSampled(b *testing.B) {
	benchConv(b, ConvConfig{Kernels: benchConvKernels}, "eval", benchConvSample, benchConvSample)
}
func BenchmarkConvVJPHiddenSampled(b *testing.B) {
	benchConv(b, ConvConfig{Kernels: benchConvKernels}, "vjp-hidden", benchConvSample, benchConvSample)
}

// BenchmarkConvGemmReference is the same-shape matrix multiply as one
// blas64.Gemm (OpenBLAS's with -tags netlib, on one thread unless
// OPENBLAS_NUM_THREADS says otherwise; gonum's parallel one otherwise):
// C×9C kernels times 9C×(n·HW) columns, the work of one convolution of the
// batch.
func BenchmarkConvGemmReference(b *testing.B) {
	blasimpl.Use()
	const m, k, n = benchConvChannels, 9 * benchConvChannels, benchConvSide * benchConvSide * benchConvBatch
	rng := rand.New(rand.NewPCG(1, 2))
	a := blas64.General{Rows: m, Cols: k, Stride: k, Data: randVec(rng, m*k, 1)}
	x := blas64.General{Rows: k, Cols: n, Stride: n, Data: randVec(rng, k*n, 1)}
	c := blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)}
	b.ReportAllocs()
	for b.Loop() {
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, x, 0, c)
	}
	b.ReportMetric(benchConvFlops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkConvGemmReference32 is BenchmarkConvGemmReference in single
// precision (blas32.Gemm): the rate of one float32 product of a
// convolution's shape, on OpenBLAS's threads (one unless
// OPENBLAS_NUM_THREADS is set) with -tags netlib.
func BenchmarkConvGemmReference32(b *testing.B) {
	blasimpl.Use()
	const m, k, n = benchConvChannels, 9 * benchConvChannels, benchConvSide * benchConvSide * benchConvBatch
	rng := rand.New(rand.NewPCG(1, 2))
	f32 := func(v []float64) []float32 {
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out
	}
	a := blas32.General{Rows: m, Cols: k, Stride: k, Data: f32(randVec(rng, m*k, 1))}
	x := blas32.General{Rows: k, Cols: n, Stride: n, Data: f32(randVec(rng, k*n, 1))}
	c := blas32.General{Rows: m, Cols: n, Stride: n, Data: make([]float32, m*n)}
	b.ReportAllocs()
	for b.Loop() {
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, x, 0, c)
	}
	b.ReportMetric(benchConvFlops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkConvEncoderForward(b *testing.B)  { benchConvEncoder(b, ConvEncoderConfig{}, false) }
func BenchmarkConvEncoderBackward(b *testing.B) { benchConvEncoder(b, ConvEncoderConfig{}, true) }

// BenchmarkConvEncoder3LayersForward and BenchmarkConvEncoder3LayersBackward
// time the encoder of --encoder-layers 3: the stride-2 block, then two
// 3×3 48→48 blocks at 14×14.
func BenchmarkConvEncoder3LayersForward(b *testing.B) {
	benchConvEncoder(b, ConvEncoderConfig{Layers: 3}, false)
}
func BenchmarkConvEncoder3LayersBackward(b *testing.B) {
	benchConvEncoder(b, ConvEncoderConfig{Layers: 3}, true)
}
func BenchmarkConvEncoder3LayersForwardFloat32(b *testing.B) {
	benchConvEncoder(b, ConvEncoderConfig{Layers: 3, Precision: Float32}, false)
}
func BenchmarkConvEncoder3LayersBackwardFloat32(b *testing.B) {
	benchConvEncoder(b, ConvEncoderConfig{Layers: 3, Precision: Float32}, true)
}

// benchConvEncoder times the 1×28×28 → 48×14×14 encoder of cfg (its
// Layers and Precision) with GroupNorm on the benchmark batch.
func benchConvEncoder(b *testing.B, cfg ConvEncoderConfig, backward bool) {
	blasimpl.Use()
	cfg.Channels, cfg.Groups, cfg.Seed = benchConvChannels, 4, 1
	enc, err := NewConvEncoder(cfg)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := randVec(rng, benchConvBatch*enc.InputLen(), 1)
	y := make([]float64, benchConvBatch*enc.OutputLen())
	if err := enc.Forward(y, x); err != nil {
		b.Fatal(err)
	}
	if backward { // the scratch of the first Backward
		if err := enc.Backward(y); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if backward {
			err = enc.Backward(y)
		} else {
			err = enc.Forward(y, x)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
