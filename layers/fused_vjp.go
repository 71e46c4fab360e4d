package layers

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// This file holds the helpers of the fused vector–Jacobian products of the
// built-in cells: hand-written gonum BLAS code for the transposed Jacobian
// products and the parameter gradients, which replaces the gorgonia graphs
// on the default path (the graphs stay as the reference; see evalBase's
// useGraph).

// general returns the row-major rows×cols matrix with the given stride over
// data (data may extend past the matrix).
func general(rows, cols, stride int, data []float64) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: data}
}

// dense returns the contiguous row-major rows×cols matrix over data.
func dense(rows, cols int, data []float64) blas64.General {
	return general(rows, cols, cols, data)
}

// mulABt sets (beta = 0) or adds to (beta = 1) c the product alpha·a·bᵀ.
func mulABt(alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	blas64.Gemm(blas.NoTrans, blas.Trans, alpha, a, b, beta, c)
}

// mulAtB sets or adds to c the product alpha·aᵀ·b.
func mulAtB(alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	blas64.Gemm(blas.Trans, blas.NoTrans, alpha, a, b, beta, c)
}

// mulAB sets or adds to c the product alpha·a·b.
func mulAB(alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	blas64.Gemm(blas.NoTrans, blas.NoTrans, alpha, a, b, beta, c)
}

// addColSums adds the column sums of the row-major rows×cols matrix m to
// dst (length cols).
func addColSums(dst, m []float64, rows, cols int) {
	dst = dst[:cols]
	for r := range rows {
		for j, v := range m[r*cols : (r+1)*cols] {
			dst[j] += v
		}
	}
}

// mulInto sets dst[i] = alpha·a[i]·b[i].
func mulInto(dst []float64, alpha float64, a, b []float64) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	for i, v := range a {
		dst[i] = alpha * v * b[i]
	}
}
