package deq

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// benchLayer times a forward pass (and a backward pass unless backward is
// negative) of a 256-example batch through a DEQ over a 128-hidden,
// 128-input dense cell with γ̄ = 0.8, Picard solves to a relative tolerance
// of 1e-4, and reports the forward iterations.
func benchLayer(b *testing.B, backward Backward) {
	cell := must(layers.NewDense(layers.DenseConfig{Hidden: 128, Input: 128, Lipschitz: layers.Constraint{Gamma: 0.8}, Seed: 1}))
	rel := solver.Settings{Tol: 1e-4, Relative: true, NoTrace: true}
	l := must(New(cell, &Settings{Backward: max(backward, 0), ForwardSettings: rel, AdjointSettings: rel}))
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
