package datasets

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// epochIndices runs one epoch and returns the dataset indices of each batch,
// checking every row against the dataset.
func epochIndices(t *testing.T, b *Batcher, d *Dataset, epoch int) [][]int {
	t.Helper()
	b.Reset(epoch)
	var out [][]int
	for b.Next() {
		bt := b.Batch()
		r, c := bt.X.Dims()
		require.Equal(t, [2]int{bt.Len(), d.Dim()}, [2]int{r, c}, "batch X shape")
		for i, idx := range bt.Index {
			require.Equal(t, d.Image(idx), bt.X.RawRowView(i), "row %d is not image %d", i, idx)
			require.Equal(t, d.Y[idx], bt.Labels[i], "label of row %d", i)
			for k := 0; k < d.Classes; k++ {
				want := 0.0
				if k == d.Y[idx] {
					want = 1
				}
				require.Equal(t, want, bt.OneHot.At(i, k), "one-hot row %d = %v, label %d", i, bt.OneHot.RawRowView(i), d.Y[idx])
			}
		}
		out = append(out, slices.Clone(bt.Index))
	}
	require.Nil(t, b.Batch(), "Batch() after the last Next")
	return out
}

// identity returns 0, 1, …, n−1.
func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

func TestBatcherOrderAndPartial(t *testing.T) {
	d := tiny(10, 3)
	for _, tc := range []struct {
		name  string
		size  int
		opts  *BatchOptions
		sizes []int
	}{
		{"keep last", 4, nil, []int{4, 4, 2}},
		{"drop last", 4, &BatchOptions{DropLast: true}, []int{4, 4}},
		{"exact", 5, &BatchOptions{DropLast: true}, []int{5, 5}},
		{"larger than set", 64, nil, []int{10}},
		{"one", 1, nil, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewBatcher(d, tc.size, tc.opts)
			require.NoError(t, err)
			require.Equal(t, len(tc.sizes), b.Batches(), "Batches()")
			for epoch := 0; epoch < 2; epoch++ {
				var flat, sizes []int
				for _, idx := range epochIndices(t, b, d, epoch) {
					sizes = append(sizes, len(idx))
					flat = append(flat, idx...)
				}
				require.Equal(t, tc.sizes, sizes, "epoch %d: batch sizes", epoch)
				require.Equal(t, identity(len(flat)), flat, "epoch %d: unshuffled order", epoch)
			}
		})
	}
}

func TestBatcherShuffle(t *testing.T) {
	d := tiny(23, 4)
	opts := &BatchOptions{Shuffle: true, Seed: 3}
	b, err := NewBatcher(d, 5, opts)
	require.NoError(t, err)
	b2, err := NewBatcher(d, 5, opts)
	require.NoError(t, err)
	var perms [][]int
	for epoch := 0; epoch < 3; epoch++ {
		flat := slices.Concat(epochIndices(t, b, d, epoch)...)
		again := slices.Concat(epochIndices(t, b2, d, epoch)...)
		require.Equal(t, flat, again, "epoch %d: two batchers with one seed disagree", epoch)
		require.Equal(t, identity(23), slices.Sorted(slices.Values(flat)), "epoch %d does not visit each image once", epoch)
		perms = append(perms, flat)
	}
	// 23! permutations: a repeat or the identity means the shuffle is broken.
	require.NotEqual(t, perms[0], perms[1], "epochs 0 and 1 are not reshuffled")
	require.NotEqual(t, perms[1], perms[2], "epochs 1 and 2 are not reshuffled")
	require.NotEqual(t, identity(23), perms[0], "epoch 0 is not shuffled")
	// Reset replays an epoch exactly.
	require.Equal(t, perms[1], slices.Concat(epochIndices(t, b, d, 1)...), "Reset(1) did not replay epoch 1")
}

func TestBatcherErrors(t *testing.T) {
	d := tiny(10, 3)
	_, err := NewBatcher(d, 0, nil)
	require.Error(t, err, "batch size 0 accepted")
	_, err = NewBatcher(d, 11, &BatchOptions{DropLast: true})
	require.Error(t, err, "DropLast with a batch larger than the set accepted")
	_, err = NewBatcher(d.Subset("empty", nil), 4, nil)
	require.Error(t, err, "empty set accepted")
	bad := tiny(4, 2)
	bad.Y[0] = 5
	_, err = NewBatcher(bad, 2, nil)
	require.Error(t, err, "inconsistent set accepted")
}

// TestBatcherNoAllocs checks that Reset and Next reuse their storage.
func TestBatcherNoAllocs(t *testing.T) {
	d := tiny(103, 10)
	b, err := NewBatcher(d, 10, &BatchOptions{Shuffle: true, Seed: 1})
	require.NoError(t, err)
	epoch := 0
	allocs := testing.AllocsPerRun(20, func() {
		b.Reset(epoch)
		for b.Next() {
		}
		epoch++
	})
	require.Zero(t, allocs, "allocations per epoch")
}

// BenchmarkBatcherNext measures one 128×784 batch of shuffled synthetic
// digits; run with -benchmem to see 0 allocs/op.
func BenchmarkBatcherNext(b *testing.B) { benchBatcher(b, 128) }

func benchBatcher(b *testing.B, size int) {
	d := &Dataset{Name: "bench", Rows: 28, Cols: 28, Classes: 10, X: make([]float64, 4096*784), Y: make([]int, 4096)}
	for i := range d.Y {
		d.Y[i] = i % 10
	}
	bt, err := NewBatcher(d, size, &BatchOptions{Shuffle: true, Seed: 1})
	require.NoError(b, err)
	b.ReportAllocs()
	epoch := 0
	for b.Loop() {
		if !bt.Next() {
			epoch++
			bt.Reset(epoch)
			bt.Next()
		}
	}
}
