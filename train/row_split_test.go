package train

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
)

// TestRowSplitMatchesOneCall checks the encoder's products split between
// goroutines (rowSplit) against one call on the whole matrices, in both
// precisions, at a size above splitMin: the forward product by the
// batch's rows and the weight gradient by the weight's rows.
func TestRowSplitMatchesOneCall(t *testing.T) {
	const n, in, out = 64, 784, 128 // 6.4M multiply–adds, above splitMin
	r := newRowSplit()
	if r == nil {
		t.Skip("one core: nothing to split")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(v []float64) {
		for i := range v {
			v[i] = rng.NormFloat64()
		}
	}
	for _, f32 := range []bool{false, true} {
		w, b := newParam("W", in, out, true), newParam("b", 1, out, false)
		fill(w.data)
		fill(b.data)
		x, g := make([]float64, n*in), make([]float64, n*out)
		fill(x)
		fill(g)
		var s1, s2 *work32
		tol := 1e-12
		if f32 {
			s1, s2, tol = new(work32), new(work32), 1e-5
		}
		one, split := make([]float64, n*out), make([]float64, n*out)
		affine(one, n, x, w, b, s1, opEncoder, nil)
		affine(split, n, x, w, b, s2, opEncoder, r)
		requireNear(t, one, split, tol, "forward")

		affineBackward(nil, n, x, g, w, b, s1, opEncoder, nil)
		gOne, bOne := slices.Clone(w.grad), slices.Clone(b.grad)
		clear(w.grad)
		clear(b.grad)
		affineBackward(nil, n, x, g, w, b, s2, opEncoder, r)
		requireNear(t, gOne, w.grad, tol, "weight gradient")
		require.Equal(t, bOne, b.grad, "the bias gradient is summed on one goroutine")
	}
}

// TestRowSplitAllocatesNothing runs the split products at a size where
// the pure-Go BLAS stays on one goroutine (and allocates nothing), with
// the split forced below splitMin: the split itself allocates nothing.
func TestRowSplitAllocatesNothing(t *testing.T) {
	const n, in, out = 16, 24, 8
	r := newRowSplit()
	if r == nil {
		t.Skip("one core: nothing to split")
	}
	r.min = 0
	w, b := newParam("W", in, out, true), newParam("b", 1, out, false)
	x, g, y := make([]float64, n*in), make([]float64, n*out), make([]float64, n*out)
	for i := range x {
		x[i] = float64(i%7) - 3
	}
	for i := range g {
		g[i] = float64(i%5) - 2
	}
	for _, s := range []*work32{nil, new(work32)} {
		pass := func() {
			affine(y, n, x, w, b, s, opEncoder, r)
			affineBackward(nil, n, x, g, w, b, s, opEncoder, r)
		}
		pass() // grows the float32 scratch
		require.Zero(t, testing.AllocsPerRun(10, pass), "float32 scratch: %v", s != nil)
	}
}

// requireNear checks got against want entry by entry, within tol relative
// to the largest entry of want.
func requireNear(t *testing.T, want, got []float64, tol float64, what string) {
	t.Helper()
	scale := 1.0
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	for i := range want {
		require.InDelta(t, want[i], got[i], tol*scale, "%s[%d]", what, i)
	}
}

// TestAdamSplitIsBitForBit checks that an Update split between goroutines
// computes what one goroutine does, bit for bit: every element's update
// reads and writes that element only, with the same operations.
func TestAdamSplitIsBitForBit(t *testing.T) {
	sizes := []int{30000, 7, 9000} // 39,007 elements, above adamSplitMin
	one, split := NewAdam(1e-3), NewAdam(1e-3)
	splitAdam(split)
	if split.split == nil {
		t.Skip("one core: nothing to split")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func() [][]float64 {
		var v [][]float64
		for _, n := range sizes {
			v = append(v, make([]float64, n))
		}
		return v
	}
	w1, w2 := mk(), mk()
	for step := range 3 {
		g1, g2 := mk(), mk()
		for i := range g1 {
			for j := range g1[i] {
				g1[i][j] = rng.NormFloat64()
				g2[i][j] = g1[i][j]
			}
		}
		require.NoError(t, one.Update(w1, g1))
		require.NoError(t, split.Update(w2, g2))
		require.Equal(t, w1, w2, "step %d", step)
		require.Equal(t, g1, g2, "gradients zeroed")
	}
	require.Equal(t, one.State(), split.State())
	g := mk()
	require.Zero(t, testing.AllocsPerRun(10, func() { require.NoError(t, split.Update(w2, g)) }))
}

// TestAdamUpdateThen checks the overlapped update: the parameters end as
// Update leaves them, bit for bit, then runs once, after the tail's
// update (it sees the updated tail), and its error is returned.
func TestAdamUpdateThen(t *testing.T) {
	sizes := []int{30000, 9000, 16384} // the tail: the last parameter
	one, over := NewAdam(1e-3), NewAdam(1e-3)
	splitAdam(over)
	if over.split == nil {
		t.Skip("one core: nothing to overlap")
	}
	mk := func(seed uint64) [][]float64 {
		rng := rand.New(rand.NewPCG(seed, 5))
		var v [][]float64
		for _, n := range sizes {
			s := make([]float64, n)
			for i := range s {
				s[i] = rng.NormFloat64()
			}
			v = append(v, s)
		}
		return v
	}
	w1, w2 := mk(1), mk(1)
	for step := range 3 {
		g1, g2 := mk(uint64(10+step)), mk(uint64(10+step))
		require.NoError(t, one.Update(w1, g1))
		runs := 0
		var seen []float64
		err := over.updateThen(w2, g2, 2, func() error {
			runs++
			seen = slices.Clone(w2[2])
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 1, runs)
		require.Equal(t, w1[2], seen, "then sees the tail updated")
		require.Equal(t, w1, w2, "step %d", step)
	}
	// k = 0: every parameter is updated before then runs.
	g1, g2 := mk(30), mk(30)
	require.NoError(t, one.Update(w1, g1))
	var seen [][]float64
	require.NoError(t, over.updateThen(w2, g2, 0, func() error {
		for _, w := range w2 {
			seen = append(seen, slices.Clone(w))
		}
		return nil
	}))
	require.Equal(t, w1, seen, "then sees every parameter updated")
	g := mk(20)
	err := over.updateThen(w2, g, 2, func() error { return errors.New("projection failed") })
	require.ErrorContains(t, err, "projection failed")
}

// TestCellTail checks that the trainer finds the cell's parameters at the
// end of the model's, for the dense and conv models, and refuses a list
// that does not end with them.
func TestCellTail(t *testing.T) {
	for _, tc := range []struct {
		cell CellKind
		data func() (train, test *datasets.Dataset)
	}{
		{DenseCell, func() (train, test *datasets.Dataset) { return blobData(64, 30) }},
		{ConvCell, func() (train, test *datasets.Dataset) {
			return squares("squares/train", 32, 8, 1), squares("squares/test", 16, 8, 2)
		}},
	} {
		cfg := tinyConfig()
		cfg.Model = ModelConfig{Cell: tc.cell}
		if tc.cell == ConvCell {
			cfg.BatchSize, cfg.Model.Channels = 16, 4
		}
		tr, te := tc.data()
		trn, err := New(cfg, tr, te, nil)
		require.NoError(t, err)
		ps := trn.model.cell.Params()
		require.Equal(t, len(trn.vals)-len(ps), trn.cellFrom, "%v", tc.cell)
		require.Zero(t, cellTail(trn.vals[:len(trn.vals)-1], ps))
	}
}
