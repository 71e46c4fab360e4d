package train

import (
	"context"
	"fmt"
	"math"

	"github.com/deqgo/deq/solver"
)

// Prediction is a model's answer for one image (Model.Predict).
type Prediction struct {
	// Class is the most probable class (the lowest index among ties).
	Class int
	// Probabilities are the softmax of the logits, one per class.
	Probabilities []float64
	// Solve is the forward solve's result: the fixed point X, its Status
	// and Stats, and the residual certificate (Certificate.Bound bounds
	// ‖f(z) − z‖ at X, within Tol when the solve succeeded).
	Solve solver.Result
}

// Predict classifies one image of Model.InputDim raw pixels (row-major, in
// [0, 1] as datasets.Open and datasets.Preprocess return them: the model
// standardises its input) with the forward solver s, whose zero fields
// take DefaultForward()'s values, and returns its class, the class
// probabilities and the forward solve's result with its certificate. The
// image is solved on its own, so the certificate is the image's. A method
// the cell's bound does not support is refused as Evaluate refuses it (a
// *FieldError naming Eval.Method); so is an image of another size or with
// a non-finite pixel. It returns ctx's error when ctx is done before the
// solve ends.
func (m *Model) Predict(ctx context.Context, pixels []float64, s SolverConfig) (*Prediction, error) {
	if len(pixels) != m.InputDim {
		return nil, fmt.Errorf("train: Predict: %d pixels, the model reads %d", len(pixels), m.InputDim)
	}
	for i, v := range pixels {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("train: Predict: pixel %d is %v", i, v)
		}
	}
	s, err := s.merge("Eval", DefaultForward())
	if err != nil {
		return nil, err
	}
	if err := m.checkMethod("Eval.Method", s.Method); err != nil {
		return nil, err
	}
	l, err := m.layer(s, nil, nil)
	if err != nil {
		return nil, err
	}
	w := m.work(1)
	m.standardize(w.xs, pixels)
	if err := m.encode(w, w.e, 1); err != nil {
		return nil, err
	}
	l.SetSeeds(0, 0)
	sol, err := l.Forward(ctx, w.e)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		// A canceled solve keeps its best point; a prediction from it is
		// not asked for.
		return nil, err
	}
	m.readout(w, sol.Z, 1)
	p := &Prediction{Probabilities: softmax(w.logits[:m.Classes]), Solve: *sol.Result}
	p.Solve.X = append([]float64(nil), sol.Z...)
	for k, v := range p.Probabilities {
		if v > p.Probabilities[p.Class] {
			p.Class = k
		}
	}
	return p, nil
}

// softmax returns the softmax of logits, computed stably.
func softmax(logits []float64) []float64 {
	top := math.Inf(-1)
	for _, v := range logits {
		top = max(top, v)
	}
	out := make([]float64, len(logits))
	sum := 0.0
	for k, v := range logits {
		out[k] = math.Exp(v - top)
		sum += out[k]
	}
	for k := range out {
		out[k] /= sum
	}
	return out
}
