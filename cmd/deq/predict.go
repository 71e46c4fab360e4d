package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // JPEG decoder
	_ "image/png"  // PNG decoder
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	_ "golang.org/x/image/bmp"  // BMP decoder
	_ "golang.org/x/image/tiff" // TIFF decoder
	_ "golang.org/x/image/webp" // WebP decoder

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/train"
)

// predictFlags are the flags of `deq predict`.
type predictFlags struct {
	checkpoint string
	json, asIs bool
}

func newPredictCmd() *cobra.Command {
	var f predictFlags
	cmd := &cobra.Command{
		Use:   "predict --checkpoint C [flags] FILE...",
		Short: "Classify images with a trained DEQ classifier, with each solve's certificate",
		Long: `Predict loads a checkpoint written by deq train and classifies each image
FILE: PNG, JPEG, BMP, TIFF or WebP, or an IDX image file (every image in
it). It prints, per image, the class, the class probabilities and the
forward solve's residual certificate ‖f(z) − z‖ ≤ bound (the run's
evaluation solver and tolerance; each image is solved on its own).

Pictures are normalised as MNIST's digits were (datasets.Preprocess):
converted to greyscale (transparency over white); inverted when their
border is light, since MNIST's ink is light on black, so a dark digit on
white paper works as it is; background removed; the digit's bounding box
scaled to fit 20×20 preserving its aspect ratio and placed in a 28×28
frame with its centre of mass at the centre. --as-is takes 28×28 pictures
as they are (greyscale and polarity only), as deq eval sees the images of
a data set; the images of IDX files are always taken as they are.

An image that cannot be read or holds no digit is reported on standard
error, one line naming the file, and the others are still classified; the
exit status is then 2.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.checkpoint, "checkpoint", "", "checkpoint written by deq train (required)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of a table")
	fl.BoolVar(&f.asIs, "as-is", false, "take 28×28 pictures as they are: no background removal, size normalisation or centring")
	return cmd
}

// prediction is one image's line of `deq predict`'s report.
type prediction struct {
	File          string    `json:"file"`
	Index         *int      `json:"index,omitempty"` // the image's index in an IDX file
	Class         int       `json:"class"`
	Probabilities []float64 `json:"probabilities"`
	Status        string    `json:"status"`
	Iterations    int       `json:"iterations"`
	Residual      number    `json:"residual"`
	Tol           number    `json:"tol"`
	// CertBound is the certificate's bound on ‖f(z) − z‖ (null without a
	// certificate), CertRule how it was obtained.
	CertBound number `json:"cert_bound"`
	CertRule  string `json:"cert_rule,omitempty"`
}

// predictFailure is an image that could not be classified.
type predictFailure struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// predictReport is what `deq predict --json` prints.
type predictReport struct {
	Checkpoint  string           `json:"checkpoint"`
	Solver      string           `json:"solver"`
	Predictions []prediction     `json:"predictions"`
	Failures    []predictFailure `json:"failures,omitempty"`
}

// predictInput is one image to classify.
type predictInput struct {
	file   string
	index  *int
	pixels []float64
}

func (f *predictFlags) run(cmd *cobra.Command, files []string) error {
	switch {
	case f.checkpoint == "":
		return usagef("--checkpoint is required")
	case len(files) == 0:
		return usagef("no image FILE given")
	}
	ck, err := train.Load(f.checkpoint)
	if err != nil {
		return usagef("--checkpoint: %v", err)
	}
	s := ck.Config.Eval
	rep := &predictReport{Checkpoint: f.checkpoint, Solver: s.Method.String(), Predictions: []prediction{}}
	for _, file := range files {
		inputs, err := readPredictInputs(file, ck.Model.InputDim, &datasets.PreprocessOptions{AsIs: f.asIs})
		if err != nil {
			rep.Failures = append(rep.Failures, predictFailure{File: file, Error: err.Error()})
			fmt.Fprintln(cmd.ErrOrStderr(), oneLine(err.Error()))
			continue
		}
		for _, in := range inputs {
			p, err := ck.Model.Predict(cmd.Context(), in.pixels, s)
			if err != nil {
				return runtimeError{fmt.Errorf("%s: %w", in.file, err)}
			}
			rep.Predictions = append(rep.Predictions, newPrediction(in, p))
		}
	}
	if f.json {
		b, err := json.Marshal(rep)
		if err != nil {
			return runtimeError{err}
		}
		if _, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b); err != nil {
			return err
		}
	} else if err := rep.write(cmd.OutOrStdout()); err != nil {
		return err
	}
	if n := len(rep.Failures); n > 0 {
		return usagef("%d of %d files could not be classified", n, len(files))
	}
	return nil
}

func newPrediction(in predictInput, p *train.Prediction) prediction {
	r := p.Solve
	out := prediction{
		File: in.file, Index: in.index, Class: p.Class, Probabilities: p.Probabilities,
		Status: r.Status.String(), Iterations: r.Stats.Iterations, Residual: number(r.Residual), Tol: number(r.Tol),
	}
	if c := r.Certificate; c != nil {
		out.CertBound, out.CertRule = number(c.Bound), c.Rule.String()
	} else {
		out.CertBound = number(math.NaN())
	}
	return out
}

// readPredictInputs reads the images of file: every image of an IDX image
// file (taken as it is when it has dim pixels), or one picture
// normalised by datasets.Preprocess. The error names the file.
func readPredictInputs(file string, dim int, opts *datasets.PreprocessOptions) ([]predictInput, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, pathReason(err))
	}
	img, _, derr := image.Decode(fh)
	fh.Close()
	if derr == nil {
		if dim != datasets.PreprocessSize*datasets.PreprocessSize {
			return nil, fmt.Errorf("%s: the model reads %d pixels, not a 28×28 picture (pass an IDX file of its images)", file, dim)
		}
		px, err := datasets.Preprocess(img, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return []predictInput{{file: file, pixels: px}}, nil
	}
	if !errors.Is(derr, image.ErrFormat) {
		return nil, fmt.Errorf("%s: %w", file, derr)
	}
	im, err := datasets.ReadImagesFile(file, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: neither a PNG, JPEG, BMP, TIFF or WebP picture nor an IDX image file (%w)", file, err)
	}
	var out []predictInput
	size := im.Rows * im.Cols
	for i := range im.N {
		pix := im.Pix[i*size : (i+1)*size]
		var px []float64
		if size == dim {
			px = make([]float64, size)
			for k, b := range pix {
				px[k] = float64(b) / 255
			}
		} else {
			g := &image.Gray{Pix: pix, Stride: im.Cols, Rect: image.Rect(0, 0, im.Cols, im.Rows)}
			if px, err = datasets.Preprocess(g, opts); err != nil {
				return nil, fmt.Errorf("%s: image %d: %w", file, i, err)
			}
		}
		out = append(out, predictInput{file: file, index: &i, pixels: px})
	}
	return out, nil
}

func (r *predictReport) write(w io.Writer) error {
	if len(r.Predictions) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "image\tclass\tprobability\tcertificate (%s)\tprobabilities\n", r.Solver)
	for _, p := range r.Predictions {
		name := p.File
		if p.Index != nil {
			name = fmt.Sprintf("%s[%d]", p.File, *p.Index)
		}
		probs := make([]string, len(p.Probabilities))
		for k, v := range p.Probabilities {
			probs[k] = fmt.Sprintf("%.3f", v)
		}
		cert := "none"
		if b := float64(p.CertBound); !math.IsNaN(b) {
			cert = fmt.Sprintf("‖f(z) − z‖ ≤ %.3g (tol %g, %s)", b, float64(p.Tol), p.Status)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.4f\t%s\t%s\n", name, p.Class, p.Probabilities[p.Class], cert, strings.Join(probs, " "))
	}
	return tw.Flush()
}
