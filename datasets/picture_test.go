package datasets

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// pictureBytes encodes a w×h picture with a bright bar on black.
func pictureBytes(t testing.TB, w, h int, asJPEG bool) []byte {
	t.Helper()
	g := image.NewGray(image.Rect(0, 0, w, h))
	for y := h / 4; y < 3*h/4; y++ {
		g.SetGray(w/2, y, color.Gray{Y: 255})
	}
	var b bytes.Buffer
	var err error
	if asJPEG {
		err = jpeg.Encode(&b, g, nil)
	} else {
		err = png.Encode(&b, g)
	}
	require.NoError(t, err)
	return b.Bytes()
}

// pngHeaderClaiming returns the signature and IHDR chunk of a PNG that
// claims w×h greyscale pixels, and nothing else.
func pngHeaderClaiming(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8] = 8 // bit depth; colour type 0 (greyscale)
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	_ = binary.Write(&b, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr...)
	b.Write(chunk)
	_ = binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func TestDecodePicture(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		w, h int
		err  error // matched by errors.Is; nil: decoded
	}{
		{"png", pictureBytes(t, 40, 30, false), 40, 30, nil},
		{"jpeg", pictureBytes(t, 33, 50, true), 33, 50, nil},
		{"header larger than the limit", pngHeaderClaiming(1<<15, 1<<15), 0, 0, ErrPictureTooLarge},
		{"not a picture", []byte("hello, world"), 0, 0, image.ErrFormat},
		{"empty", nil, 0, 0, image.ErrFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := DecodePicture(bytes.NewReader(tc.data))
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.w, img.Bounds().Dx())
			require.Equal(t, tc.h, img.Bounds().Dy())
		})
	}
}

// FuzzDecodePicture decodes arbitrary bytes as a picture and normalises
// it: neither may panic or allocate beyond MaxPicturePixels, and a picture
// that normalises gives PreprocessSize² finite pixels in [0, 1].
func FuzzDecodePicture(f *testing.F) {
	f.Add(pictureBytes(f, 28, 28, false))
	f.Add(pictureBytes(f, 12, 40, false))
	f.Add(pictureBytes(f, 20, 20, true))
	f.Add(pngHeaderClaiming(1<<15, 1<<15))
	f.Add([]byte("BM"))
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := DecodePicture(bytes.NewReader(data))
		if err != nil {
			return
		}
		b := img.Bounds()
		if int64(b.Dx())*int64(b.Dy()) > MaxPicturePixels {
			t.Fatalf("decoded %v, over the limit", b)
		}
		px, err := Preprocess(img, nil)
		if err != nil {
			if !errors.Is(err, ErrNoInk) && len(px) != 0 {
				t.Fatalf("error %v with pixels", err)
			}
			return
		}
		if len(px) != PreprocessSize*PreprocessSize {
			t.Fatalf("%d pixels", len(px))
		}
		for i, v := range px {
			if math.IsNaN(v) || v < 0 || v > 1 {
				t.Fatalf("pixel %d = %v", i, v)
			}
		}
	})
}
