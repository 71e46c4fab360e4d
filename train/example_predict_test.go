package train_test

import (
	"context"
	"fmt"
	"image"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/train"
)

// ExampleModel_Predict classifies a picture — a digit drawn dark on white,
// four times MNIST's size — with a model trained briefly on synthetic
// digits: datasets.Preprocess normalises it as MNIST's digits were, and
// Predict returns the class, the class probabilities and the forward
// solve's certificate. A trained model would come from train.Load.
func ExampleModel_Predict() {
	ctx := context.Background()
	data, err := datasets.Open(ctx, datasets.SyntheticName, &datasets.Options{Seed: 1, Synthetic: datasets.SyntheticOptions{Train: 512, Test: 64}})
	if err != nil {
		fmt.Println(err)
		return
	}
	t, err := train.New(train.Config{Epochs: 1, BatchSize: 64, LR: 3e-3, Seed: 1, Model: train.ModelConfig{Hidden: 16}}, data.Train, data.Test, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := t.Run(ctx); err != nil {
		fmt.Println(err)
		return
	}
	model := t.Model()

	// The picture: test digit 0 scaled up four times, dark ink on white.
	img := image.NewGray(image.Rect(0, 0, 112, 112))
	for i, v := range data.Test.Image(0) {
		for k := range 16 {
			img.Pix[(4*(i/28)+k/4)*112+4*(i%28)+k%4] = uint8(255 * (1 - v))
		}
	}

	pixels, err := datasets.Preprocess(img, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := model.Predict(ctx, pixels, train.SolverConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	sum := 0.0
	for _, q := range p.Probabilities {
		sum += q
	}
	fmt.Printf("a class among %d: %v; probabilities sum to 1: %v\n", len(p.Probabilities), p.Class >= 0 && p.Class < 10, sum > 0.999999 && sum < 1.000001)
	fmt.Printf("solve %v, certified residual within its tolerance: %v\n", p.Solve.Status, p.Solve.Certificate.Bound <= p.Solve.Tol)
	// Output:
	// a class among 10: true; probabilities sum to 1: true
	// solve Success, certified residual within its tolerance: true
}
