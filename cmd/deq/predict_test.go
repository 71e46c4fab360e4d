package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
)

// predictTrain and predictTest are the sizes of the normalised synthetic
// digits the predict tests train and classify.
const (
	predictTrain = 500
	predictTest  = 1000
)

// normalisedDigits returns n synthetic digits of seed normalised by
// datasets.Preprocess, as bytes, and their labels.
func normalisedDigits(t *testing.T, n int, seed uint64) ([]byte, []int) {
	t.Helper()
	ds, err := datasets.Synthetic(context.Background(), n, seed)
	require.NoError(t, err)
	pix := make([]byte, 0, n*784)
	for i := range n {
		px, err := datasets.Preprocess(grey(ds.Image(i), 28, 28), nil)
		require.NoError(t, err)
		for _, v := range px {
			pix = append(pix, uint8(math.Round(255*v)))
		}
	}
	return pix, ds.Y
}

// grey returns rows×cols pixels in [0, 1] as an 8-bit image.
func grey(x []float64, rows, cols int) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, cols, rows))
	for i, v := range x {
		img.Pix[i] = uint8(math.Round(255 * v))
	}
	return img
}

// writeIDX writes an IDX image file of 28×28 images pix, or a label file
// of labels when pix is nil.
func writeIDX(t *testing.T, path string, pix []byte, labels []int) {
	t.Helper()
	var b bytes.Buffer
	put := func(v uint32) { require.NoError(t, binary.Write(&b, binary.BigEndian, v)) }
	if pix != nil {
		put(datasets.MagicImages)
		put(uint32(len(pix) / 784))
		put(28)
		put(28)
		b.Write(pix)
	} else {
		put(datasets.MagicLabels)
		put(uint32(len(labels)))
		for _, l := range labels {
			b.WriteByte(byte(l))
		}
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

func writeImage(t *testing.T, path string, img image.Image) {
	t.Helper()
	var b bytes.Buffer
	if strings.HasSuffix(path, ".jpg") {
		require.NoError(t, jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}))
	} else {
		require.NoError(t, png.Encode(&b, img))
	}
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

// predictClasses runs deq predict --json over files and returns the
// classes, in order, and the report.
func predictClasses(t *testing.T, args ...string) ([]int, map[string]any) {
	t.Helper()
	code, out, errOut := runCmd(append([]string{"predict", "--json"}, args...)...)
	require.Equal(t, 0, code, errOut)
	rep := decodeOne(t, out)
	var classes []int
	for _, p := range rep["predictions"].([]any) {
		classes = append(classes, int(p.(map[string]any)["class"].(float64)))
	}
	return classes, rep
}

// TestPredict trains a small model on normalised synthetic digits, then
// checks that deq predict on PNG files written from the test images gives
// the classes of the model's evaluation on them, and that the
// normalisation keeps the class of hand-made variants of a digit.
func TestPredict(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	require.NoError(t, os.Mkdir(data, 0o755))
	trPix, trY := normalisedDigits(t, predictTrain, 21)
	tePix, teY := normalisedDigits(t, predictTest, 22)
	writeIDX(t, filepath.Join(data, datasets.StandardFiles[0]), trPix, nil)
	writeIDX(t, filepath.Join(data, datasets.StandardFiles[1]), nil, trY)
	writeIDX(t, filepath.Join(data, datasets.StandardFiles[2]), tePix, nil)
	writeIDX(t, filepath.Join(data, datasets.StandardFiles[3]), nil, teY)
	ck := filepath.Join(dir, "run.ckpt")
	code, _, errOut := runCmd("train", "--data", data, "--hidden", "32", "--encoder", "32", "--batch", "50",
		"--epochs", "3", "--lr", "0.01", "--seed", "3", "--checkpoint", ck, "--quiet")
	require.Equal(t, 0, code, errOut)

	t.Run("same classes as eval", func(t *testing.T) {
		pngs := filepath.Join(dir, "png")
		require.NoError(t, os.Mkdir(pngs, 0o755))
		var files []string
		for i := range predictTest {
			img := &image.Gray{Pix: tePix[i*784 : (i+1)*784], Stride: 28, Rect: image.Rect(0, 0, 28, 28)}
			f := filepath.Join(pngs, fmt.Sprintf("%04d.png", i))
			writeImage(t, f, img)
			files = append(files, f)
		}
		fromPNG, rep := predictClasses(t, append([]string{"--checkpoint", ck, "--as-is"}, files...)...)
		require.Len(t, fromPNG, predictTest)
		fromIDX, _ := predictClasses(t, "--checkpoint", ck, filepath.Join(data, datasets.StandardFiles[2]))
		require.Equal(t, fromIDX, fromPNG, "PNG and IDX files of the same images")
		correct := 0
		for i, c := range fromPNG {
			if c == teY[i] {
				correct++
			}
		}
		// deq eval solving each image on its own, as predict does.
		code, out, errOut := runCmd("eval", "--checkpoint", ck, "--data", data, "--batch", "1", "--json")
		require.Equal(t, 0, code, errOut)
		ev := decodeOne(t, out)
		require.Equal(t, float64(correct), ev["correct"], "predict's classes score as eval's")
		t.Logf("accuracy %d/%d", correct, predictTest)
		require.Greater(t, float64(correct)/predictTest, 0.5, "the model has learnt something")
		p := rep["predictions"].([]any)[0].(map[string]any)
		sum := 0.0
		for _, v := range p["probabilities"].([]any) {
			sum += v.(float64)
		}
		require.InDelta(t, 1, sum, 1e-9)
		require.Equal(t, "Success", p["status"])
		require.LessOrEqual(t, p["cert_bound"], p["tol"], "the certificate meets the tolerance")
	})

	t.Run("hand-made images", func(t *testing.T) {
		hand := filepath.Join(dir, "hand")
		require.NoError(t, os.Mkdir(hand, 0o755))
		for i := range 6 {
			canon := &image.Gray{Pix: tePix[i*784 : (i+1)*784], Stride: 28, Rect: image.Rect(0, 0, 28, 28)}
			shifted, inverted := image.NewGray(canon.Rect), image.NewGray(canon.Rect)
			big := image.NewGray(image.Rect(0, 0, 150, 120))
			paper := image.NewRGBA(image.Rect(0, 0, 90, 140))
			for k := range big.Pix {
				big.Pix[k] = 0
			}
			for y := range paper.Rect.Dy() {
				for x := range paper.Rect.Dx() {
					paper.Set(x, y, color.RGBA{230, 225, 210, 255})
				}
			}
			for y := range 28 {
				for x := range 28 {
					v := canon.GrayAt(x, y).Y
					if y+2 < 28 && x+3 < 28 {
						shifted.SetGray(x+3, y+2, color.Gray{Y: v})
					}
					inverted.SetGray(x, y, color.Gray{Y: 255 - v})
					for dy := range 4 {
						for dx := range 4 {
							big.SetGray(20+4*x+dx, 7+4*y+dy, color.Gray{Y: v})
						}
					}
					for dy := range 3 {
						for dx := range 3 {
							ink := 1 - float64(v)/255
							paper.Set(5+3*x+dx, 30+3*y+dy, color.RGBA{uint8(30 + 200*ink), uint8(40 + 185*ink), uint8(90 + 120*ink), 255})
						}
					}
				}
			}
			files := []string{filepath.Join(hand, fmt.Sprintf("%d-canonical.png", i))}
			writeImage(t, files[0], canon)
			for name, img := range map[string]image.Image{
				"shifted.png": shifted, "inverted.png": inverted, "big.png": big, "big.jpg": big, "paper.jpg": paper,
			} {
				f := filepath.Join(hand, fmt.Sprintf("%d-%s", i, name))
				writeImage(t, f, img)
				files = append(files, f)
			}
			classes, _ := predictClasses(t, append([]string{"--checkpoint", ck}, files...)...)
			t.Logf("digit %d (label %d): classes %v", i, teY[i], classes)
			for k, c := range classes {
				require.Equal(t, classes[0], c, "%s: class %d, the canonical image's is %d", files[k], c, classes[0])
			}
		}
	})

	t.Run("unreadable and empty images", func(t *testing.T) {
		bad := filepath.Join(dir, "bad")
		require.NoError(t, os.Mkdir(bad, 0o755))
		good := filepath.Join(bad, "good.png")
		writeImage(t, good, &image.Gray{Pix: tePix[:784], Stride: 28, Rect: image.Rect(0, 0, 28, 28)})
		garbage := filepath.Join(bad, "garbage.png")
		require.NoError(t, os.WriteFile(garbage, []byte("not an image"), 0o644))
		empty := filepath.Join(bad, "empty.png")
		require.NoError(t, os.WriteFile(empty, nil, 0o644))
		blank := filepath.Join(bad, "blank.png")
		writeImage(t, blank, image.NewGray(image.Rect(0, 0, 40, 40)))
		missing := filepath.Join(bad, "missing.png")
		code, out, errOut := runCmd("predict", "--checkpoint", ck, garbage, good, empty, blank, missing)
		require.Equal(t, exitUsage, code)
		require.Contains(t, out, good, "the readable image is still classified")
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		require.Len(t, lines, 5, "one line per failed file and the count: %q", errOut)
		for k, f := range []string{garbage, empty, blank, missing} {
			require.Contains(t, lines[k], f)
		}
		require.Contains(t, lines[2], "no ink")
		require.Contains(t, lines[4], "4 of 5 files")

		code, out, _ = runCmd("predict", "--checkpoint", ck, "--json", good, blank)
		require.Equal(t, exitUsage, code)
		var rep predictReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		require.Len(t, rep.Predictions, 1)
		require.Len(t, rep.Failures, 1)
		require.Equal(t, blank, rep.Failures[0].File)

		requireUsageError(t, []string{"predict", good}, "--checkpoint")
		requireUsageError(t, []string{"predict", "--checkpoint", ck}, "FILE")
	})
}
