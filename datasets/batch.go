package datasets

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// BatchOptions control a Batcher. The zero value (and a nil *BatchOptions)
// delivers the images in order and keeps the last partial batch.
type BatchOptions struct {
	// Shuffle permutes the images at every epoch, with a permutation drawn
	// from (Seed, epoch) alone: the same seed and epoch give the same batches.
	Shuffle bool
	// Seed seeds the shuffles.
	Seed uint64
	// DropLast drops the last batch of an epoch when it has fewer than the
	// batch size images (Len() mod size ≠ 0). By default it is delivered,
	// with fewer rows, so that an epoch visits every image exactly once.
	DropLast bool
}

// Batch is one minibatch. Its matrices and slices belong to the Batcher and
// are overwritten by the next call to Next.
type Batch struct {
	// X holds one image per row (Len()×Dim of the dataset).
	X *mat.Dense
	// Labels holds the class of each row.
	Labels []int
	// OneHot holds the one-hot encoding of Labels (Len()×Classes).
	OneHot *mat.Dense
	// Index holds the dataset index of each row.
	Index []int
}

// Len returns the number of images in the batch.
func (b *Batch) Len() int { return len(b.Labels) }

// Batcher delivers a Dataset in minibatches, reusing preallocated storage:
// after NewBatcher, Reset and Next allocate nothing.
//
//	bt, _ := NewBatcher(train, 128, &BatchOptions{Shuffle: true, Seed: 1})
//	for epoch := 0; epoch < epochs; epoch++ {
//		bt.Reset(epoch)
//		for bt.Next() {
//			b := bt.Batch() // b.X is b.Len()×784
//		}
//	}
//
// A Batcher is not safe for concurrent use; the Dataset must not change
// while it is in use.
type Batcher struct {
	d        *Dataset
	size     int
	opts     BatchOptions
	perm     []int
	pos      int
	full     Batch
	partial  Batch // shares storage with full; nil X when Len() mod size == 0
	cur      *Batch
	pcg      rand.PCG
	rng      *rand.Rand
	nBatches int
}

// NewBatcher returns a Batcher over d delivering batches of size images,
// positioned at the start of epoch 0. It returns an error if size < 1, d is
// empty or inconsistent (see Dataset.Validate: a NaN or ±Inf pixel among
// others), or DropLast leaves no batch at all.
func NewBatcher(d *Dataset, size int, opts *BatchOptions) (*Batcher, error) {
	if size < 1 {
		return nil, fmt.Errorf("datasets: batch size %d < 1", size)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	n := d.Len()
	if n == 0 {
		return nil, fmt.Errorf("datasets: %s: cannot batch an empty dataset", d.Name)
	}
	b := &Batcher{d: d, size: size, perm: make([]int, n)}
	if opts != nil {
		b.opts = *opts
	}
	if b.opts.DropLast && size > n {
		return nil, fmt.Errorf("datasets: %s: DropLast with batch size %d > %d images leaves no batch", d.Name, size, n)
	}
	b.rng = rand.New(&b.pcg)
	size = min(size, n)
	b.size = size
	dim, k := d.Dim(), d.Classes
	x := make([]float64, size*dim)
	oh := make([]float64, size*k)
	labels := make([]int, size)
	index := make([]int, size)
	b.full = Batch{X: mat.NewDense(size, dim, x), OneHot: mat.NewDense(size, k, oh), Labels: labels, Index: index}
	b.nBatches = n / size
	if r := n % size; r != 0 {
		if !b.opts.DropLast {
			b.nBatches++
			b.partial = Batch{X: mat.NewDense(r, dim, x[:r*dim]), OneHot: mat.NewDense(r, k, oh[:r*k]),
				Labels: labels[:r], Index: index[:r]}
		}
	}
	b.Reset(0)
	return b, nil
}

// Batches returns the number of batches per epoch.
func (b *Batcher) Batches() int { return b.nBatches }

// Reset positions b at the start of epoch, drawing its permutation if
// shuffling.
func (b *Batcher) Reset(epoch int) {
	for i := range b.perm {
		b.perm[i] = i
	}
	if b.opts.Shuffle {
		seedPCG(&b.pcg, b.opts.Seed, streamShuffle, uint64(epoch))
		for i := len(b.perm) - 1; i > 0; i-- {
			j := b.rng.IntN(i + 1)
			b.perm[i], b.perm[j] = b.perm[j], b.perm[i]
		}
	}
	b.pos = 0
	b.cur = nil
}

// Next fills the next batch of the epoch and reports whether there was one.
func (b *Batcher) Next() bool {
	n := len(b.perm) - b.pos
	switch {
	case n <= 0:
		b.cur = nil
		return false
	case n >= b.size:
		b.cur = &b.full
	case b.opts.DropLast:
		b.pos = len(b.perm)
		b.cur = nil
		return false
	default:
		b.cur = &b.partial
	}
	bt := b.cur
	dim, k := b.d.Dim(), b.d.Classes
	x := bt.X.RawMatrix().Data
	oh := bt.OneHot.RawMatrix().Data
	clear(oh[:len(bt.Labels)*k])
	for r := range bt.Labels {
		i := b.perm[b.pos+r]
		copy(x[r*dim:(r+1)*dim], b.d.X[i*dim:(i+1)*dim])
		y := b.d.Y[i]
		bt.Labels[r] = y
		bt.Index[r] = i
		oh[r*k+y] = 1
	}
	b.pos += len(bt.Labels)
	return true
}

// Batch returns the batch filled by the last successful Next, or nil.
func (b *Batcher) Batch() *Batch { return b.cur }
