package datasets

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeIDX returns an unsigned-byte IDX file with the given dimensions and
// payload (written independently of the reader, straight from the format).
func encodeIDX(dims []uint32, payload []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 0x08, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(payload)
	return b.Bytes()
}

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return out.Bytes()
}

// ramp returns n bytes 0, 1, 2, … (mod 256).
func ramp(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func TestReadImagesValid(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, rows, cols int
		gzipped       bool
	}{
		{"raw 28x28", 3, 28, 28, false},
		{"gzip 28x28", 3, 28, 28, true},
		{"raw 5x3", 7, 5, 3, false},
		{"gzip 1x1", 1, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pix := ramp(tc.n * tc.rows * tc.cols)
			file := encodeIDX([]uint32{uint32(tc.n), uint32(tc.rows), uint32(tc.cols)}, pix)
			if tc.gzipped {
				file = gz(t, file)
			}
			im, err := ReadImages(bytes.NewReader(file), "x", nil)
			require.NoError(t, err)
			require.Equal(t, &Images{N: tc.n, Rows: tc.rows, Cols: tc.cols, Pix: pix}, im)
		})
	}
}

func TestReadLabelsValid(t *testing.T) {
	labels := []byte{0, 9, 3, 3, 7}
	for _, gzipped := range []bool{false, true} {
		file := encodeIDX([]uint32{5}, labels)
		if gzipped {
			file = gz(t, file)
		}
		got, err := ReadLabels(bytes.NewReader(file), "l", nil)
		require.NoError(t, err)
		require.Equal(t, labels, got, "gzip %v", gzipped)
	}
	// A declared class count admits larger labels.
	file := encodeIDX([]uint32{2}, []byte{25, 0})
	_, err := ReadLabels(bytes.NewReader(file), "l", &ReadOptions{Classes: 26})
	require.NoError(t, err, "26 classes")
}

// malformed returns named malformed inputs, each with a substring its error
// must contain.
func malformedImages(t testing.TB) []struct {
	name, want string
	file       []byte
} {
	good := encodeIDX([]uint32{2, 4, 4}, ramp(32))
	goodGz := gz(t, good)
	// Corrupt the CRC-32 in the gzip trailer (the last 8 bytes: CRC, size).
	badCRC := bytes.Clone(goodGz)
	badCRC[len(badCRC)-8] ^= 0xff
	// Corrupt the deflate stream itself: a block with the reserved type 3.
	badDeflate := bytes.Clone(goodGz[:10])
	badDeflate = append(badDeflate, 0x07, 0x00, 0x00, 0x00)
	return []struct {
		name, want string
		file       []byte
	}{
		{"empty", "empty file", nil},
		{"short magic", "truncated header", []byte{0, 0, 8}},
		{"short dims", "truncated header", good[:9]},
		{"label magic", "magic number 0x00000801, want 0x00000803", encodeIDX([]uint32{2}, []byte{1, 2})},
		{"int32 type", "magic number 0x00000c03", append([]byte{0, 0, 0x0c, 3}, good[4:]...)},
		{"nonzero lead byte", "magic number 0x01000803", append([]byte{1, 0, 8, 3}, good[4:]...)},
		{"zero rows", "dimension 1 is zero", encodeIDX([]uint32{2, 0, 4}, nil)},
		{"zero count", "dimension 0 is zero", encodeIDX([]uint32{0, 4, 4}, nil)},
		{"truncated payload", "truncated payload", good[:len(good)-1]},
		{"trailing byte", "trailing data", append(bytes.Clone(good), 0)},
		{"gzip truncated payload", "truncated payload", gz(t, good[:len(good)-5])},
		{"gzip trailing inside", "trailing data", gz(t, append(bytes.Clone(good), 1, 2, 3))},
		{"gzip then garbage", "trailing data after the gzip stream", append(bytes.Clone(goodGz), 'x', 'y', 'z')},
		{"gzip cut short", "truncated", goodGz[:len(goodGz)-4]},
		{"gzip bad header", "bad gzip header", []byte{0x1f, 0x8b, 0x07, 0, 0, 0, 0, 0, 0, 0}},
		{"gzip bad crc", "corrupt gzip stream", badCRC},
		{"gzip bad deflate", "corrupt gzip stream", badDeflate},
		{"oversized header", "more payload than the limit", encodeIDX([]uint32{0xffffffff, 0xffffffff, 0xffffffff}, nil)},
	}
}

func TestReadImagesMalformed(t *testing.T) {
	for _, tc := range malformedImages(t) {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadImages(bytes.NewReader(tc.file), "bad-file", nil)
			require.ErrorIs(t, err, ErrFormat)
			var fe *FormatError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, "bad-file", fe.File)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "bad-file")
		})
	}
}

func TestReadLabelsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		opts       *ReadOptions
		file       []byte
	}{
		{"label 10", "label 10 at index 1 outside [0, 10)", nil, encodeIDX([]uint32{3}, []byte{0, 10, 1})},
		{"label 3 of 3 classes", "label 3 at index 2 outside [0, 3)", &ReadOptions{Classes: 3}, encodeIDX([]uint32{3}, []byte{0, 1, 3})},
		{"image magic", "magic number 0x00000803, want 0x00000801", nil, encodeIDX([]uint32{1, 1, 1}, []byte{0})},
		{"truncated", "truncated payload", nil, encodeIDX([]uint32{4}, []byte{1, 2})},
		{"trailing", "trailing data", nil, encodeIDX([]uint32{1}, []byte{1, 2})},
		{"over limit", "more payload than the limit of 8 bytes", &ReadOptions{MaxBytes: 8}, encodeIDX([]uint32{9}, make([]byte, 9))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadLabels(bytes.NewReader(tc.file), "labels.idx", tc.opts)
			require.ErrorIs(t, err, ErrFormat)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "labels.idx")
		})
	}
}

