package datasets

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// remote describes where a known data set is published and the published
// MD5 checksums of its four gzipped StandardFiles, in order.
type remote struct {
	baseURL string
	md5     [4]string
}

// remoteOf returns the published location of a known data set. The MD5
// checksums are those the data sets' authors and torchvision publish; they
// could not be checked against the published files offline (this module was
// written without internet access; Debian's Fashion-MNIST files are
// recompressed and have other checksums), hence Options.Download.Checksums.
func remoteOf(name string) (remote, bool) {
	switch name {
	case MNIST:
		return remote{
			// The torchvision mirror: yann.lecun.com often refuses downloads.
			baseURL: "https://ossci-datasets.s3.amazonaws.com/mnist/",
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
	}
	return remote{}, false
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

// Fetch downloads the files of the known data set name (MNIST, FashionMNIST
// or KMNIST) that are missing from Locate.CacheDir/name, from
// opts.Download.BaseURL or the published mirror, and returns that
// directory. Each file is streamed into a temporary file in the same
// directory, checked against its checksum (opts.Download.Checksums, else
// the published MD5), synced and only then renamed into place: an interrupted, failed or mismatching download leaves no
// file behind. Files already present are not checked again.
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
		return "", fmt.Errorf("datasets: cannot download %q (known: %s, %s, %s)", name, MNIST, FashionMNIST, KMNIST)
	}
	sums := make(map[string]checksum)
	for i, f := range StandardFiles {
		c, err := parseChecksum(rem.md5[i])
		if err != nil {
			panic("datasets: bad embedded checksum: " + err.Error())
		}
		sums[f+".gz"] = c
	}
	for k, v := range o.Download.Checksums {
		if _, ok := sums[k]; !ok {
			return "", fmt.Errorf("datasets: Options.Download.Checksums: %q is not one of the %s files", k, name)
		}
		c, err := parseChecksum(v)
		if err != nil {
			return "", fmt.Errorf("datasets: Options.Download.Checksums[%q]: %v", k, err)
		}
		sums[k] = c
	}
	base := o.Download.BaseURL
	if base == "" {
		base = rem.baseURL
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	client := cmp.Or(o.Download.Client, http.DefaultClient)
	maxBytes := cmp.Or(o.Download.MaxBytes, DefaultMaxDownloadBytes)
	cache, err := o.cacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("datasets: %w", err)
	}
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
func download(ctx context.Context, client *http.Client, url, dir, file string, sum checksum, maxBytes int64) (err error) {
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
	tmp, err := os.CreateTemp(dir, "."+file+".*.part")
	if err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				tmp.Close()
			}
			os.Remove(tmp.Name())
		}
	}()
	h := sum.new()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return fmt.Errorf("datasets: downloading %s: %w", file, err)
	}
	if n > maxBytes {
		return fmt.Errorf("datasets: downloading %s: larger than the %d-byte limit", file, maxBytes)
	}
	if got := h.Sum(nil); !bytes.Equal(got, sum.want) {
		return fmt.Errorf("datasets: downloading %s from %s: %s checksum %x, want %x; file discarded",
			file, url, sum.algo, got, sum.want)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	closed = true
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, file)); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	// Make the rename durable; directories cannot be synced everywhere, so
	// a failure here is not an error.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
