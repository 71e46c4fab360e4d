package datasets

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// IDX magic numbers: two zero bytes, the element type (0x08: unsigned byte)
// and the number of dimensions.
const (
	// MagicImages is the magic number of an IDX image file (idx3-ubyte):
	// unsigned bytes, three dimensions (count, rows, columns).
	MagicImages = 0x00000803
	// MagicLabels is the magic number of an IDX label file (idx1-ubyte):
	// unsigned bytes, one dimension (count).
	MagicLabels = 0x00000801
)

// Defaults used where a ReadOptions field is zero.
const (
	// DefaultMaxBytes bounds the payload an IDX header may declare: 1 GiB,
	// twenty times the largest standard file (47 MB of MNIST training
	// images).
	DefaultMaxBytes = 1 << 30
	// DefaultClasses is the number of classes labels must fall into.
	DefaultClasses = 10
)

// maxDeflateRatio bounds how many bytes a DEFLATE stream can expand to per
// compressed byte (the format's limit is 1032:1); a gzip file cannot hold a
// payload larger than maxDeflateRatio times its own size.
const maxDeflateRatio = 1032

// ErrFormat is matched by errors.Is for every error that reports a malformed
// IDX file; the error itself is a *FormatError naming the file and problem.
var ErrFormat = errors.New("malformed IDX file")

// FormatError reports a malformed IDX file.
type FormatError struct {
	// File names the file (its path, or the name given to a Read function).
	File string
	// Problem describes what is wrong.
	Problem string
}

// Error implements error.
func (e *FormatError) Error() string {
	return fmt.Sprintf("datasets: %s: %v: %s", e.File, ErrFormat, e.Problem)
}

// Is reports whether target is ErrFormat.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

func formatErr(file, format string, args ...any) error {
	return &FormatError{File: file, Problem: fmt.Sprintf(format, args...)}
}

// ReadOptions control how IDX files are validated. The zero value of every
// field selects the documented default; a nil *ReadOptions means the same as
// &ReadOptions{}.
type ReadOptions struct {
	// MaxBytes bounds the payload (bytes after the header) a header may
	// declare; a larger declaration is an error reported before anything is
	// allocated. Zero means DefaultMaxBytes.
	MaxBytes int64
	// Classes is the number of classes: every label must lie in
	// [0, Classes). Zero means DefaultClasses; at most 256.
	Classes int
	// Rows and Cols, when non-zero, are the required image shape. Zero
	// accepts any shape (a pair of files, or the training and test sets of
	// Open, must still agree with each other).
	Rows, Cols int
}

func (o *ReadOptions) maxBytes() int64 {
	if o == nil || o.MaxBytes == 0 {
		return DefaultMaxBytes
	}
	return min(o.MaxBytes, math.MaxInt) // a payload must fit a []byte
}

func (o *ReadOptions) classes() int {
	if o == nil || o.Classes == 0 {
		return DefaultClasses
	}
	return o.Classes
}

func (o *ReadOptions) validate() error {
	if o == nil {
		return nil
	}
	switch {
	case o.MaxBytes < 0:
		return fmt.Errorf("datasets: ReadOptions.MaxBytes = %d is negative", o.MaxBytes)
	case o.Classes < 0 || o.Classes > 256:
		return fmt.Errorf("datasets: ReadOptions.Classes = %d outside [0, 256]", o.Classes)
	case o.Rows < 0:
		return fmt.Errorf("datasets: ReadOptions.Rows = %d is negative", o.Rows)
	case o.Cols < 0:
		return fmt.Errorf("datasets: ReadOptions.Cols = %d is negative", o.Cols)
	}
	return nil
}

// Images is the content of an IDX image file: N greyscale images of
// Rows×Cols bytes (0 = background, 255 = ink in MNIST), stored row-major,
// image after image.
type Images struct {
	N, Rows, Cols int
	// Pix holds N·Rows·Cols bytes; image i is Pix[i·Rows·Cols : (i+1)·Rows·Cols].
	Pix []byte
}

// ReadImages decodes an IDX image file (magic 0x00000803) from r, gzipped
// (recognised by its first two bytes, 1f 8b) or raw. name identifies the
// input in errors. Every image must have the same shape, at least 1×1 and
// equal to opts.Rows×opts.Cols where those are set; the file must hold at
// least one image and exactly the payload its header declares: a short
// (truncated) payload, trailing bytes, a corrupt gzip stream or a
// declaration above opts.MaxBytes is an error (matching ErrFormat).
// Memory grows with the bytes actually read, never with what a header
// merely claims.
func ReadImages(r io.Reader, name string, opts *ReadOptions) (*Images, error) {
	return readImages(r, name, -1, opts)
}

