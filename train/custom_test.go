package train_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/train"
)

// tanhGraphCell returns a GraphCell z ↦ tanh(zW + x) (Encoder = Hidden =
// h) with W 0.5 times the identity, declaring γ̄ = 0.5 and proving nothing.
func tanhGraphCell(input, hidden int, _ uint64) (layers.Cell, error) {
	w := make([]float64, hidden*hidden)
	for i := range hidden {
		w[i*hidden+i] = 0.5
	}
	return layers.NewGraphCell(layers.GraphCellConfig{
		Shape:  layers.Shape{Hidden: hidden, Input: input},
		Params: []layers.ParamSpec{{Name: "W", Rows: hidden, Cols: hidden, Init: w}},
		Build: func(_ *G.ExprGraph, z, x *G.Node, p []*G.Node) (*G.Node, error) {
			zw, err := G.Mul(z, p[0])
			if err != nil {
				return nil, err
			}
			pre, err := G.Add(zw, x)
			if err != nil {
				return nil, err
			}
			return G.Tanh(pre)
		},
		Gamma: 0.5,
	})
}

func customData(t *testing.T) *datasets.Data {
	t.Helper()
	data, err := datasets.Open(context.Background(), datasets.SyntheticName, &datasets.Options{Seed: 2, Synthetic: datasets.SyntheticOptions{Train: 128, Test: 64}})
	require.NoError(t, err)
	return data
}

func methodOf(t *testing.T, m solver.Method) solver.MethodSpec {
	t.Helper()
	method, err := solver.MethodSpecOf(m)
	require.NoError(t, err)
	return method
}

// TestNewWithCellGraphCell trains a GraphCell: its parameter changes, and
// a run interrupted after its first epoch and resumed from its checkpoint
// with ResumeWithCell ends with the parameters of an uninterrupted run.
func TestNewWithCellGraphCell(t *testing.T) {
	data := customData(t)
	cfg := train.Config{
		Epochs: 2, BatchSize: 32, LR: 1e-2, Seed: 3,
		Model:   train.ModelConfig{Hidden: 8},
		Forward: train.SolverConfig{Method: methodOf(t, solver.Broyden{}), Tol: 1e-4},
	}
	whole, err := train.NewWithCell(cfg, tanhGraphCell, data.Train, data.Test, nil)
	require.NoError(t, err)
	w0 := append([]float64(nil), whole.Model().Cell().Params()[0].Data()...)
	res, err := whole.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, res.Epochs, 2)
	for _, e := range res.Epochs {
		require.Equal(t, 4, e.Batches)
		require.Zero(t, e.Skipped)
	}
	want := whole.Model().Cell().Params()[0].Data()
	require.NotEqual(t, w0, want, "the cell's parameter is trained")

	path := filepath.Join(t.TempDir(), "ck")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := train.NewWithCell(cfg, tanhGraphCell, data.Train, data.Test,
		&train.Options{Checkpoint: path, OnEpoch: func(*train.EpochMetrics) { cancel() }})
	require.NoError(t, err)
	_, err = first.Run(ctx)
	require.ErrorIs(t, err, context.Canceled)

	_, err = train.Load(path)
	require.ErrorIs(t, err, train.ErrCustomCell)
	_, err = train.Resume(path, data.Train, data.Test, nil)
	require.ErrorIs(t, err, train.ErrCustomCell)
	ck, err := train.LoadWithCell(path, tanhGraphCell)
	require.NoError(t, err)
	require.Equal(t, 1, ck.Epoch)
	rest, err := train.ResumeWithCell(path, tanhGraphCell, data.Train, data.Test, nil)
	require.NoError(t, err)
	_, err = rest.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, want, rest.Model().Cell().Params()[0].Data(), "the resumed run ends where the uninterrupted one does")
}

// TestLoadWithCellBuiltIn refuses a CellFunc for a built-in cell's
// checkpoint.
func TestLoadWithCellBuiltIn(t *testing.T) {
	data := customData(t)
	path := filepath.Join(t.TempDir(), "ck")
	cfg := train.Config{
		Epochs: 1, BatchSize: 64, Seed: 3, Model: train.ModelConfig{Hidden: 4},
		Forward: train.SolverConfig{Method: methodOf(t, solver.Broyden{})},
	}
	tr, err := train.New(cfg, data.Train, data.Test, nil)
	require.NoError(t, err)
	require.NoError(t, tr.Save(path))
	_, err = train.LoadWithCell(path, tanhGraphCell)
	require.ErrorIs(t, err, train.ErrCustomCell)
	_, err = train.LoadWithCell(path, nil)
	require.ErrorContains(t, err, "newCell is nil")
	_, err = train.Load(path)
	require.NoError(t, err)
}

