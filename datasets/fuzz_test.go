package datasets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
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

// fuzzNPM is the package of FuzzReadNPMDigits.
var fuzzNPM = npmPackage{tarball: "fuzz.tgz", digits: "package/src/digits/%d.json"}

// npmFuzzTarball returns a gzipped tarball holding doc as the JSON file of
// every class, except as layout's bits say: bit d (d < 10) leaves class d
// out, bit 10 makes class 3 a directory, bit 11 adds class 0 twice and bit
// 12 adds an unrelated file first.
func npmFuzzTarball(t testing.TB, doc []byte, layout uint16) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, typ byte, body []byte) {
		hdr := &tar.Header{Name: name, Typeflag: typ, Mode: 0o644}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(body))
		}
		require.NoError(t, tw.WriteHeader(hdr))
		if typ == tar.TypeReg {
			_, err := tw.Write(body)
			require.NoError(t, err)
		}
	}
	if layout&(1<<12) != 0 {
		add("package/README.md", tar.TypeReg, []byte("digits"))
	}
	for d := range 10 {
		name := fmt.Sprintf(fuzzNPM.digits, d)
		switch {
		case layout&(1<<d) != 0:
		case d == 3 && layout&(1<<10) != 0:
			add(name, tar.TypeDir, nil)
		default:
			add(name, tar.TypeReg, doc)
		}
		if d == 0 && layout&(1<<11) != 0 {
			add(name, tar.TypeReg, doc)
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// FuzzReadNPMDigits feeds the decoder of the npm digits (a gzipped tar of
// JSON pixel lists, one per class, read by readNPMImages with 2×2 images
// so that small inputs reach every check): with raw set the input is the
// tarball itself, otherwise a JSON document that npmFuzzTarball packs as
// layout says. It must not panic; what it accepts must be whole images
// with labels below 10 in class order, and from a packed document exactly
// the document's pixels (v·255 rounded) for every class.
//
//	go test -run '^$' -fuzz '^FuzzReadNPMDigits$' -fuzztime 60s ./datasets/
func FuzzReadNPMDigits(f *testing.F) {
	valid := []byte(`{"data": [0, 0.502, 1, 0.2, 0.004, 0.5, 0.996, 0]}`)
	f.Add(valid, uint16(0), false)
	f.Add([]byte(`{"data": [0, 0.5]}`), uint16(0), false)
	f.Add([]byte(`{"data": [0, 1.5, 0, 0]}`), uint16(0), false)
	f.Add([]byte(`{"data": [0, NaN, 0, 0]}`), uint16(0), false)
	f.Add([]byte(`<html>`), uint16(0), false)
	f.Add(valid, uint16(1<<7), false)
	f.Add(valid, uint16(1<<10), false)
	f.Add(valid, uint16(1<<11), false)
	f.Add(valid, uint16(1<<12), false)
	f.Add(npmFuzzTarball(f, valid, 0), uint16(0), true)
	f.Add([]byte("\x1f\x8b"), uint16(0), true)
	f.Fuzz(func(t *testing.T, in []byte, layout uint16, raw bool) {
		doc := in
		if !raw {
			in = npmFuzzTarball(t, doc, layout)
		}
		pix, labels, err := readNPMImages(bytes.NewReader(in), fuzzNPM, 1<<14, 2, 2)
		if err != nil {
			require.NotContains(t, err.Error(), "%!", "malformed error message")
			return
		}
		require.Len(t, pix, 4*len(labels), "whole 2×2 images")
		for i := 1; i < len(labels); i++ {
			require.LessOrEqual(t, labels[i-1], labels[i], "labels in class order")
		}
		if len(labels) > 0 {
			require.Less(t, labels[len(labels)-1], uint8(10))
		}
		if raw {
			return
		}
		var d struct{ Data []float64 }
		require.NoError(t, json.NewDecoder(bytes.NewReader(doc)).Decode(&d), "an accepted document starts with a JSON value")
		require.Len(t, labels, 10*len(d.Data)/4, "every class holds the document's images")
		for c := range 10 {
			for i, v := range d.Data {
				require.Equal(t, byte(math.Round(255*v)), pix[c*len(d.Data)+i], "class %d pixel %d", c, i)
			}
		}
	})
}