// ReadLabels decodes an IDX label file (magic 0x00000801) from r, gzipped or
// raw, with the checks of ReadImages; every label must lie in
// [0, opts.Classes).
func ReadLabels(r io.Reader, name string, opts *ReadOptions) ([]uint8, error) {
	return readLabels(r, name, -1, opts)
}

// ReadImagesFile reads the IDX image file at path (see ReadImages). For a
// raw file the declared payload is checked against the file size, and for a
// gzipped one against the most its size can expand to, before anything is
// allocated.
func ReadImagesFile(path string, opts *ReadOptions) (*Images, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readImages(f, path, size, opts)
}

// ReadLabelsFile reads the IDX label file at path (see ReadLabels and
// ReadImagesFile).
func ReadLabelsFile(path string, opts *ReadOptions) ([]uint8, error) {
	f, size, err := openSized(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLabels(f, path, size, opts)
}

func openSized(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("datasets: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("datasets: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("datasets: %s is not a regular file", path)
	}
	return f, st.Size(), nil
}

func readImages(r io.Reader, name string, size int64, opts *ReadOptions) (*Images, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	dims, pix, err := decodeIDX(r, name, size, 3, opts.maxBytes())
	if err != nil {
		return nil, err
	}
	im := &Images{N: dims[0], Rows: dims[1], Cols: dims[2], Pix: pix}
	if opts != nil && opts.Rows != 0 && im.Rows != opts.Rows {
		return nil, formatErr(name, "images have %d rows, want %d", im.Rows, opts.Rows)
	}
	if opts != nil && opts.Cols != 0 && im.Cols != opts.Cols {
		return nil, formatErr(name, "images have %d columns, want %d", im.Cols, opts.Cols)
	}
	return im, nil
}

func readLabels(r io.Reader, name string, size int64, opts *ReadOptions) ([]uint8, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	_, labels, err := decodeIDX(r, name, size, 1, opts.maxBytes())
	if err != nil {
		return nil, err
	}
	k := opts.classes()
	for i, l := range labels {
		if int(l) >= k {
			return nil, formatErr(name, "label %d at index %d outside [0, %d)", l, i, k)
		}
	}
	return labels, nil
}

// decodeIDX reads an unsigned-byte IDX file with ndims dimensions, returning
// the dimensions and the payload. size is the length of the (possibly
// compressed) input, or -1 if unknown.
func decodeIDX(r io.Reader, name string, size int64, ndims int, maxBytes int64) ([]int, []byte, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(2)
	if len(head) == 0 {
		if err == nil || err == io.EOF {
			return nil, nil, formatErr(name, "empty file")
		}
		return nil, nil, fmt.Errorf("datasets: %s: %w", name, err)
	}
	var src io.Reader = br
	gzipped := len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b
	if gzipped {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, formatErr(name, "bad gzip header: %v", err)
		}
		zr.Multistream(false)
		src = &gzipMembers{br: br, zr: zr}
	}
	// readErr classifies an error met while reading what: gzip corruption
	// and early ends are format errors, anything else (I/O) is passed on.
	// An empty what is the end of the file, after the payload.
	readErr := func(what string, err error) error {
		in := ""
		if what != "" {
			in = " in " + what
		}
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
			if what == "" {
				return formatErr(name, "truncated gzip stream")
			}
			return formatErr(name, "truncated %s", what)
		case gzipped && (errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || isFlateError(err)):
			return formatErr(name, "corrupt gzip stream%s: %v", in, err)
		}
		if what == "" {
			what = "end of file"
		}
		return fmt.Errorf("datasets: %s: reading %s: %w", name, what, err)
	}

	hdr := make([]byte, 4+4*ndims)
	if _, err := io.ReadFull(src, hdr[:4]); err != nil {
		return nil, nil, readErr("header", err)
	}
	want := uint32(0x00000800 | ndims)
	if magic := binary.BigEndian.Uint32(hdr); magic != want {
		return nil, nil, formatErr(name, "magic number 0x%08x, want 0x%08x (unsigned bytes, %d dimension%s)",
			magic, want, ndims, plural(ndims))
	}
	if _, err := io.ReadFull(src, hdr[4:]); err != nil {
		return nil, nil, readErr("header", err)
	}
	dims := make([]int, ndims)
	total := int64(1)
	for i := range dims {
		d := int64(binary.BigEndian.Uint32(hdr[4+4*i:]))
		if d == 0 {
			return nil, nil, formatErr(name, "dimension %d is zero", i)
		}
		// Keeping total·d ≤ maxBytes means the product never overflows.
		if total > maxBytes/d {
			return nil, nil, formatErr(name, "header %s declares more payload than the limit of %d bytes",
				dimString(hdr[4:], ndims), maxBytes)
		}
		total *= d
		dims[i] = int(d)
	}
	hlen := int64(len(hdr))
	if size >= 0 {
		if !gzipped && size != hlen+total {
			return nil, nil, formatErr(name, "file has %d bytes, header %s declares %d (%s)",
				size, dimString(hdr[4:], ndims), hlen+total, shortOrLong(size, hlen+total))
		}
		if gzipped && (hlen+total)/maxDeflateRatio > size {
			return nil, nil, formatErr(name, "header %s declares %d bytes, more than a %d-byte gzip file can hold",
				dimString(hdr[4:], ndims), hlen+total, size)
		}
	}

	var data []byte
	if !gzipped && size >= 0 {
		// The file size has been checked: allocate exactly.
		data = make([]byte, total)
		if _, err := io.ReadFull(src, data); err != nil {
			return nil, nil, readErr("payload", err)
		}
	} else {
		data, err = readGrowing(src, total)
		if err != nil {
			return nil, nil, readErr(fmt.Sprintf("payload (header %s declares %d bytes)", dimString(hdr[4:], ndims), total), err)
		}
	}
	// Reading past the payload both detects trailing bytes and makes gzip
	// verify its CRC and length trailer.
	var one [1]byte
	n, err := io.ReadFull(src, one[:])
	if n > 0 {
		return nil, nil, formatErr(name, "trailing data after the %d-byte payload", total)
	}
	if err != io.EOF {
		if errors.Is(err, errGzipTrailing) {
			return nil, nil, formatErr(name, "trailing data after the gzip stream")
		}
		return nil, nil, readErr("", err)
	}
	return dims, data, nil
}

