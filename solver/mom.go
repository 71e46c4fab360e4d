package solver

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
)

// momBuckets returns the number of buckets k = ⌈18 ln(1/δ)⌉ of a
// median-of-means estimate with failure probability δ (Hsu and Sabato 2016,
// Proposition 9; the reference paper's median-of-means proposition). It
// panics if δ is outside (0, 1).
//
// With k such buckets, each of which lies within ε of the mean with
// probability at least 2/3, the selection of medianOfMeans lies within 3ε of
// the mean (more sharply: within its radius plus ε) with probability at least
// 1 − δ. The paper obtains the 2/3 from Chebyshev's inequality with buckets of
// n = ⌈27/ε²⌉ unit samples, for an error of ε·√κ·σ.
func momBuckets(delta float64) int {
	if !(delta > 0 && delta < 1) {
		panic(fmt.Sprintf("solver: momBuckets δ = %v outside (0, 1)", delta))
	}
	return max(1, int(math.Ceil(18*math.Log(1/delta))))
}

// medianOfMeansWork returns the length of the scratch space medianOfMeans
// needs for k means of dimension n: k² distances, k sorted distances and one
// difference vector.
func medianOfMeansWork(k, n int) int { return k*k + k + n }

// medianOfMeans selects among the bucket means the median-of-means estimate
// of Hsu and Sabato (2016), Algorithm MoME of the reference paper, in the
// norm of the space. For each mean η_i let
//
//	r_i = min{r ≥ 0 : #{j : ‖η_j − η_i‖ ≤ r} > k/2},
//
// the smallest radius of a ball around η_i holding more than half of the k
// means (η_i itself included). medianOfMeans returns the index i of the mean
// with the smallest r_i, the lowest such index on ties, and its radius r_i,
// and copies η_i into dst unless dst is nil.
//
// work is scratch space of length at least medianOfMeansWork(len(means),
// norm.Len()); a nil work is allocated. medianOfMeans makes O(k²) norm
// evaluations and, given work, allocates nothing. It panics if means is
// empty or a length does not match norm.Len(). The means must be finite.
func medianOfMeans(dst []float64, means [][]float64, norm Norm, work []float64) (index int, radius float64) {
	k, n := len(means), norm.Len()
	if k == 0 {
		panic("solver: medianOfMeans of no means")
	}
	if dst != nil && len(dst) != n {
		panic(fmt.Sprintf("solver: medianOfMeans destination length %d, norm dimension %d", len(dst), n))
	}
	need := medianOfMeansWork(k, n)
	if work == nil {
		work = make([]float64, need)
	}
	if len(work) < need {
		panic(fmt.Sprintf("solver: medianOfMeans work length %d, need %d", len(work), need))
	}
	dist, row, diff := work[:k*k], work[k*k:k*k+k], work[k*k+k:need]
	momDistances(dist, means, norm, diff)
	index, radius = momSelect(dist, k, row)
	if dst != nil {
		copy(dst, means[index])
	}
	return index, radius
}

// momDistances fills the symmetric k×k matrix dist with the pairwise
// distances ‖η_i − η_j‖ of the k = len(means) means, using diff (length
// norm.Len()) as scratch.
func momDistances(dist []float64, means [][]float64, norm Norm, diff []float64) {
	k := len(means)
	for i := range k {
		dist[i*k+i] = 0
		for j := i + 1; j < k; j++ {
			subInto(diff, means[i], means[j])
			d := norm.Norm(diff)
			dist[i*k+j], dist[j*k+i] = d, d
		}
	}
}

// momSelect returns the Hsu–Sabato selection among k points given their
// symmetric k×k distance matrix: the index i minimising r_i, the
// (⌊k/2⌋+1)-th smallest distance from point i (itself included), the lowest
// such i on ties, and r_i. row (length k) is scratch.
func momSelect(dist []float64, k int, row []float64) (int, float64) {
	need := k/2 + 1 // more than k/2 points, the point itself included
	best, bestR := 0, math.Inf(1)
	for i := range k {
		copy(row, dist[i*k:(i+1)*k])
		slices.Sort(row)
		if r := row[need-1]; r < bestR {
			best, bestR = i, r
		}
	}
	return best, bestR
}

// subInto sets dst = a − b.
func subInto(dst, a, b []float64) {
	// a + (−1)·b is a − b exactly, in gonum's vectorised kernel.
	n := len(dst)
	floats.AddScaledTo(dst, a[:n], -1, b[:n])
}

