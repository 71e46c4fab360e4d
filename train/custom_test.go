package train_test

import (
	"context"
	"errors"
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

func methodOf(t *testing.T, m solver.Method) train.Method {
	t.Helper()
	method, err := train.MethodOf(m)
	require.NoError(t, err)
	return method
}

// TestNewWithCellGraphCell trains a GraphCell for one epoch: its parameter
// changes, the run is reproducible and Save refuses the model.
func TestNewWithCellGraphCell(t *testing.T) {
	data := customData(t)
	cfg := train.Config{
		Epochs: 1, BatchSize: 32, LR: 1e-2, Seed: 3,
		Model:   train.ModelConfig{Hidden: 8},
		Forward: train.SolverConfig{Method: methodOf(t, solver.Broyden{}), Tol: 1e-4},
	}
	var losses []float64
	for range 2 {
		tr, err := train.NewWithCell(cfg, tanhGraphCell, data.Train, data.Test, nil)
		require.NoError(t, err)
		w0 := append([]float64(nil), tr.Model().Cell().Params()[0].Data()...)
		res, err := tr.Run(context.Background())
		require.NoError(t, err)
		e := res.Final()
		require.Equal(t, 4, e.Batches)
		require.Zero(t, e.Skipped)
		require.NotEqual(t, w0, tr.Model().Cell().Params()[0].Data(), "the cell's parameter is trained")
		losses = append(losses, e.TrainLoss)
		err = tr.Save(filepath.Join(t.TempDir(), "ck"))
		require.ErrorIs(t, err, train.ErrCustomCell)
	}
	require.Equal(t, losses[0], losses[1], "the same seed gives the same run")
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
		{"checkpoint", func(_ *train.Config, o *train.Options) { o.Checkpoint = "ck" }, tanhGraphCell, "Options.Checkpoint"},
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