// errGzipTrailing reports bytes after a gzip member that do not start
// another member.
var errGzipTrailing = errors.New("trailing data after the gzip stream")

// gzipMembers reads a sequence of gzip members (as gzip -c a b > c writes),
// unlike gzip.Reader in multistream mode telling bytes after the last
// member that are not a gzip header (errGzipTrailing) from a truncated
// member (io.ErrUnexpectedEOF).
type gzipMembers struct {
	br *bufio.Reader
	zr *gzip.Reader
}

func (g *gzipMembers) Read(p []byte) (int, error) {
	for {
		n, err := g.zr.Read(p)
		if err != io.EOF {
			return n, err
		}
		// A member ended and its CRC and length checked out.
		if n > 0 {
			return n, nil // the next call sees io.EOF again
		}
		head, perr := g.br.Peek(2)
		switch {
		case len(head) == 0 && perr == io.EOF:
			return 0, io.EOF
		case len(head) < 2 || head[0] != 0x1f || head[1] != 0x8b:
			if perr != nil && perr != io.EOF {
				return 0, perr
			}
			return 0, errGzipTrailing
		}
		if err := g.zr.Reset(g.br); err != nil {
			return 0, err
		}
		g.zr.Multistream(false)
	}
}

// readGrowing reads exactly n bytes from r into a buffer that grows in
// chunks as data arrives, so a header that overstates n costs no more
// memory than the bytes actually present.
func readGrowing(r io.Reader, n int64) ([]byte, error) {
	const chunk = 4 << 20
	data := make([]byte, 0, min(n, chunk))
	for int64(len(data)) < n {
		step := int(min(n-int64(len(data)), chunk))
		if cap(data)-len(data) < step {
			next := make([]byte, len(data), min(n, int64(2*cap(data)+step)))
			copy(next, data)
			data = next
		}
		k, err := io.ReadFull(r, data[len(data):len(data)+step])
		data = data[:len(data)+k]
		if err != nil {
			return nil, err
		}
	}
	return data, nil
}

func isFlateError(err error) bool {
	var ce flate.CorruptInputError
	var ie flate.InternalError
	return errors.As(err, &ce) || errors.As(err, &ie)
}

func dimString(b []byte, ndims int) string {
	s := ""
	for i := 0; i < ndims; i++ {
		if i > 0 {
			s += "×"
		}
		s += fmt.Sprint(binary.BigEndian.Uint32(b[4*i:]))
	}
	return s
}

func shortOrLong(have, want int64) string {
	if have < want {
		return "truncated"
	}
	return "trailing data"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