func TestNewWithCellRefusals(t *testing.T) {
	data := customData(t)
	base := train.Config{
		Epochs: 1, BatchSize: 32, Seed: 3,
		Model:   train.ModelConfig{Hidden: 8},
		Forward: train.SolverConfig{Method: methodOf(t, solver.Broyden{})},
	}
	wrongShape := func(input, hidden int, seed uint64) (layers.Cell, error) {
		return tanhGraphCell(input, hidden+1, seed)
	}
	failing := func(int, int, uint64) (layers.Cell, error) { return nil, errors.New("no cell today") }
	for _, tc := range []struct {
		name string
		edit func(c *train.Config, o *train.Options)
		f    train.CellFunc
		want string
	}{
		{"nil", nil, nil, "newCell is nil"},
		{"gamma", func(c *train.Config, _ *train.Options) { c.Model.Gamma = 0.5 }, tanhGraphCell, "Model.Gamma"},
		{"cell", func(c *train.Config, _ *train.Options) { c.Model.Cell = train.ExpertsCell }, tanhGraphCell, "Model.Cell"},
		{"terms", func(c *train.Config, _ *train.Options) { c.Model.Terms = 4 }, tanhGraphCell, "Model.Terms"},
		{"shape", nil, wrongShape, "want Model.Encoder = 8 and Model.Hidden = 8"},
		{"error", nil, failing, "no cell today"},
		// The GraphCell proves no bound: the stochastic solver is refused
		// rather than run on a bound nothing proves.
		{"unproven", func(c *train.Config, _ *train.Options) { c.Forward.Method = methodOf(t, solver.VRGHAL{}) }, tanhGraphCell, "needs a proven Lipschitz bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, opts := base, &train.Options{}
			if tc.edit != nil {
				tc.edit(&cfg, opts)
			}
			_, err := train.NewWithCell(cfg, tc.f, data.Train, data.Test, opts)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// termsGraphCell returns a stochastic GraphCell, the average of 16 terms
// tanh(zW_j + x) with diagonal W_j of entries in [−0.5, 0.5]: every term is
// 0.5-Lipschitz in ℓ∞, which the cell proves, so VR-GHAL may sample it.
func termsGraphCell(input, hidden int, _ uint64) (layers.Cell, error) {
	const m = 16
	w := make([]float64, m*hidden*hidden)
	for j := range m {
		for i := range hidden {
			w[j*hidden*hidden+i*hidden+i] = 0.5 * math.Sin(float64(j*hidden+i))
		}
	}
	return layers.NewGraphCell(layers.GraphCellConfig{
		Shape:  layers.Shape{Hidden: hidden, Input: input},
		Params: []layers.ParamSpec{{Name: "W", Rows: hidden, Cols: hidden, PerTerm: true, Init: w}},
		Build: func(_ *G.ExprGraph, z, x *G.Node, p []*G.Node) (*G.Node, error) {
			zw, err := G.Mul(z, p[0])
			if err != nil {
				return nil, err
			}
			pre, err := G.Add(zw, x)
			if err != nil {
				return nil, err
			}
			return G.Tanh(pre)
		},
		Terms: m,
		Model: solver.SamplewiseLipschitz,
		Gamma: 0.5,
		Proven: func(n solver.Norm) bool {
			if b, ok := n.(*solver.Batched); ok {
				n = b.Example
			}
			_, ok := n.(solver.LInf)
			return ok
		},
		Project: func(ps []*layers.Param) error {
			// Keep every W_j diagonal with entries in [−0.5, 0.5],
			// the form whose ℓ∞ bound Proven claims.
			w := ps[0].Data()
			for k := range w {
				i, j := (k/hidden)%hidden, k%hidden
				if i != j {
					w[k] = 0
				} else {
					w[k] = max(-0.5, min(0.5, w[k]))
				}
			}
			return nil
		},
	})
}

// TestNewWithCellStochasticGraphCell trains a stochastic GraphCell for one
// epoch with VR-GHAL, which samples its terms.
func TestNewWithCellStochasticGraphCell(t *testing.T) {
	data := customData(t)
	linf, err := solver.ParseNormSpec("linf")
	require.NoError(t, err)
	cfg := train.Config{
		Epochs: 1, BatchSize: 32, LR: 1e-2, Seed: 3,
		Model:   train.ModelConfig{Hidden: 8, Norm: linf},
		Forward: train.SolverConfig{Method: methodOf(t, solver.VRGHAL{}), Tol: 1e-2},
	}
	tr, err := train.NewWithCell(cfg, termsGraphCell, data.Train, data.Test, nil)
	require.NoError(t, err)
	res, err := tr.Run(context.Background())
	require.NoError(t, err)
	e := res.Final()
	require.Equal(t, 4, e.Batches)
	require.Zero(t, e.Skipped)
	require.Less(t, e.FwdSamplesMean, 16*e.FwdCallsMean, "VR-GHAL samples fewer terms per call than the 16 of the exact average")
}
