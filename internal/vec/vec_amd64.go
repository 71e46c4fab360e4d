//go:build amd64 && !purego

package vec

import (
	"math"

	"golang.org/x/sys/cpu"
)

// accelerated reports whether the processor runs the AVX2 and FMA kernels.
var accelerated = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dot4AVX2 returns the inner products of the first n entries of a, b, c
// and d with those of y, n a multiple of 8.
//
//go:noescape
func dot4AVX2(a, b, c, d, y *float64, n int) (ra, rb, rc, rd float64)

// addScaled4AVX2 adds wa·a + wb·b + wc·c + wd·d to the first n entries of
// dst, n a multiple of 4, with fused multiply–adds in that order.
//
//go:noescape
func addScaled4AVX2(dst *float64, wa, wb, wc, wd float64, a, b, c, d *float64, n int)

// dot2AVX2 is dot4AVX2 for two vectors.
//
//go:noescape
func dot2AVX2(a, b, y *float64, n int) (ra, rb float64)

// addScaled2AVX2 is addScaled4AVX2 for two vectors.
//
//go:noescape
func addScaled2AVX2(dst *float64, wa, wb float64, a, b *float64, n int)

// finiteSumAVX2 returns Σ (xᵢ − xᵢ) over the first n entries of x, n a
// multiple of 8: +0 when they are all finite, NaN otherwise.
//
//go:noescape
func finiteSumAVX2(x *float64, n int) float64

func dot2(a, b, y []float64) (ra, rb float64) {
	n := len(y)
	m := n &^ 7
	ra, rb = dot2AVX2(&a[0], &b[0], &y[0], m)
	for i := m; i < n; i++ {
		ra = math.FMA(a[i], y[i], ra)
		rb = math.FMA(b[i], y[i], rb)
	}
	return ra, rb
}

func addScaled2(dst []float64, wa, wb float64, a, b []float64) {
	n := len(dst)
	m := n &^ 3
	if m > 0 {
		addScaled2AVX2(&dst[0], wa, wb, &a[0], &b[0], m)
	}
	for i := m; i < n; i++ {
		dst[i] = math.FMA(wb, b[i], math.FMA(wa, a[i], dst[i]))
	}
}

func allFinite(x []float64) bool {
	m := len(x) &^ 7
	if finiteSumAVX2(&x[0], m) != 0 {
		return false
	}
	for _, v := range x[m:] {
		if v-v != 0 {
			return false
		}
	}
	return true
}

func dot4(a, b, c, d, y []float64) (ra, rb, rc, rd float64) {
	n := len(y)
	m := n &^ 7
	ra, rb, rc, rd = dot4AVX2(&a[0], &b[0], &c[0], &d[0], &y[0], m)
	for i := m; i < n; i++ {
		yi := y[i]
		ra = math.FMA(a[i], yi, ra)
		rb = math.FMA(b[i], yi, rb)
		rc = math.FMA(c[i], yi, rc)
		rd = math.FMA(d[i], yi, rd)
	}
	return ra, rb, rc, rd
}

func addScaled4(dst []float64, wa, wb, wc, wd float64, a, b, c, d []float64) {
	n := len(dst)
	m := n &^ 3
	if m > 0 {
		addScaled4AVX2(&dst[0], wa, wb, wc, wd, &a[0], &b[0], &c[0], &d[0], m)
	}
	for i := m; i < n; i++ {
		dst[i] = math.FMA(wd, d[i], math.FMA(wc, c[i], math.FMA(wb, b[i], math.FMA(wa, a[i], dst[i]))))
	}
}