func TestReadImagesShape(t *testing.T) {
	file := encodeIDX([]uint32{1, 4, 5}, make([]byte, 20))
	for _, tc := range []struct {
		opts ReadOptions
		want string
	}{
		{ReadOptions{Rows: 28}, "4 rows, want 28"},
		{ReadOptions{Cols: 4}, "5 columns, want 4"},
	} {
		_, err := ReadImages(bytes.NewReader(file), "f", &tc.opts)
		require.ErrorIs(t, err, ErrFormat, "%+v", tc.opts)
		require.ErrorContains(t, err, tc.want, "%+v", tc.opts)
	}
	_, err := ReadImages(bytes.NewReader(file), "f", &ReadOptions{Rows: 4, Cols: 5})
	require.NoError(t, err, "matching shape")
}

func TestReadOptionsInvalid(t *testing.T) {
	file := encodeIDX([]uint32{1}, []byte{0})
	for _, o := range []ReadOptions{{MaxBytes: -1}, {Classes: -1}, {Classes: 257}, {Rows: -1}, {Cols: -2}} {
		_, err := ReadLabels(bytes.NewReader(file), "f", &o)
		require.Error(t, err, "%+v", o)
		require.NotErrorIs(t, err, ErrFormat, "%+v: want an options error", o)
	}
}

// TestReadIOError checks that a failing reader is reported as such, not as a
// malformed file.
func TestReadIOError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := io.MultiReader(bytes.NewReader(encodeIDX([]uint32{4}, nil)), errReader{boom})
	_, err := ReadLabels(r, "f", nil)
	require.ErrorIs(t, err, boom)
	require.NotErrorIs(t, err, ErrFormat)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// allocatedBy returns the bytes allocated while f runs.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestOversizedHeaderNoAllocation checks that a header claiming far more
// data than present is refused without allocating what it claims.
func TestOversizedHeaderNoAllocation(t *testing.T) {
	// 900 MB claimed (under DefaultMaxBytes), 16 bytes present.
	claim := encodeIDX([]uint32{900000, 1000, 1}, make([]byte, 16))
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw-idx3")
	zipped := filepath.Join(dir, "zipped-idx3.gz")
	require.NoError(t, os.WriteFile(raw, claim, 0o644))
	require.NoError(t, os.WriteFile(zipped, gz(t, claim), 0o644))
	const budget = 16 << 20 // far below the 900 MB claimed
	for _, tc := range []struct {
		name, want string
		read       func() error
	}{
		{"raw file", "file has 32 bytes, header 900000×1000×1 declares 900000016", func() error {
			_, err := ReadImagesFile(raw, nil)
			return err
		}},
		{"gzip file", "more than a", func() error {
			_, err := ReadImagesFile(zipped, nil)
			return err
		}},
		{"raw reader", "truncated payload", func() error {
			_, err := ReadImages(bytes.NewReader(claim), "stream", nil)
			return err
		}},
		{"gzip reader", "truncated payload", func() error {
			_, err := ReadImages(bytes.NewReader(gz(t, claim)), "stream", nil)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocatedBy(func() { err = tc.read() })
			require.ErrorIs(t, err, ErrFormat)
			require.ErrorContains(t, err, tc.want)
			require.LessOrEqual(t, n, uint64(budget), "bytes allocated reading a file that claims 900 MB")
		})
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadImagesFile(filepath.Join(dir, "missing"), nil)
	require.ErrorIs(t, err, os.ErrNotExist, "missing file")
	_, err = ReadLabelsFile(dir, nil)
	require.ErrorContains(t, err, "not a regular file", "directory")
	p := filepath.Join(dir, "short-labels")
	require.NoError(t, os.WriteFile(p, encodeIDX([]uint32{5}, []byte{1}), 0o644))
	_, err = ReadLabelsFile(p, nil)
	require.ErrorIs(t, err, ErrFormat, "truncated file")
	require.ErrorContains(t, err, p)
	require.ErrorContains(t, err, "truncated")
}

// TestReadGzipMembers checks that a file of several gzip members (as
// concatenating .gz files produces) reads as their concatenation, and that
// a bad second member is an error.
func TestReadGzipMembers(t *testing.T) {
	file := encodeIDX([]uint32{3, 2, 2}, ramp(12))
	two := append(gz(t, file[:7]), gz(t, file[7:])...)
	im, err := ReadImages(bytes.NewReader(two), "two", nil)
	require.NoError(t, err)
	require.Equal(t, 3, im.N)
	require.Equal(t, ramp(12), im.Pix)
	bad := append(gz(t, file), 0x1f, 0x8b, 0x09, 0, 0, 0, 0, 0, 0, 0)
	_, err = ReadImages(bytes.NewReader(bad), "bad", nil)
	require.ErrorIs(t, err, ErrFormat, "bad second member")
	require.ErrorContains(t, err, "corrupt gzip stream", "bad second member")
}
