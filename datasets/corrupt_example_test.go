package datasets_test

import (
	"context"
	"fmt"
	"log"

	"github.com/deqgo/deq/datasets"
)

// List the suite's composition and corrupt three synthetic digits with
// each of MNIST-C's corruptions.
func ExampleCorrupt() {
	ctx := context.Background()
	d, err := datasets.Synthetic(ctx, 3, 42)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range datasets.Corruptions() {
		if !c.InMNISTC() {
			fmt.Println("extra:", c)
			continue
		}
		out, err := datasets.Corrupt(ctx, d, c, 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("MNIST-C: %s (%d images)\n", out.Name, out.Len())
	}
	// Output:
	// MNIST-C: synthetic/shot_noise (3 images)
	// MNIST-C: synthetic/impulse_noise (3 images)
	// MNIST-C: synthetic/glass_blur (3 images)
	// MNIST-C: synthetic/motion_blur (3 images)
	// MNIST-C: synthetic/shear (3 images)
	// MNIST-C: synthetic/scale (3 images)
	// MNIST-C: synthetic/rotate (3 images)
	// MNIST-C: synthetic/brightness (3 images)
	// MNIST-C: synthetic/translate (3 images)
	// MNIST-C: synthetic/stripe (3 images)
	// MNIST-C: synthetic/fog (3 images)
	// MNIST-C: synthetic/spatter (3 images)
	// MNIST-C: synthetic/dotted_line (3 images)
	// MNIST-C: synthetic/zigzag (3 images)
	// MNIST-C: synthetic/canny_edges (3 images)
	// extra: gaussian_noise
	// extra: dilate
	// extra: erode
	// extra: thicken
}
