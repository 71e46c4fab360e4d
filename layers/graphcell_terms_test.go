package layers_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/deqtest"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// provesLInf reports whether n is the per-example ℓ∞ norm.
func provesLInf(n solver.Norm) bool {
	if b, ok := n.(*solver.Batched); ok {
		n = b.Example
	}
	switch n := n.(type) {
	case solver.LInf:
		return true
	case solver.LP:
		return math.IsInf(n.P(), 1)
	}
	return false
}

// projectColumns scales every column of every h×h block of w to an ℓ1 norm
// of at most gamma, which makes z ↦ tanh(zW_j + c) gamma-Lipschitz in ℓ∞.
func projectColumns(w []float64, h int, gamma float64) {
	for blk := 0; blk < len(w); blk += h * h {
		for k := range h {
			s := 0.0
			for i := range h {
				s += math.Abs(w[blk+i*h+k])
			}
			for i := range h {
				if s > gamma {
					w[blk+i*h+k] *= gamma / s
				}
			}
		}
	}
}

// termsCell returns the stochastic GraphCell f(z, x) = (1/M) Σ_j tanh(zW_j
// + xU + b) with W_j a PerTerm parameter and U, b shared: every term is
// γ-Lipschitz in ℓ∞ after the projection, so the sampled oracle is
// samplewise Lipschitz.
func termsCell(t testing.TB, h, d, m int, seed uint64) *layers.GraphCell {
	t.Helper()
	const gamma = 0.5
	rng := rand.New(rand.NewPCG(seed, 7))
	normal := func(n int, sd float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = sd * rng.NormFloat64()
		}
		return x
	}
	w := normal(m*h*h, 1)
	projectColumns(w, h, gamma)
	c, err := layers.NewGraphCell(layers.GraphCellConfig{
		Shape: layers.Shape{Hidden: h, Input: d},
		Params: []layers.ParamSpec{
			{Name: "W", Rows: h, Cols: h, PerTerm: true, Init: w},
			{Name: "U", Rows: d, Cols: h, Init: normal(d*h, 1)},
			{Name: "b", Rows: 1, Cols: h, Init: normal(h, 0.5)},
		},
		Build: func(_ *G.ExprGraph, z, x *G.Node, p []*G.Node) (*G.Node, error) {
			pre := G.Must(G.Add(G.Must(G.Mul(z, p[0])), G.Must(G.Mul(x, p[1]))))
			pre = G.Must(G.BroadcastAdd(pre, p[2], nil, []byte{0}))
			return G.Tanh(pre)
		},
		Terms:  m,
		Model:  solver.SamplewiseLipschitz,
		Gamma:  gamma,
		Proven: provesLInf,
		Project: func(ps []*layers.Param) error {
			projectColumns(ps[0].Data(), h, gamma)
			return nil
		},
	})
	require.NoError(t, err)
	return c
}

// TestGraphCellTermsCheckCell runs deqtest's checks on a stochastic
// GraphCell: the sampled oracle is unbiased, the VJPs match finite
// differences, the bound holds for the exact and the sampled map, and a
// stochastic solve lands within its certificate.
func TestGraphCellTermsCheckCell(t *testing.T) {
	for _, m := range []int{2, 5} {
		deqtest.CheckCell(t, termsCell(t, 3, 2, m, uint64(m)), &deqtest.Options{Seed: uint64(m), Points: 2, Draws: 4000})
	}
}

// TestGraphCellTermsValues compares the cell with the average written out:
// the exact map is the mean of the M terms, and a Sample of one unit draws
// one of them.
func TestGraphCellTermsValues(t *testing.T) {
	const h, d, m, n = 3, 2, 4, 2
	c := termsCell(t, h, d, m, 1)
	ev, err := c.Evaluator(n)
	require.NoError(t, err)
	require.Equal(t, m, ev.Terms())
	require.Equal(t, solver.SamplewiseLipschitz, ev.Model())
	rng := rand.New(rand.NewPCG(2, 2))
	x, z := make([]float64, n*d), make([]float64, n*h)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	require.NoError(t, ev.SetInput(x))
	ps := c.Params()
	w, u, b := ps[0].Data(), ps[1].Data(), ps[2].Data()
	require.Len(t, w, m*h*h)
	term := func(j int) []float64 {
		out := make([]float64, n*h)
		for r := range n {
			for k := range h {
				s := b[k]
				for i := range h {
					s += z[r*h+i] * w[j*h*h+i*h+k]
				}
				for i := range d {
					s += x[r*d+i] * u[i*h+k]
				}
				out[r*h+k] = math.Tanh(s)
			}
		}
		return out
	}
	want := make([]float64, n*h)
	for j := range m {
		for i, v := range term(j) {
			want[i] += v / m
		}
	}
	got := make([]float64, n*h)
	require.NoError(t, ev.EvalExact(got, z))
	require.InDeltaSlice(t, want, got, 1e-12)
	k, err := ev.Eval(got, z, solver.Sample{Seed: 5, Size: m})
	require.NoError(t, err)
	require.Equal(t, m, k)
	require.InDeltaSlice(t, want, got, 1e-12)
	seen := map[int]bool{}
	for seed := range uint64(32) {
		k, err := ev.Eval(got, z, solver.Sample{Seed: seed, Size: 1})
		require.NoError(t, err)
		require.Equal(t, 1, k)
		match := -1
		for j := range m {
			if floatsClose(term(j), got, 1e-12) {
				match = j
			}
		}
		require.GreaterOrEqual(t, match, 0, "seed %d: a one-unit sample is one of the terms", seed)
		seen[match] = true
	}
	require.Len(t, seen, m, "32 draws of 4 terms reach every term")
}

func floatsClose(a, b []float64, tol float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

func TestGraphCellTermsConfigErrors(t *testing.T) {
	build := func(_ *G.ExprGraph, z, _ *G.Node, p []*G.Node) (*G.Node, error) { return G.Mul(z, p[0]) }
	for _, tc := range []struct {
		cfg  layers.GraphCellConfig
		want string
	}{
		{layers.GraphCellConfig{Terms: -1}, "Terms = -1"},
		{layers.GraphCellConfig{Model: solver.SamplewiseLipschitz}, "applies only to a cell of Terms > 1"},
		{layers.GraphCellConfig{Terms: 2, Model: solver.Deterministic}, "not the model of a sampled oracle"},
		{layers.GraphCellConfig{Terms: 3, Params: []layers.ParamSpec{{Name: "W", Rows: 2, Cols: 2, PerTerm: true, Init: make([]float64, 4)}}}, "Init has length 4, want 12"},
	} {
		cfg := tc.cfg
		cfg.Shape, cfg.Build, cfg.Gamma = layers.Shape{Hidden: 2, Input: 1}, build, 0.5
		_, err := layers.NewGraphCell(cfg)
		require.ErrorContains(t, err, tc.want)
	}
}
