package datasets

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadIDX feeds arbitrary bytes to ReadImages and ReadLabels. Neither
// may panic or allocate beyond its limit; every error must be a format
// error; and whatever they accept must be exactly the IDX encoding of what
// they return. The seed corpus (f.Add below and testdata/fuzz/FuzzReadIDX)
// runs in plain go test; explore with
//
//	go test -run '^$' -fuzz FuzzReadIDX -fuzztime 60s ./datasets/
func FuzzReadIDX(f *testing.F) {
	img := encodeIDX([]uint32{2, 3, 2}, ramp(12))
	lab := encodeIDX([]uint32{4}, []byte{0, 9, 5, 1})
	f.Add(img)
	f.Add(lab)
	f.Add(gz(f, img))
	f.Add(gz(f, lab))
	f.Add(img[:10])
	f.Add(append(bytes.Clone(lab), 0))
	opts := &ReadOptions{MaxBytes: 1 << 16}
	f.Fuzz(func(t *testing.T, file []byte) {
		plain := file
		if len(file) >= 2 && file[0] == 0x1f && file[1] == 0x8b {
			// What an accepted gzip file must decode to.
			zr, err := gzip.NewReader(bytes.NewReader(file))
			if err == nil {
				plain, err = io.ReadAll(io.LimitReader(zr, 1<<17))
			}
			if err != nil {
				plain = nil
			}
		}
		im, err := ReadImages(bytes.NewReader(file), "fuzz", opts)
		if err != nil {
			require.ErrorIs(t, err, ErrFormat, "ReadImages: not a format error")
		} else {
			require.Len(t, im.Pix, im.N*im.Rows*im.Cols, "pixels for %d×%d×%d images", im.N, im.Rows, im.Cols)
			re := encodeIDX([]uint32{uint32(im.N), uint32(im.Rows), uint32(im.Cols)}, im.Pix)
			require.True(t, bytes.Equal(re, plain), "accepted images do not re-encode to the input")
		}
		labels, err := ReadLabels(bytes.NewReader(file), "fuzz", opts)
		if err != nil {
			require.ErrorIs(t, err, ErrFormat, "ReadLabels: not a format error")
		} else {
			for _, l := range labels {
				require.Less(t, l, uint8(DefaultClasses), "accepted label")
			}
			require.True(t, bytes.Equal(encodeIDX([]uint32{uint32(len(labels))}, labels), plain),
				"accepted labels do not re-encode to the input")
		}
	})
}
