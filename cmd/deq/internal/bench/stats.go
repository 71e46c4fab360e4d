package bench

import (
	"math"
	"slices"

	"github.com/deqgo/deq/internal/numeric"
)

// quantile returns the nearest-rank q-quantile of xs, the ⌈q·n⌉-th smallest
// value (+Inf entries, for seeds that did not reach, count as the largest).
// It returns NaN for an empty xs or one holding NaN.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 || slices.ContainsFunc(xs, math.IsNaN) {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

// fitSlope returns the least-squares slope of log y against log x over the
// pairs with finite positive y, and the number of pairs used. The slope is
// NaN with fewer than two distinct x.
func fitSlope(x, y []float64) (float64, int) {
	var lx, ly []float64
	for i := range x {
		if y[i] > 0 && !math.IsInf(y[i], 1) && x[i] > 0 {
			lx = append(lx, math.Log(x[i]))
			ly = append(ly, math.Log(y[i]))
		}
	}
	n := len(lx)
	if n < 2 {
		return math.NaN(), n
	}
	mx, my := mean(lx), mean(ly)
	sxx, sxy := 0.0, 0.0
	for i := range lx {
		sxx += (lx[i] - mx) * (lx[i] - mx)
		sxy += (lx[i] - mx) * (ly[i] - my)
	}
	if sxx == 0 {
		return math.NaN(), n
	}
	return sxy / sxx, n
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, v := range xs {
		s += v
	}
	return s / float64(len(xs))
}

// deriveSeed returns a seed for the given indices under base, chaining
// SplitMix64: independent seeds from a base seed and indices.
func deriveSeed(base uint64, idx ...uint64) uint64 {
	s := numeric.SplitMix64(base)
	for _, i := range idx {
		s = numeric.SplitMix64(s ^ i)
	}
	return s
}
