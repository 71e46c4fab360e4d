package datasets

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// isolated returns Options that see no system directory, a fresh cache
// directory and no environment.
func isolated(t *testing.T) *Options {
	return &Options{
		CacheDir:   t.TempDir(),
		SystemDirs: []string{},
		Getenv:     func(string) string { return "" },
	}
}

func TestDefaultCacheDir(t *testing.T) {
	d, err := DefaultCacheDir(func(k string) string {
		if k == CacheDirEnv {
			return "/override/cache"
		}
		return ""
	})
	if err != nil || d != "/override/cache" {
		t.Errorf("with %s set: %q, %v", CacheDirEnv, d, err)
	}
	d, err = DefaultCacheDir(func(string) string { return "" })
	base, berr := os.UserCacheDir()
	switch {
	case berr != nil && err == nil:
		t.Errorf("no user cache dir (%v), yet DefaultCacheDir returned %q", berr, d)
	case berr == nil && (err != nil || d != filepath.Join(base, "deq")):
		t.Errorf("DefaultCacheDir = %q, %v; want %q", d, err, filepath.Join(base, "deq"))
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
	if err != nil {
		t.Fatal(err)
	}
	if data.Dir != dir || data.Train.Len() != 12 || data.Test.Len() != 6 || data.Validation != nil || data.Normalizer != nil {
		t.Fatalf("got %+v", data)
	}
	for i := 0; i < 12; i++ {
		for p, v := range data.Train.Image(i) {
			if want := float64(byte(7*i+p)) / 255; v != want {
				t.Fatalf("train image %d pixel %d = %v, want %v", i, p, v, want)
			}
		}
		if data.Train.Y[i] != i%10 {
			t.Fatalf("train label %d = %d", i, data.Train.Y[i])
		}
	}

	o := isolated(t)
	o.TrainLimit, o.TestLimit, o.Validation, o.Normalize, o.Seed = 10, 4, 3, NormGlobal, 2
	data, err = Open(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if data.Train.Len() != 7 || data.Validation.Len() != 3 || data.Test.Len() != 4 {
		t.Fatalf("sizes %d/%d/%d, want 7/3/4", data.Train.Len(), data.Validation.Len(), data.Test.Len())
	}
	// Global normalisation fitted on Train leaves Train with mean 0, std 1.
	var s, ss float64
	for _, v := range data.Train.X {
		s += v
		ss += v * v
	}
	n := float64(len(data.Train.X))
	if math.Abs(s/n) > 1e-12 || math.Abs(ss/n-1) > 1e-12 {
		t.Errorf("normalised training pixels: mean %v, mean square %v; want 0, 1", s/n, ss/n)
	}
	// The test set is shifted with the same statistics.
	if got, want := data.Test.X[0], (0-data.Normalizer.Mean[0])/data.Normalizer.Std[0]; got != want {
		t.Errorf("test pixel 0 = %v, want %v", got, want)
	}
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
	if data, err := Open(ctx, write(func(map[string][]byte) {}), isolated(t)); err != nil || data.Train.Dim() != 15 {
		t.Errorf("5×3 images: %v", err)
	}
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
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("error %v, want one containing %q (is %v)", err, tc.want, tc.is)
			}
		})
	}
	if _, err := Open(ctx, "no-such-data-set", isolated(t)); err == nil || !strings.Contains(err.Error(), "neither a data set") {
		t.Errorf("unknown spec: %v", err)
	}
	o := isolated(t)
	o.TrainLimit = -1
	if _, err := Open(ctx, SyntheticName, o); err == nil || !strings.Contains(err.Error(), "TrainLimit") {
		t.Errorf("negative limit: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Open(cctx, write(func(map[string][]byte) {}), isolated(t)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestOpenNamed(t *testing.T) {
	ctx := context.Background()
	sys := t.TempDir()
	o := isolated(t)
	o.SystemDirs = []string{filepath.Join(sys, "empty"), sys}
	o.SyntheticTrain, o.SyntheticTest = 30, 10

	// Nothing installed: the default is synthetic; named sets are missing.
	data, err := Open(ctx, "", o)
	if err != nil || data.Name != SyntheticName || data.Train.Len() != 30 {
		t.Fatalf("default with nothing installed: %v, %v", data, err)
	}
	_, err = Open(ctx, KMNIST, o)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "Download") {
		t.Errorf("kmnist not installed: %v", err)
	}

	writeFiles(t, filepath.Join(sys, FashionMNIST), standardSet(t, 8, 4, 28, 28))
	writeFiles(t, filepath.Join(o.CacheDir, MNIST), standardSet(t, 9, 5, 28, 28))
	for _, tc := range []struct {
		spec, name, dir string
		ntrain          int
	}{
		{FashionMNIST, FashionMNIST, filepath.Join(sys, FashionMNIST), 8},
		{MNIST, MNIST, filepath.Join(o.CacheDir, MNIST), 9},
		{"", MNIST, filepath.Join(o.CacheDir, MNIST), 9},
	} {
		data, err := Open(ctx, tc.spec, o)
		if err != nil {
			t.Fatalf("%q: %v", tc.spec, err)
		}
		if data.Name != tc.name || data.Dir != tc.dir || data.Train.Len() != tc.ntrain || data.Train.Name != tc.name+"/train" {
			t.Errorf("%q: got %s from %s with %d training images (%s), want %s from %s with %d",
				tc.spec, data.Name, data.Dir, data.Train.Len(), data.Train.Name, tc.name, tc.dir, tc.ntrain)
		}
	}
	// A named set must be 28×28.
	writeFiles(t, filepath.Join(sys, KMNIST), standardSet(t, 4, 4, 5, 5))
	if _, err := Open(ctx, KMNIST, o); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "5 rows, want 28") {
		t.Errorf("5×5 kmnist: %v", err)
	}
	if _, err := Find("cifar", o); err == nil {
		t.Error("Find of an unknown name succeeded")
	}
}

