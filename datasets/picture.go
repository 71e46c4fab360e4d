package datasets

import (
	"bufio"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // JPEG decoder for DecodePicture
	_ "image/png"  // PNG decoder for DecodePicture
	"io"

	_ "golang.org/x/image/bmp"  // BMP decoder for DecodePicture
	_ "golang.org/x/image/tiff" // TIFF decoder for DecodePicture
	_ "golang.org/x/image/webp" // WebP decoder for DecodePicture
)

// MaxPicturePixels is the largest picture, in pixels (width × height),
// DecodePicture decodes: 4096 × 4096. Its header is read first, so a
// picture that claims more is refused before its pixels are allocated.
const MaxPicturePixels = 1 << 24

// ErrPictureTooLarge is matched by errors.Is for DecodePicture's error on a
// picture larger than MaxPicturePixels.
var ErrPictureTooLarge = errors.New("picture too large")

// DecodePicture decodes a PNG, JPEG, BMP, TIFF or WebP picture from r, for
// Preprocess. It reads the header first and refuses a picture with no
// pixels or with more than MaxPicturePixels of them; an input that is none
// of these formats gives an error matching image.ErrFormat.
func DecodePicture(r io.Reader) (image.Image, error) {
	br := bufio.NewReader(r)
	// DecodeConfig consumes the header: peek it from a tee so that Decode
	// can read the picture from its start.
	var head headRecorder
	cfg, _, err := image.DecodeConfig(io.TeeReader(br, &head))
	if err != nil {
		return nil, err
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("datasets: picture of %d×%d pixels has none", cfg.Width, cfg.Height)
	}
	if int64(cfg.Width)*int64(cfg.Height) > MaxPicturePixels {
		return nil, fmt.Errorf("datasets: picture of %d×%d pixels: %w (at most %d pixels)", cfg.Width, cfg.Height, ErrPictureTooLarge, MaxPicturePixels)
	}
	img, _, err := image.Decode(io.MultiReader(&head, br))
	if err != nil {
		return nil, err
	}
	if b := img.Bounds(); b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return nil, fmt.Errorf("datasets: picture decodes to %d×%d pixels, its header says %d×%d", b.Dx(), b.Dy(), cfg.Width, cfg.Height)
	}
	return img, nil
}

// headRecorder keeps the bytes DecodeConfig read and gives them back once.
type headRecorder struct {
	buf []byte
	off int
}

func (h *headRecorder) Write(p []byte) (int, error) {
	h.buf = append(h.buf, p...)
	return len(p), nil
}

func (h *headRecorder) Read(p []byte) (int, error) {
	if h.off >= len(h.buf) {
		return 0, io.EOF
	}
	n := copy(p, h.buf[h.off:])
	h.off += n
	return n, nil
}
