package deq

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// benchLayer times a forward pass (and a backward pass unless backward is
// negative) of a 256-example batch through a DEQ over a 128-hidden,
// 128-input dense cell with γ̄ = 0.8, Picard solves to a relative tolerance
// of 1e-4, and reports the forward iterations.
func benchLayer(b *testing.B, backward Backward) { benchLayerWith(b, backward, nil) }

// benchLayerWith is benchLayer with method m (nil: the default) as the
// forward and adjoint solver.
func benchLayerWith(b *testing.B, backward Backward, m solver.Method) {
	cell := must(layers.NewDense(layers.DenseConfig{Hidden: 128, Input: 128, Lipschitz: layers.Constraint{Gamma: 0.8}, Seed: 1}))
	rel := solver.Settings{Tol: 1e-4, Relative: true, NoTrace: true}
	l := must(New(cell, &Settings{Backward: max(backward, 0), Forward: m, Adjoint: m, ForwardSettings: rel, AdjointSettings: rel}))
	rng := rand.New(rand.NewPCG(1, 1))
	x := randVec(rng, 256*128, 1)
	gz := randVec(rng, 256*128, 1)
	dx := make([]float64, len(x))
	ctx := context.Background()
	iters := 0
	for b.Loop() {
		sol, err := l.Forward(ctx, x)
		if err != nil {
			b.Fatal(err)
		}
		iters = sol.Result.Stats.Iterations
		if backward >= 0 {
			if _, err := l.Backward(ctx, sol, gz, dx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(iters), "fwd-iters")
}

func BenchmarkLayerForward(b *testing.B)      { benchLayer(b, -1) }
func BenchmarkLayerImplicit(b *testing.B)     { benchLayer(b, Implicit) }
func BenchmarkLayerJacobianFree(b *testing.B) { benchLayer(b, JacobianFree) }
func BenchmarkLayerPhantom(b *testing.B)      { benchLayer(b, Phantom) }

// BenchmarkLayerBroydenImplicit is BenchmarkLayerImplicit with Broyden
// forward and adjoint solves, as in training; B/op shows what a batch's
// solves allocate once their workspace has grown.
func BenchmarkLayerBroydenImplicit(b *testing.B) { benchLayerWith(b, Implicit, solver.Broyden{}) }

// benchLayerFloat32 times the forward pass of BenchmarkLayerForward's
// batch through the same dense cell with float32 products, Broyden to an
// absolute 1e-3, certified on the cell's float64 map or not (the
// difference is the float64 stage's cost), the batch solved in split
// concurrent parts (Settings.Split; 0: one solve).
func benchLayerFloat32(b *testing.B, certify bool, split int) {
	cell := must(layers.NewDense(layers.DenseConfig{Hidden: 128, Input: 128, Lipschitz: layers.Constraint{Gamma: 0.8}, Precision: layers.Float32, Seed: 1}))
	l := must(New(cell, &Settings{Forward: solver.Broyden{}, ForwardSettings: solver.Settings{Tol: 1e-3, NoTrace: true}, CertifyFloat64: certify, Split: split}))
	x := randVec(rand.New(rand.NewPCG(1, 1)), 256*128, 1)
	calls := int64(0)
	for b.Loop() {
		sol, err := l.Forward(context.Background(), x)
		if err != nil {
			b.Fatal(err)
		}
		calls = sol.Result.Stats.Calls
	}
	b.ReportMetric(float64(calls), "calls")
}

func BenchmarkLayerForwardFloat32(b *testing.B)          { benchLayerFloat32(b, false, 0) }
func BenchmarkLayerForwardFloat32Certified(b *testing.B) { benchLayerFloat32(b, true, 0) }

// BenchmarkLayerForwardFloat32CertifiedSplit2 is the certified forward
// pass with the batch solved as two concurrent parts of 128 examples.
func BenchmarkLayerForwardFloat32CertifiedSplit2(b *testing.B) { benchLayerFloat32(b, true, 2) }

// benchBackwardFloat32 times the implicit backward pass (Broyden's adjoint
// solve to a relative 1e-3 and the parameter gradients) of
// benchLayerFloat32's batch at its certified fixed point, the batch solved
// in split parts (0: one solve).
func benchBackwardFloat32(b *testing.B, split int) {
	cell := must(layers.NewDense(layers.DenseConfig{Hidden: 128, Input: 128, Lipschitz: layers.Constraint{Gamma: 0.8}, Precision: layers.Float32, Seed: 1}))
	l := must(New(cell, &Settings{Forward: solver.Broyden{}, ForwardSettings: solver.Settings{Tol: 1e-3, NoTrace: true}, CertifyFloat64: true,
		Backward: Implicit, Adjoint: solver.Broyden{}, AdjointSettings: solver.Settings{Tol: 1e-3, Relative: true, NoTrace: true}, Split: split}))
	rng := rand.New(rand.NewPCG(1, 1))
	x := randVec(rng, 256*128, 1)
	gz := randVec(rng, 256*128, 1)
	dx := make([]float64, len(x))
	ctx := context.Background()
	sol, err := l.Forward(ctx, x)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := l.Backward(ctx, sol, gz, dx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLayerBackwardFloat32(b *testing.B) { benchBackwardFloat32(b, 0) }

// BenchmarkLayerBackwardFloat32Split2 is the backward pass with the batch
// in two parts: concurrent adjoint solves, then the parts' products of
// the parameter gradients concurrently (layers.SplitVJPer) and their
// additions in order.
func BenchmarkLayerBackwardFloat32Split2(b *testing.B) { benchBackwardFloat32(b, 2) }

// redundantMeanField returns a tanh MeanField cell of m units whose units
// are copies of its first prototypes units plus noise of relative size
// 0.1, then projected: the "redundant" cells of the regime map, whose
// single-term variance is small, as trained units tend to make it.
func redundantMeanField(hidden, m, prototypes int, seed uint64) *layers.MeanField {
	c := must(layers.NewMeanField(layers.MeanFieldConfig{Hidden: hidden, Input: hidden, Units: m, Activation: layers.Tanh, Seed: seed}))
	rng := rand.New(rand.NewPCG(seed, 7))
	ps := c.Params() // U, b, W (hidden×m), c (1×m), V (m×hidden)
	w, cb, v := ps[2].Data(), ps[3].Data(), ps[4].Data()
	sd := 0.1 / math.Sqrt(float64(hidden))
	for u := prototypes; u < m; u++ {
		q := u % prototypes
		cb[u] = cb[q] + 0.1*rng.NormFloat64()
		for i := range hidden {
			w[i*m+u] = w[i*m+q] + sd*rng.NormFloat64()
			v[u*hidden+i] = v[q*hidden+i] + sd*rng.NormFloat64()
		}
	}
	if err := c.Project(); err != nil {
		panic(err)
	}
	return c
}

// benchBackwardSampled times the implicit backward pass of a 128-example
// batch through a redundant tanh MeanField cell (hidden 64, 32 prototype
// units) for each number of units: Broyden on the exact adjoint against
// GrowingBatch and VR-GHAL on the sampled one. Every adjoint solve stops at
// the absolute tolerance 1e-3·‖∂L/∂z*‖ (the largest per-example ℓ2 norm of
// the right-hand side) and pays its exact certificate. It reports the
// backward's term evaluations (certificate and final VJP included), the
// same in exact-average equivalents (divided by M), the adjoint solve's
// own share of them, and the certificate's bound relative to ‖∂L/∂z*‖.
func benchBackwardSampled(b *testing.B, units []int) {
	const hidden, n = 64, 128
	ctx := context.Background()
	for _, m := range units {
		cell := redundantMeanField(hidden, m, 32, 1)
		gamma := cell.Gamma()
		rng := rand.New(rand.NewPCG(2, 2))
		x := randVec(rng, n*hidden, 0.1)
		fwd := must(New(cell, &Settings{Forward: solver.Broyden{}, ForwardSettings: solver.Settings{Tol: 1e-10, NoTrace: true}}))
		sol, err := fwd.Forward(ctx, x)
		if err != nil {
			b.Fatal(err)
		}
		gz := randVec(rng, len(sol.Z), 1)
		scale := 0.0
		for i := range n {
			scale = max(scale, floats.Norm(gz[i*hidden:(i+1)*hidden], 2))
		}
		dx := make([]float64, len(x))
		for _, mc := range []struct {
			name   string
			method solver.Method
			oracle OracleMode
		}{
			{"broyden-exact", solver.Broyden{}, Exact},
			{"growing-batch-sampled", solver.GrowingBatch{Gamma: gamma}, Sampled},
			{"vrghal-sampled", solver.VRGHAL{Gamma: gamma}, Sampled},
		} {
			b.Run(fmt.Sprintf("M=%d/%s", m, mc.name), func(b *testing.B) {
				l := must(New(cell, &Settings{Adjoint: mc.method, AdjointOracle: mc.oracle,
					AdjointSettings: solver.Settings{Tol: 1e-3 * scale, NoTrace: true, Seed: 3}}))
				var st *BackwardStats
				for b.Loop() {
					if st, err = l.Backward(ctx, sol, gz, dx); err != nil {
						b.Fatal(err)
					}
				}
				layers.ZeroGrads(cell.Params())
				b.ReportMetric(float64(st.TermEvals), "term-evals/op")
				b.ReportMetric(float64(st.TermEvals)/float64(m), "exact-equiv/op")
				b.ReportMetric(float64(st.Adjoint.Stats.Samples)/float64(m), "solve-exact-equiv/op")
				b.ReportMetric(st.Adjoint.Certificate.Bound/scale, "cert-rel")
			})
		}
	}
}

func BenchmarkBackwardSampled(b *testing.B) { benchBackwardSampled(b, []int{4096, 65536}) }
