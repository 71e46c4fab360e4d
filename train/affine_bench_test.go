package train

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/internal/blasimpl"
	"github.com/deqgo/deq/layers"
)

// BenchmarkDenseEncoderReadout times the dense model's encoder and readout
// outside the DEQ layer, forward and backward, on one batch of 128 28×28
// images (Fashion-MNIST's shape, hidden 128, ten classes) in each
// precision: the phases encoder, readout and loss, and the encoder's part
// of backward of a training step. It installs the BLAS that deq's command
// uses (blasimpl.Use: OpenBLAS with -tags netlib), as the layers
// benchmarks do.
func BenchmarkDenseEncoderReadout(b *testing.B) {
	blasimpl.Use()
	const n, side = 128, 28
	rng := rand.New(rand.NewPCG(1, 1))
	d := &datasets.Dataset{Name: "noise", Rows: side, Cols: side, Classes: 10, X: make([]float64, n*side*side), Y: make([]int, n)}
	for i := range d.X {
		d.X[i] = rng.Float64()
	}
	for i := range d.Y {
		d.Y[i] = i % 10
	}
	for _, p := range layers.Precisions() {
		b.Run(p.String(), func(b *testing.B) {
			cfg := Config{Seed: 1, Epochs: 1, BatchSize: n, Model: ModelConfig{Hidden: 128, Precision: p}}
			trn, err := New(cfg, d, d, nil)
			require.NoError(b, err)
			m := trn.model
			w := m.work(n)
			z := make([]float64, n*128)
			for i := range z {
				z[i] = rng.NormFloat64()
			}
			for i := range w.de {
				w.de[i] = rng.NormFloat64()
			}
			m.standardize(w.xs, d.X)
			step := func() {
				if err := m.encode(w, w.e, n); err != nil {
					b.Fatal(err)
				}
				m.readout(w, z, n)
				crossEntropy(w.dlogits, w.logits, d.Y, m.Classes)
				m.readoutBackward(w, z, n)
				if err := m.encodeBackward(w, n); err != nil {
					b.Fatal(err)
				}
			}
			step() // the float32 scratch and weight copies are made here
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				step()
			}
		})
	}
}