// momBucketFailure returns the largest per-bucket failure probability
// p ∈ (0, 1/2) for which k independent buckets, each far from the mean
// with probability at most p, leave at least half of them far with
// probability at most δ: P(Binomial(k, p) ≥ k/2) ≤ δ, computed from the
// exact binomial tail (to a relative 1e-9 below the largest such p). It
// panics if k < 1 or δ is outside (0, 1).
//
// The search is a bisection on p whose every step decides whether the
// tail Σ_{j ≥ t} C(k, j) p^j (1 − p)^{k−j}, t = ⌈k/2⌉, summed term by term
// from the log-gamma form of each term (the plain sum), exceeds δ; the
// result is bit for bit that of the bisection over the plain sum, at a
// fraction of its cost: one exponential per step instead of one per term
// and two log-gammas per term, the plain sum deciding only when the
// tail is within a rounding band of δ. For k < 128 it allocates nothing.
func momBucketFailure(k int, delta float64) float64 {
	if k < 1 {
		panic(fmt.Sprintf("solver: momBucketFailure k = %d must be positive", k))
	}
	if !(delta > 0 && delta < 1) {
		panic(fmt.Sprintf("solver: momBucketFailure δ = %v outside (0, 1)", delta))
	}
	var lf, buf [2 * momCoefMax]float64
	return bucketFailure(k, delta, logFactorials(lf[:0], k), buf[:0])
}

// bucketFailure is momBucketFailure given lf[m] = ln m! for m ≤ k and
// scratch buf (see newBucketTail).
func bucketFailure(k int, delta float64, lf, buf []float64) float64 {
	b := newBucketTail(buf, k, lf)
	return bisectFailure(func(p float64) bool { return b.exceeds(p, delta) })
}

// logFactorials appends ln m! = ln Γ(m + 1) to dst for m = 0, …, n and
// returns the extended slice.
func logFactorials(dst []float64, n int) []float64 {
	for m := range n + 1 {
		l, _ := math.Lgamma(float64(m + 1))
		dst = append(dst, l)
	}
	return dst
}

