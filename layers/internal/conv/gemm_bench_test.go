package conv

import (
	"fmt"
	"testing"

	"gonum.org/v1/gonum/blas"

	"github.com/deqgo/deq/internal/blasimpl"
)

// BenchmarkGemmShapes times the float32 products of the conv cell's batch
// of 64 examples at C = 48 on 14×14 pixels, in 64×64×64 tiles and in one
// call, with the BLAS that deq's command installs (OpenBLAS on one thread
// with -tags netlib, gonum's otherwise): a shifted product of one image
// (48×225 by 48×48) and a kernel gradient of half a batch (48×48 summed over
// 32·225 pixels).
func BenchmarkGemmShapes(b *testing.B) {
	blasimpl.Use()
	for _, sh := range []struct {
		name    string
		tb      bool
		m, n, k int
	}{
		{"shifted", false, 48, 225, 48},
		{"weight-grad", true, 48, 48, 32 * 225},
	} {
		for _, one := range []bool{false, true} {
			name := fmt.Sprintf("%s/tiles", sh.name)
			if one {
				name = fmt.Sprintf("%s/one-call", sh.name)
			}
			b.Run(name, func(b *testing.B) { benchGemm(b, sh.tb, sh.m, sh.n, sh.k, one) })
		}
	}
}

func benchGemm(b *testing.B, tB bool, m, n, k int, one bool) {
	a, x, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%7) / 7
	}
	for i := range x {
		x[i] = float32(i%5) / 5
	}
	tb, ldb := blas.NoTrans, n
	if tB {
		tb, ldb = blas.Trans, k
	}
	b.ReportAllocs()
	for b.Loop() {
		if one {
			gemm(blas.NoTrans, tb, m, n, k, 1, a, k, x, ldb, 0, c, n)
		} else {
			tiled(blas.NoTrans, tb, m, n, k, 1, a, k, x, ldb, 0, c, n)
		}
	}
	b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
