package layers

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/solver"
)

// twoLayerCell returns a GraphCell computing
// tanh(zW + xU + b)·V + x·S, with Rows rows per example: a smooth map with
// several parameters, each used once, and x entering twice.
func twoLayerCell(t *testing.T, rows int) *GraphCell {
	t.Helper()
	const h, d, k = 3, 2, 4
	init := func(n int, sd float64, seed uint64) []float64 {
		return randVec(rand.New(rand.NewPCG(seed, 1)), n, sd)
	}
	c, err := NewGraphCell(GraphCellConfig{
		Shape: Shape{Rows: rows, Hidden: h, Input: d},
		Params: []ParamSpec{
			{Name: "W", Rows: h, Cols: k, Init: init(h*k, 0.5, 1)},
			{Name: "U", Rows: d, Cols: k, Init: init(d*k, 0.5, 2)},
			{Name: "b", Rows: 1, Cols: k, Init: init(k, 0.5, 3)},
			{Name: "V", Rows: k, Cols: h, Init: init(k*h, 0.5, 4)},
			{Name: "S", Rows: d, Cols: h, Init: init(d*h, 0.5, 5)},
		},
		Build: func(_ *G.ExprGraph, z, x *G.Node, p []*G.Node) (*G.Node, error) {
			pre := G.Must(G.Add(G.Must(G.Mul(z, p[0])), G.Must(G.Mul(x, p[1]))))
			pre = G.Must(G.BroadcastAdd(pre, p[2], nil, []byte{0}))
			return G.Add(G.Must(G.Mul(G.Must(G.Tanh(pre)), p[3])), G.Must(G.Mul(x, p[4])))
		},
		Gamma: 0.9,
	})
	require.NoError(t, err)
	return c
}

func TestGraphCellVJPMatchesFiniteDifferences(t *testing.T) {
	for _, rows := range []int{1, 2} {
		for _, n := range []int{1, 3} {
			c := twoLayerCell(t, rows)
			tc := testCell{"graphcell", c, n}
			t.Run("", func(t *testing.T) {
				checkVJPFiniteDifferences(t, tc)
				e, _, z, _ := setup(t, tc, 1)
				// The graph is the forward path: Eval, EvalExact and
				// EvalGraph agree exactly, and the cell is deterministic.
				a := make([]float64, len(z))
				b := make([]float64, len(z))
				require.NoError(t, e.EvalExact(a, z))
				require.NoError(t, e.(GraphEvaluator).EvalGraph(b, z))
				require.Equal(t, a, b)
				k, err := e.Eval(b, z, solver.Sample{Seed: 9, Size: 5})
				require.NoError(t, err)
				require.Equal(t, 1, k)
				require.Equal(t, a, b)
				require.Equal(t, 1, e.Terms())
				require.Equal(t, solver.Deterministic, e.Model())
			})
		}
	}
}

func TestGraphCellConfig(t *testing.T) {
	build := func(_ *G.ExprGraph, z, _ *G.Node, p []*G.Node) (*G.Node, error) { return G.Mul(z, p[0]) }
	ok := GraphCellConfig{
		Shape:  Shape{Hidden: 2, Input: 1},
		Params: []ParamSpec{{Name: "W", Rows: 2, Cols: 2}},
		Build:  build,
		Gamma:  0.5,
	}
	for _, tc := range []struct {
		edit func(*GraphCellConfig)
		want string
	}{
		{func(c *GraphCellConfig) { c.Shape.Hidden = 0 }, "GraphCellConfig.Shape.Hidden"},
		{func(c *GraphCellConfig) { c.Shape.Input = 0 }, "GraphCellConfig.Shape.Input"},
		{func(c *GraphCellConfig) { c.Build = nil }, "GraphCellConfig.Build"},
		{func(c *GraphCellConfig) { c.Gamma = 0 }, "GraphCellConfig.Gamma"},
		{func(c *GraphCellConfig) { c.Gamma = math.Inf(1) }, "GraphCellConfig.Gamma"},
		{func(c *GraphCellConfig) { c.Params[0].Name = "" }, "Params[0].Name"},
		{func(c *GraphCellConfig) { c.Params[0].Cols = 0 }, "Params[0]"},
		{func(c *GraphCellConfig) { c.Params[0].Init = []float64{1} }, "Params[0].Init"},
		{func(c *GraphCellConfig) { c.Params = append(c.Params, ParamSpec{Name: "W", Rows: 1, Cols: 1}) }, "not unique"},
	} {
		cfg := ok
		cfg.Params = append([]ParamSpec(nil), ok.Params...)
		tc.edit(&cfg)
		_, err := NewGraphCell(cfg)
		require.ErrorContains(t, err, tc.want)
	}

	// Errors of the expression are reported by Evaluator.
	for _, tc := range []struct {
		build func(*G.ExprGraph, *G.Node, *G.Node, []*G.Node) (*G.Node, error)
		want  string
	}{
		{func(*G.ExprGraph, *G.Node, *G.Node, []*G.Node) (*G.Node, error) { return nil, errors.New("boom") }, "boom"},
		{func(*G.ExprGraph, *G.Node, *G.Node, []*G.Node) (*G.Node, error) { return nil, nil }, "nil node"},
		{func(_ *G.ExprGraph, _, x *G.Node, _ []*G.Node) (*G.Node, error) { return x, nil }, "want float64"},
		{func(_ *G.ExprGraph, z, x *G.Node, _ []*G.Node) (*G.Node, error) { return G.Mul(z, x) }, "GraphCell"},
		// The output must depend on x and on every parameter.
		{build, "Non Differentiable"},
	} {
		cfg := ok
		cfg.Build = tc.build
		c, err := NewGraphCell(cfg)
		require.NoError(t, err)
		_, err = c.Evaluator(3)
		require.ErrorContains(t, err, tc.want)
	}

	// Project and Proven are the user's hooks; nil means a no-op and never.
	l2, err := solver.NewLP(2, 2)
	require.NoError(t, err)
	c, err := NewGraphCell(ok)
	require.NoError(t, err)
	require.NoError(t, c.Project())
	require.False(t, c.Proven(l2))
	require.Equal(t, 0.5, c.Gamma())
	cfg := ok
	projected := 0
	cfg.Project = func(ps []*Param) error { projected += len(ps); return nil }
	cfg.Proven = func(solver.Norm) bool { return true }
	c, err = NewGraphCell(cfg)
	require.NoError(t, err)
	require.NoError(t, c.Project())
	require.Equal(t, 1, projected)
	require.True(t, c.Proven(l2))
	_, err = c.Evaluator(0)
	require.ErrorContains(t, err, "batch size")
}