// bisectFailure returns the end of the bisection on (0, 1/2) that keeps
// its lower end lo where exceeds(lo) is false and its upper end where it
// is true, stopping once the bracket is within a relative 1e-9 of lo (or
// after 200 halvings): the search of momBucketFailure, with exceeds(p)
// reporting whether the binomial tail at p exceeds δ.
func bisectFailure(exceeds func(p float64) bool) float64 {
	lo, hi := 0.0, 0.5
	for range 200 {
		mid := (lo + hi) / 2
		if !exceeds(mid) {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-9*lo {
			break
		}
	}
	return lo
}

// momCoefMax is the number of terms of the binomial tail that
// momBucketFailure keeps on the stack: bucket counts k < 2·momCoefMax.
const momCoefMax = 64

// bucketTail decides whether P(Binomial(k, p) ≥ t), t = ⌈k/2⌉, exceeds
// δ, exactly as the plain sum of its terms would decide, where the plain
// sum adds, for j = t, …, k in that order,
//
//	exp(ln C(k, j) + j·ln p + (k − j)·ln(1 − p)),
//
// with ln C(k, j) = ln Γ(k + 1) − ln Γ(j + 1) − ln Γ(k − j + 1). Three
// things make a decision cheap without changing it.
//
//   - The coefficients ln C(k, j) and the ratios (k − j)/(j + 1) do not
//     depend on p: they are computed once, by the plain sum's expressions.
//   - A fast sum takes the first term by the plain sum's expression and
//     the others by the recurrence term_{j+1} = term_j·(k − j)/(j + 1)·
//     p/(1 − p): one exponential instead of k − t + 1. It differs from the
//     plain sum by less than a relative band η = 64·2⁻⁵³·(M + k),
//     M = 3 ln Γ(k + 1) + k(|ln p| + |ln(1 − p)|): each plain term's
//     exponent adds five quantities of magnitude at most M, each within a
//     few units of 2⁻⁵³ of its value (Lgamma, Log, Log1p and Exp are
//     accurate to a few ulps), the recurrence adds three roundings per
//     term, and each sum k roundings, so the two differ by less than
//     η/4. Outside [δ(1 − η), δ(1 + η)] the fast sum's decision is the
//     plain sum's.
//   - Inside that band (a bisection step whose midpoint's tail is within
//     about 1e-12 of δ, or δ below 1e-290, where the terms may be
//     subnormal), the plain sum decides, from the stored coefficients; it
//     stops as soon as its partial sum exceeds δ, since its terms are
//     non-negative and adding a non-negative number never lowers a
//     floating-point sum.
type bucketTail struct {
	k, t  int
	coef  []float64 // ln C(k, j), j = t, …, k
	ratio []float64 // (k − j)/(j + 1), j = t, …, k − 1
	m0    float64   // 3 ln Γ(k + 1) + k, the part of η's M + k without p
}

// newBucketTail returns the tail of Binomial(k, ·) from t = ⌈k/2⌉, given
// lf[m] = ln m! for m ≤ k (logFactorials), its coefficients in buf's
// backing array when its capacity holds 2(k − t) + 1 values.
func newBucketTail(buf []float64, k int, lf []float64) bucketTail {
	t := (k + 1) / 2 // ⌈k/2⌉ far buckets leave no strict majority
	n := k - t + 1
	if cap(buf) < 2*n-1 {
		buf = make([]float64, 0, 2*n-1)
	}
	lk := lf[k]
	coef, ratio := buf[:n], buf[n:2*n-1]
	for j := t; j <= k; j++ {
		coef[j-t] = lk - lf[j] - lf[k-j]
		if j < k {
			ratio[j-t] = float64(k-j) / float64(j+1)
		}
	}
	return bucketTail{k: k, t: t, coef: coef, ratio: ratio, m0: 3*lk + float64(k)}
}

// tailTiny is the δ below which bucketTail.exceeds always takes the
// plain sum (its terms may then be subnormal).
const tailTiny = 1e-290

// exceeds reports whether the plain sum of the tail at p exceeds δ (see
// bucketTail), for 0 < p ≤ 1/2.
func (b bucketTail) exceeds(p, delta float64) bool {
	k, t := b.k, b.t
	lp, lq := math.Log(p), math.Log1p(-p)
	first := math.Exp(b.coef[0] + float64(t)*lp + float64(k-t)*lq)
	if delta > tailTiny {
		s, term, odds := first, first, p/(1-p)
		for _, r := range b.ratio {
			term *= r * odds
			s += term
		}
		eta := 64 * 0x1p-53 * (b.m0 + float64(k)*(-lp-lq))
		switch {
		case s > delta*(1+eta):
			return true
		case s < delta*(1-eta):
			return false
		}
	}
	s := first
	for i, c := range b.coef[1:] {
		if s > delta {
			return true
		}
		j := t + 1 + i
		s += math.Exp(c + float64(j)*lp + float64(k-j)*lq)
	}
	return s > delta
}

// momChebyshevBuckets returns the bucket count k and per-bucket failure
// probability p = momBucketFailure(k, δ) of a median of means that needs
// the fewest unit samples for a given accuracy when each bucket's failure
// probability comes from Chebyshev's inequality: a bucket of m samples is
// within ε = √(κσ²/(m p)) of the mean with probability at least 1 − p, so
// for a fixed total k·m the accuracy is best when k/p is smallest. By a
// Chernoff bound P(Binomial(k, p) ≥ k/2) ≤ exp(−k·KL(1/2‖p)), so k ≈
// ln(1/δ)/KL(1/2‖p), minimised near p ≈ 0.1 with k ≈ 2 ln(1/δ); the exact
// tail used here does slightly better (for δ ≥ 0.05 a single bucket,
// plain Chebyshev with p = δ, is cheapest). The search over odd k stops
// early once 2k is at least the best k/p found: every p it returns is
// below 1/2, so no larger k can do better. It panics if δ is outside
// (0, 1).
func momChebyshevBuckets(delta float64) (k int, p float64) {
	if !(delta > 0 && delta < 1) {
		panic(fmt.Sprintf("solver: momChebyshevBuckets δ = %v outside (0, 1)", delta))
	}
	best := math.Inf(1)
	limit := 3 + int(math.Ceil(6*math.Log(1/delta)))
	var lfBuf, buf [2 * momCoefMax]float64
	lf, tail := lfBuf[:0], buf[:0]
	if limit >= len(lfBuf) { // one buffer each for every count, at tiny δ
		lf, tail = make([]float64, 0, limit+1), make([]float64, 0, limit+1)
	}
	lf = logFactorials(lf, limit)
	for j := 1; j <= limit && float64(2*j) < best; j += 2 { // an even count needs as many far buckets as the odd one below it
		q := bucketFailure(j, delta, lf, tail)
		if r := float64(j) / q; r < best {
			best, k, p = r, j, q
		}
	}
	return k, p
}

// momPlan returns the bucket count k, per-bucket failure probability p and
// accuracy share s of the variance median of means (RuleVarianceMoM) that
// needs the fewest unit samples for a target radius a, chosen before any
// sample is drawn. Its buckets have ε = s·a, so N = k·κσ²/(p s² a²). A
// single bucket (k = 1, p = δ: Chebyshev on the whole sample, by the
// paper's minibatch-variance lemma E‖X̄ − μ‖² ≤ κσ²/N and Markov's
// inequality on the square) selects its own mean with r* = 0, so its
// radius r* + ε is exactly ε and s = 1: N = κσ²/(δa²). More buckets
// (momChebyshevBuckets) add the data-dependent r*, which on the event is
// at most 2ε and in practice about ε, so they are planned with s = 1/2:
// N = 4(k/p)κσ²/a². The cheaper of the two is returned; at δ ≥ 0.0028 that
// is the single bucket, below it the median of means (about 20 ln(1/δ)
// bucket-variances at s = 1/2 against 1/δ). Either choice is fixed before
// the draw, so the rule's guarantee (see varianceMoM) is unchanged.
func momPlan(delta float64) (k int, p, share float64) {
	k, p = momChebyshevBuckets(delta)
	if k == 1 || 1/delta <= 4*float64(k)/p {
		return 1, momBucketFailure(1, delta), 1
	}
	return k, p, 0.5
}
