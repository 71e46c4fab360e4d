package train_test

import (
	"context"
	"fmt"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/train"
)

// Example trains a small DEQ classifier on synthetic digits with Broyden's
// method as forward solver and reports what every epoch certifies.
func Example() {
	ctx := context.Background()
	data, err := datasets.Open(ctx, datasets.SyntheticName, &datasets.Options{Seed: 1, Synthetic: datasets.SyntheticOptions{Train: 1024, Test: 200}})
	if err != nil {
		fmt.Println(err)
		return
	}
	broyden, err := solver.MethodSpecOf(solver.Broyden{})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := train.Config{
		Epochs: 3, BatchSize: 64, LR: 3e-3, Seed: 1,
		Model:   train.ModelConfig{Hidden: 32},
		Forward: train.SolverConfig{Method: broyden, Tol: 1e-3},
	}
	t, err := train.New(cfg, data.Train, data.Test, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := t.Run(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range res.Epochs {
		fmt.Printf("epoch %d: %d batches, certified residual ≤ tol on %.0f%% of them, better than chance: %v\n",
			e.Epoch, e.Batches, 100*e.CertMetFrac, e.TestAcc > 0.1)
	}
	// Output:
	// epoch 1: 16 batches, certified residual ≤ tol on 100% of them, better than chance: true
	// epoch 2: 16 batches, certified residual ≤ tol on 100% of them, better than chance: true
	// epoch 3: 16 batches, certified residual ≤ tol on 100% of them, better than chance: true
}
