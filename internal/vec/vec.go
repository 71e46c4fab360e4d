package vec

import "gonum.org/v1/gonum/floats"

// Dot4 returns the inner products of a, b, c and d with y. The five
// slices must have the same length.
func Dot4(a, b, c, d, y []float64) (ra, rb, rc, rd float64) {
	n := len(y)
	if len(a) != n || len(b) != n || len(c) != n || len(d) != n {
		panic("vec: Dot4 of slices of different lengths")
	}
	if !accelerated || n < 8 {
		return floats.Dot(a, y), floats.Dot(b, y), floats.Dot(c, y), floats.Dot(d, y)
	}
	return dot4(a, b, c, d, y)
}

// AddScaled4 adds wa·a + wb·b + wc·c + wd·d to dst, entry by entry in that
// order. The five slices must have the same length.
func AddScaled4(dst []float64, wa, wb, wc, wd float64, a, b, c, d []float64) {
	n := len(dst)
	if len(a) != n || len(b) != n || len(c) != n || len(d) != n {
		panic("vec: AddScaled4 of slices of different lengths")
	}
	if !accelerated {
		floats.AddScaled(dst, wa, a)
		floats.AddScaled(dst, wb, b)
		floats.AddScaled(dst, wc, c)
		floats.AddScaled(dst, wd, d)
		return
	}
	addScaled4(dst, wa, wb, wc, wd, a, b, c, d)
}

// Dot2 returns the inner products of a and b with y. The three slices
// must have the same length.
func Dot2(a, b, y []float64) (ra, rb float64) {
	n := len(y)
	if len(a) != n || len(b) != n {
		panic("vec: Dot2 of slices of different lengths")
	}
	if !accelerated || n < 8 {
		return floats.Dot(a, y), floats.Dot(b, y)
	}
	return dot2(a, b, y)
}

// AddScaled2 adds wa·a + wb·b to dst, entry by entry in that order. The
// three slices must have the same length.
func AddScaled2(dst []float64, wa, wb float64, a, b []float64) {
	n := len(dst)
	if len(a) != n || len(b) != n {
		panic("vec: AddScaled2 of slices of different lengths")
	}
	if !accelerated {
		floats.AddScaled(dst, wa, a)
		floats.AddScaled(dst, wb, b)
		return
	}
	addScaled2(dst, wa, wb, a, b)
}

// AllFinite reports whether every entry of x is finite: neither NaN nor
// ±Inf.
func AllFinite(x []float64) bool {
	if !accelerated || len(x) < 8 {
		for _, v := range x {
			if v-v != 0 {
				return false
			}
		}
		return true
	}
	return allFinite(x)
}

// Accelerated reports whether the kernels run in assembly on this machine.
func Accelerated() bool { return accelerated }
