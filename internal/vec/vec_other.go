//go:build !amd64 || purego

package vec

const accelerated = false

func dot4(a, b, c, d, y []float64) (ra, rb, rc, rd float64) {
	panic("vec: no accelerated kernels")
}

func addScaled4(dst []float64, wa, wb, wc, wd float64, a, b, c, d []float64) {
	panic("vec: no accelerated kernels")
}

func dot2(a, b, y []float64) (ra, rb float64) {
	panic("vec: no accelerated kernels")
}

func addScaled2(dst []float64, wa, wb float64, a, b []float64) {
	panic("vec: no accelerated kernels")
}

func allFinite(x []float64) bool {
	panic("vec: no accelerated kernels")
}