func TestOpenSynthetic(t *testing.T) {
	ctx := context.Background()
	o := isolated(t)
	o.SyntheticTrain, o.SyntheticTest, o.Seed, o.TestLimit = 50, 40, 3, 20
	data, err := Open(ctx, SyntheticName, o)
	if err != nil {
		t.Fatal(err)
	}
	train, _ := Synthetic(ctx, 50, 3)
	s, _ := NewSynthesizer(nil)
	test, _ := s.Generate(ctx, 20, SyntheticTestSeed(3))
	if !slices.Equal(data.Train.X, train.X) || !slices.Equal(data.Test.X, test.X) || !slices.Equal(data.Test.Y, test.Y) {
		t.Error("Open(synthetic) differs from Generate with the documented seeds")
	}
	if data.Dir != "" || data.Train.Name != "synthetic/train" || data.Test.Name != "synthetic/test" {
		t.Errorf("names %q %q, dir %q", data.Train.Name, data.Test.Name, data.Dir)
	}
	o.Jitter = &Jitter{Rotation: -3}
	if _, err := Open(ctx, SyntheticName, o); err == nil {
		t.Error("invalid jitter accepted")
	}
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
	if err != nil {
		t.Fatal(err)
	}
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
		o.BaseURL, o.Client, o.Checksums = ts.URL, ts.Client(), checksums
		return o
	}

	t.Run("success", func(t *testing.T) {
		o := opts()
		// Never implicit: without Download, Open fails and asks nothing.
		if _, err := Open(ctx, MNIST, o); !errors.Is(err, fs.ErrNotExist) || srv.requests != 0 {
			t.Fatalf("without Download: %v after %d requests", err, srv.requests)
		}
		o.Download = true
		var logged []string
		o.Logf = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
		data, err := Open(ctx, MNIST, o)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(o.CacheDir, MNIST)
		if data.Dir != dir || data.Train.Len() != 20 || data.Test.Len() != 10 || len(logged) != 4 {
			t.Errorf("loaded %d/%d images from %s, %d log lines", data.Train.Len(), data.Test.Len(), data.Dir, len(logged))
		}
		got := dirEntries(t, dir)
		want := []string{StandardFiles[2] + ".gz", StandardFiles[3] + ".gz", StandardFiles[0] + ".gz", StandardFiles[1] + ".gz"}
		if slices.Sort(want); !slices.Equal(got, want) {
			t.Errorf("cache holds %v, want %v", got, want)
		}
		before := srv.requests
		if _, err := Open(ctx, MNIST, o); err != nil || srv.requests != before {
			t.Errorf("second Open: %v after %d new requests", err, srv.requests-before)
		}
	})

	t.Run("published checksum mismatch", func(t *testing.T) {
		o := opts()
		o.Checksums = nil // the served files are not the published MNIST
		_, err := Fetch(ctx, MNIST, o)
		if err == nil || !strings.Contains(err.Error(), "md5 checksum") || !strings.Contains(err.Error(), "want f68b3c2dcbeaaa9fbdd348bbdeb94873") {
			t.Errorf("error %v, want an MD5 mismatch against the published checksum", err)
		}
		if e := dirEntries(t, filepath.Join(o.CacheDir, MNIST)); len(e) != 0 {
			t.Errorf("refused download left %v", e)
		}
	})

	t.Run("override mismatch", func(t *testing.T) {
		o := opts()
		o.Checksums = map[string]string{StandardFiles[1] + ".gz": "sha256:" + strings.Repeat("0", 64)}
		for k, v := range checksums {
			if k != StandardFiles[1]+".gz" {
				o.Checksums[k] = v
			}
		}
		_, err := Fetch(ctx, MNIST, o)
		if err == nil || !strings.Contains(err.Error(), "sha256 checksum") || !strings.Contains(err.Error(), StandardFiles[1]) {
			t.Errorf("error %v, want a SHA-256 mismatch of the training labels", err)
		}
		// The training images (verified) stay; nothing else is there.
		if e := dirEntries(t, filepath.Join(o.CacheDir, MNIST)); !slices.Equal(e, []string{StandardFiles[0] + ".gz"}) {
			t.Errorf("cache holds %v, want only the verified training images", e)
		}
		// A later Fetch completes the set, downloading only what is missing.
		o.Checksums = checksums
		before := srv.requests
		if _, err := Fetch(ctx, MNIST, o); err != nil || srv.requests-before != 3 {
			t.Errorf("completing the set: %v after %d requests, want 3", err, srv.requests-before)
		}
	})

	t.Run("server error", func(t *testing.T) {
		o := opts()
		srv.fail = func(w http.ResponseWriter, name string) bool {
			http.Error(w, "broken", http.StatusInternalServerError)
			return true
		}
		defer func() { srv.fail = nil }()
		_, err := Fetch(ctx, MNIST, o)
		if err == nil || !strings.Contains(err.Error(), "500") {
			t.Errorf("error %v, want the 500 status", err)
		}
		if e := dirEntries(t, filepath.Join(o.CacheDir, MNIST)); len(e) != 0 {
			t.Errorf("failed download left %v", e)
		}
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
		if err == nil || !strings.Contains(err.Error(), "downloading "+StandardFiles[0]) {
			t.Errorf("error %v, want a failed download", err)
		}
		if e := dirEntries(t, filepath.Join(o.CacheDir, MNIST)); len(e) != 0 {
			t.Errorf("interrupted download left %v", e)
		}
	})

	t.Run("size limit", func(t *testing.T) {
		o := opts()
		o.MaxDownloadBytes = 100
		if _, err := Fetch(ctx, MNIST, o); err == nil || !strings.Contains(err.Error(), "larger than the 100-byte limit") {
			t.Errorf("error %v, want the size limit", err)
		}
		if e := dirEntries(t, filepath.Join(o.CacheDir, MNIST)); len(e) != 0 {
			t.Errorf("oversized download left %v", e)
		}
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
			o.Checksums = tc.sums
			if _, err := Fetch(ctx, MNIST, o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
			}
		}
		if _, err := Fetch(ctx, SyntheticName, opts()); err == nil {
			t.Error("Fetch(synthetic) succeeded")
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := Fetch(cctx, KMNIST, opts()); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled: %v", err)
		}
	})
}

