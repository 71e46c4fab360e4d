// Package datasets reads, discovers, downloads and synthesises MNIST-style
// image classification data and delivers it in batches.
//
// Open loads a training and a test set by name, with an optional validation
// split and normalisation (Options): "fashion-mnist", "mnist" (the official
// split, fetched through the Go module proxy), "kmnist" and "mnist-10k"
// where they are installed or cached, "synthetic" for digits
// generated from the Go fonts, "" for MNIST if installed and the synthetic
// digits otherwise, or a directory holding the four StandardFiles. Nothing
// is downloaded unless Options.Download.Enabled (or Fetch) asks for it, and
// every download is checked against its checksum and written atomically.
//
//	data, err := datasets.Open(ctx, datasets.SyntheticName, &datasets.Options{
//		Seed:      1,
//		Sizes:     datasets.SizeOptions{Validation: 1000},
//		Normalize: datasets.NormPerPixel,
//	})
//	bt, err := datasets.NewBatcher(data.Train, 128, &datasets.BatchOptions{Shuffle: true, Seed: 1})
//	for bt.Reset(epoch); bt.Next(); {
//		b := bt.Batch() // b.X, b.OneHot: gonum matrices reused by the next batch
//	}
//
// A Dataset holds images as float64 rows scaled to [0, 1] and their
// labels; Split, Head and Subset select images, and a Normalizer fitted on
// the training set standardises every set. A Batcher delivers shuffled
// minibatches without allocating; a Shifter and a Warper augment a batch in
// place by random translations, rotations and scalings. ReadImages and
// ReadLabels decode IDX files, raw or gzipped, and refuse anything
// malformed with an error matching ErrFormat. Synthetic and Synthesizer
// generate digits reproducibly: image i of seed s depends on (s, i) alone.
// A Dataset filled by its caller must hold finite pixels: Dataset.Validate,
// which NewBatcher, FitNormalizer and Normalizer.Apply call, refuses a NaN
// or ±Inf with an error naming the pixel and wrapping solver.ErrNonFinite.
//
// Preprocess turns any image.Image (a digit a user drew or photographed)
// into the 28×28 input of a model trained on MNIST-style digits, normalised
// as MNIST's digits were. Corrupt applies one of 19 corruptions to every
// image of a data set, deterministically from a seed: the fifteen of
// MNIST-C (Mu and Gilmer, 2019) with the parameters of its published
// generator (MNISTCCorruptions), and four extras; Corruptions and
// CorruptionNames list them.
//
// In the repository, docs/datasets.md describes where each data set is
// found, the downloads and their checks, MNIST through the Go toolchain,
// the mnist-10k subset and its split, how the synthetic digits are made and
// how hard they are, pictures, corruptions and the batching.
package datasets
