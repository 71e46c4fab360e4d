package train

import (
	"context"
	"fmt"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
)

// EvalMetrics summarise an evaluation of a model on a data set.
type EvalMetrics struct {
	// Examples is the number of images evaluated; Correct of them were
	// classified correctly.
	Examples, Correct int
	// Accuracy is Correct/Examples and Loss the mean cross-entropy.
	Accuracy, Loss float64
	// Solver summarises the forward solves, one per batch.
	Solver SolveSummary
	// TermRelVar is σ²/‖z*‖² of one term sample at the fixed points of the
	// first batch (layers.TermRelVar); zero for a deterministic cell.
	TermRelVar float64
}

// termRelVarDraws is the number of one-term samples layers.TermRelVar
// averages for a cell whose evaluator does not compute the variance
// exactly.
const termRelVarDraws = 64

// termRelVar returns layers.TermRelVar at the fixed points z of the batch
// of n examples whose encoder features are e, 0 for a cell of one term.
func (m *Model) termRelVar(e, z []float64, n int, seed uint64) (float64, error) {
	ev, err := m.cell.Evaluator(n)
	if err != nil || ev.Terms() <= 1 {
		return 0, err
	}
	if err := ev.SetInput(e); err != nil {
		return 0, err
	}
	return layers.TermRelVar(ev, z, termRelVarDraws, seed)
}

// Evaluate classifies the images of d (raw pixels, as datasets.Open
// returns them without normalisation: the model standardises its input)
// with forward solver s in batches of batch images (zero means
// DefaultEvalBatchSize). s's zero fields take DefaultForward()'s values. It
// stops with ctx's error, between batches, when ctx is done. As New
// does for a run, it refuses (a *FieldError naming Eval.Method) a method
// whose guarantees rest on a bound the cell lacks: a stochastic method on a
// conv cell that proves no Lipschitz bound, and GHAL or VR-GHAL on a cell
// that declares no γ̄.
func (m *Model) Evaluate(ctx context.Context, d *datasets.Dataset, s SolverConfig, batch int) (*EvalMetrics, error) {
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
	return m.evaluate(ctx, l, d, batch, s.Tol, 0)
}

// evaluate runs l over d in batches; tol is the solver's tolerance and
// seed derives the solvers' seeds.
func (m *Model) evaluate(ctx context.Context, l *deq.Layer, d *datasets.Dataset, batch int, tol float64, seed uint64) (*EvalMetrics, error) {
	if batch == 0 {
		batch = DefaultEvalBatchSize
	}
	if d.Dim() != m.InputDim {
		return nil, fmt.Errorf("train: %s has %d pixels per image, the model %d", d.Name, d.Dim(), m.InputDim)
	}
	if d.Classes != m.Classes {
		return nil, fmt.Errorf("train: %s has %d classes, the model %d", d.Name, d.Classes, m.Classes)
	}
	bt, err := datasets.NewBatcher(d, batch, nil)
	if err != nil {
		return nil, err
	}
	em := &EvalMetrics{}
	var acc solveAcc
	loss := 0.0
	for i := 0; bt.Next(); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b := bt.Batch()
		n := b.Len()
		w := m.work(n)
		m.standardize(w.xs, b.X.RawMatrix().Data)
		if err := m.encode(w, w.e, n); err != nil {
			return nil, err
		}
		l.SetSeeds(numeric.Mix(seed, uint64(i)), 0)
		sol, err := l.Forward(ctx, w.e)
		if err != nil {
			return nil, err
		}
		acc.add(sol.Result, sol.Float32)
		if i == 0 {
			if em.TermRelVar, err = m.termRelVar(w.e, sol.Z, n, seed); err != nil {
				return nil, err
			}
		}
		m.readout(w, sol.Z, n)
		lo, c := crossEntropy(nil, w.logits, b.Labels, m.Classes)
		loss += lo
		em.Correct += c
		em.Examples += n
	}
	em.Accuracy = float64(em.Correct) / float64(em.Examples)
	em.Loss = loss / float64(em.Examples)
	em.Solver = acc.summary()
	return em, nil
}