// TestEmbeddedChecksums checks the form of the published checksums (their
// values cannot be checked offline).
func TestEmbeddedChecksums(t *testing.T) {
	for _, name := range []string{MNIST, FashionMNIST, KMNIST} {
		r, ok := remoteOf(name)
		if !ok || !strings.HasPrefix(r.baseURL, "http") {
			t.Errorf("%s: no remote", name)
		}
		for i, s := range r.md5 {
			if c, err := parseChecksum(s); err != nil || c.algo != "md5" {
				t.Errorf("%s %s: %q: %v", name, StandardFiles[i], s, err)
			}
		}
	}
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
		if err != nil {
			t.Fatal(err)
		}
		labels, err := ReadLabelsFile(filepath.Join(dir, tc.labels), nil)
		if err != nil {
			t.Fatal(err)
		}
		if im.N != tc.n || len(labels) != tc.n {
			t.Errorf("%s: %d images and %d labels, want %d", tc.images, im.N, len(labels), tc.n)
		}
		// Fashion-MNIST is balanced: a tenth of each set per class.
		hist := make([]int, 10)
		for _, l := range labels {
			hist[l]++
		}
		for k, c := range hist {
			if c != tc.n/10 {
				t.Errorf("%s: class %d has %d labels, want %d", tc.labels, k, c, tc.n/10)
			}
		}
	}
	o := isolated(t)
	o.SystemDirs = nil // the default, /usr/share/datasets
	o.TrainLimit, o.TestLimit = 1000, 500
	data, err := Open(context.Background(), FashionMNIST, o)
	if err != nil {
		t.Fatal(err)
	}
	if data.Dir != dir || data.Train.Len() != 1000 || data.Test.Len() != 500 || data.Train.Dim() != 784 {
		t.Errorf("Open: %d/%d images of %d pixels from %s", data.Train.Len(), data.Test.Len(), data.Train.Dim(), data.Dir)
	}
}
