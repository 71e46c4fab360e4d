package solver

import (
	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/internal/vec"
)

// dotsStrided sets out[i*stride] = hs[i][lo:hi]·y for every vector of hs,
// four at a time with vec.Dot4 (one read of y for four inner products),
// then two at a time with vec.Dot2, the last one with floats.Dot.
func dotsStrided(out []float64, stride int, hs [][]float64, lo, hi int, y []float64) {
	i := 0
	for ; i+4 <= len(hs); i += 4 {
		out[i*stride], out[(i+1)*stride], out[(i+2)*stride], out[(i+3)*stride] =
			vec.Dot4(hs[i][lo:hi], hs[i+1][lo:hi], hs[i+2][lo:hi], hs[i+3][lo:hi], y)
	}
	if i+2 <= len(hs) {
		out[i*stride], out[(i+1)*stride] = vec.Dot2(hs[i][lo:hi], hs[i+1][lo:hi], y)
		i += 2
	}
	if i < len(hs) {
		out[i*stride] = floats.Dot(hs[i][lo:hi], y)
	}
}

// addScaledMany adds Σ w[i]·hs[i][lo:hi] to dst in the order of hs, four
// terms at a time with vec.AddScaled4 (one read and write of dst for
// four), then two at a time with vec.AddScaled2, the last one with
// floats.AddScaled.
func addScaledMany(dst, w []float64, hs [][]float64, lo, hi int) {
	i := 0
	for ; i+4 <= len(hs); i += 4 {
		vec.AddScaled4(dst, w[i], w[i+1], w[i+2], w[i+3], hs[i][lo:hi], hs[i+1][lo:hi], hs[i+2][lo:hi], hs[i+3][lo:hi])
	}
	if i+2 <= len(hs) {
		vec.AddScaled2(dst, w[i], w[i+1], hs[i][lo:hi], hs[i+1][lo:hi])
		i += 2
	}
	if i < len(hs) {
		floats.AddScaled(dst, w[i], hs[i][lo:hi])
	}
}
