package datasets

import (
	"slices"
	"testing"
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
		if r != bt.Len() || c != d.Dim() {
			t.Fatalf("batch X is %d×%d, want %d×%d", r, c, bt.Len(), d.Dim())
		}
		for i, idx := range bt.Index {
			if !slices.Equal(bt.X.RawRowView(i), d.Image(idx)) {
				t.Fatalf("row %d is not image %d", i, idx)
			}
			if bt.Labels[i] != d.Y[idx] {
				t.Fatalf("label of row %d is %d, want %d", i, bt.Labels[i], d.Y[idx])
			}
			for k := 0; k < d.Classes; k++ {
				want := 0.0
				if k == d.Y[idx] {
					want = 1
				}
				if bt.OneHot.At(i, k) != want {
					t.Fatalf("one-hot row %d = %v, label %d", i, bt.OneHot.RawRowView(i), d.Y[idx])
				}
			}
		}
		out = append(out, slices.Clone(bt.Index))
	}
	if b.Batch() != nil {
		t.Error("Batch() after the last Next is not nil")
	}
	return out
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
			if err != nil {
				t.Fatal(err)
			}
			if b.Batches() != len(tc.sizes) {
				t.Errorf("Batches() = %d, want %d", b.Batches(), len(tc.sizes))
			}
			for epoch := 0; epoch < 2; epoch++ {
				var flat, sizes []int
				for _, idx := range epochIndices(t, b, d, epoch) {
					sizes = append(sizes, len(idx))
					flat = append(flat, idx...)
				}
				if !slices.Equal(sizes, tc.sizes) {
					t.Errorf("epoch %d: batch sizes %v, want %v", epoch, sizes, tc.sizes)
				}
				for i, idx := range flat {
					if idx != i {
						t.Fatalf("epoch %d: unshuffled order %v", epoch, flat)
					}
				}
			}
		})
	}
}

func TestBatcherShuffle(t *testing.T) {
	d := tiny(23, 4)
	opts := &BatchOptions{Shuffle: true, Seed: 3}
	b, _ := NewBatcher(d, 5, opts)
	b2, _ := NewBatcher(d, 5, opts)
	var perms [][]int
	for epoch := 0; epoch < 3; epoch++ {
		var flat []int
		for _, idx := range epochIndices(t, b, d, epoch) {
			flat = append(flat, idx...)
		}
		var again []int
		for _, idx := range epochIndices(t, b2, d, epoch) {
			again = append(again, idx...)
		}
		if !slices.Equal(flat, again) {
			t.Errorf("epoch %d: two batchers with one seed disagree", epoch)
		}
		sorted := slices.Sorted(slices.Values(flat))
		for i, v := range sorted {
			if v != i {
				t.Fatalf("epoch %d does not visit each image once: %v", epoch, flat)
			}
		}
		perms = append(perms, flat)
	}
	// 23! permutations: a repeat or the identity means the shuffle is broken.
	identity := make([]int, 23)
	for i := range identity {
		identity[i] = i
	}
	if slices.Equal(perms[0], perms[1]) || slices.Equal(perms[1], perms[2]) || slices.Equal(perms[0], identity) {
		t.Errorf("epochs are not reshuffled: %v", perms)
	}
	// Reset replays an epoch exactly.
	var replay []int
	for _, idx := range epochIndices(t, b, d, 1) {
		replay = append(replay, idx...)
	}
	if !slices.Equal(replay, perms[1]) {
		t.Error("Reset(1) did not replay epoch 1")
	}
}

func TestBatcherErrors(t *testing.T) {
	d := tiny(10, 3)
	if _, err := NewBatcher(d, 0, nil); err == nil {
		t.Error("batch size 0 accepted")
	}
	if _, err := NewBatcher(d, 11, &BatchOptions{DropLast: true}); err == nil {
		t.Error("DropLast with a batch larger than the set accepted")
	}
	if _, err := NewBatcher(d.Subset("empty", nil), 4, nil); err == nil {
		t.Error("empty set accepted")
	}
	bad := tiny(4, 2)
	bad.Y[0] = 5
	if _, err := NewBatcher(bad, 2, nil); err == nil {
		t.Error("inconsistent set accepted")
	}
}

// TestBatcherNoAllocs checks that Reset and Next reuse their storage.
func TestBatcherNoAllocs(t *testing.T) {
	d := tiny(103, 10)
	b, err := NewBatcher(d, 10, &BatchOptions{Shuffle: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	epoch := 0
	allocs := testing.AllocsPerRun(20, func() {
		b.Reset(epoch)
		for b.Next() {
		}
		epoch++
	})
	if allocs != 0 {
		t.Errorf("%v allocations per epoch, want 0", allocs)
	}
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
	if err != nil {
		b.Fatal(err)
	}
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
