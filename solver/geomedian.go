package solver

import (
	"math"
	"slices"
)

// This file holds the geometric median of bucket means and the majority
// radius that bounds any candidate's error, which VR-GHAL's variance
// estimates use in a Hilbert norm.

// geometricMedian writes into dst an approximate geometric median of the
// points, argmin_z Σ_i ‖z − p_i‖₂ in the Euclidean norm of the flat
// vectors, by Weiszfeld's iteration from the coordinatewise mean (iters
// steps, stopping early once a step moves less than 1e-12 of the spread),
// and returns dst. It panics if points is empty.
//
// For points in a Hilbert space (ℓ2, Schatten-2, the Frobenius norm of a
// batch), the geometric median of bucket means is the estimator of
// Minsker ("Geometric median and robust estimation in Banach spaces",
// Bernoulli 21(4), 2015): if fewer than a fraction α < 1/2 of the means
// lie farther than ε from μ, the exact median is within
// C_α ε = (1 − α)ε/√(1 − 2α) of μ (his Lemma 2.1). VR-GHAL does not rely on
// that constant, which needs the exact minimiser: it uses the median as a
// candidate, and its bound is the majority radius r of whatever point z it
// keeps — if more than half the means lie within ε of μ and more than half
// lie within r of z, the two sets share a mean, so ‖z − μ‖ ≤ r + ε in any
// norm (the argument of Hsu and Sabato 2016, Proposition 9).
func geometricMedian(dst []float64, points [][]float64, iters int) []float64 {
	k := len(points)
	if k == 0 {
		panic("solver: geometricMedian of no points")
	}
	n := len(points[0])
	clear(dst)
	for _, p := range points {
		for i, v := range p {
			dst[i] += v / float64(k)
		}
	}
	if k < 3 {
		return dst
	}
	next := make([]float64, n)
	spread := 0.0
	for _, p := range points {
		spread = math.Max(spread, euclid(p, dst))
	}
	for range iters {
		clear(next)
		wsum := 0.0
		for _, p := range points {
			d := euclid(p, dst)
			if d < 1e-300 {
				continue // a median at a point: keep it (Weiszfeld's fixed point)
			}
			w := 1 / d
			wsum += w
			for i, v := range p {
				next[i] += w * v
			}
		}
		if wsum == 0 {
			return dst
		}
		move := 0.0
		for i := range next {
			next[i] /= wsum
			move += (next[i] - dst[i]) * (next[i] - dst[i])
		}
		copy(dst, next)
		if math.Sqrt(move) <= 1e-12*spread {
			break
		}
	}
	return dst
}

// euclid returns the Euclidean distance of a and b.
func euclid(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		d := v - b[i]
		s += d * d
	}
	return math.Sqrt(s)
}

// hilbertNorm reports whether norm is a Hilbert norm of the flat vector or
// a batch of Hilbert norms, where the geometric median is a good candidate.
func hilbertNorm(norm Norm) bool {
	switch n := norm.(type) {
	case LP:
		return n.P() == 2
	case *Schatten:
		return n.P() == 2
	case *Batched:
		return hilbertNorm(n.Example)
	}
	return false
}

// majorityRadius returns the smallest r such that more than half of the
// means lie within r of z, in norm; diff (length norm.Len()) and row
// (length len(means)) are scratch.
func majorityRadius(z []float64, means [][]float64, norm Norm, diff, row []float64) float64 {
	for i, m := range means {
		subInto(diff, m, z)
		row[i] = norm.Norm(diff)
	}
	r := row[:len(means)]
	slices.Sort(r)
	return r[len(means)/2]
}
