package datasets_test

import (
	"context"
	"fmt"
	"log"

	"github.com/deqgo/deq/datasets"
)

// Generate three synthetic digits and inspect them.
func ExampleSynthetic() {
	d, err := datasets.Synthetic(context.Background(), 3, 42)
	if err != nil {
		log.Fatal(err)
	}
	for i := 0; i < d.Len(); i++ {
		img := d.Image(i)
		lo, hi := img[0], img[0]
		for _, v := range img {
			lo, hi = min(lo, v), max(hi, v)
		}
		fmt.Printf("image %d: label %d, %d×%d = %d pixels, all in [0, 1]: %v\n",
			i, d.Y[i], d.Rows, d.Cols, len(img), lo >= 0 && hi <= 1)
	}
	// Output:
	// image 0: label 5, 28×28 = 784 pixels, all in [0, 1]: true
	// image 1: label 5, 28×28 = 784 pixels, all in [0, 1]: true
	// image 2: label 0, 28×28 = 784 pixels, all in [0, 1]: true
}

// Open the synthetic digits with a validation split and per-pixel
// normalisation, then run one epoch of shuffled minibatches.
func ExampleOpen() {
	data, err := datasets.Open(context.Background(), datasets.SyntheticName, &datasets.Options{
		Seed:      1,
		Synthetic: datasets.SyntheticOptions{Train: 1000, Test: 200},
		Sizes:     datasets.SizeOptions{Validation: 100},
		Normalize: datasets.NormPerPixel,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(data.Train.Len(), data.Validation.Len(), data.Test.Len())

	bt, err := datasets.NewBatcher(data.Train, 128, &datasets.BatchOptions{Shuffle: true, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	bt.Reset(0) // epoch 0
	for bt.Next() {
		b := bt.Batch() // b.X, b.OneHot: views of storage reused by the next batch
		r, c := b.X.Dims()
		_, k := b.OneHot.Dims()
		fmt.Printf("X %d×%d, one-hot %d×%d, first label %d\n", r, c, b.Len(), k, b.Labels[0])
	}
	// Output:
	// 900 100 200
	// X 128×784, one-hot 128×10, first label 6
	// X 128×784, one-hot 128×10, first label 5
	// X 128×784, one-hot 128×10, first label 7
	// X 128×784, one-hot 128×10, first label 2
	// X 128×784, one-hot 128×10, first label 3
	// X 128×784, one-hot 128×10, first label 8
	// X 128×784, one-hot 128×10, first label 9
	// X 4×784, one-hot 4×10, first label 3
}
