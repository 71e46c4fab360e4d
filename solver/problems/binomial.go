package problems

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// binomialDirect is the largest number of trials for which binomial uses
// gonum's sampler, whose acceptance test differences log-gamma values of
// order n·ln n and so loses all accuracy (and stops accepting) as n grows
// towards 2⁶².
const binomialDirect = 1 << 30

// MDPMaxSample is the largest number of unit samples one Eval of "mdp"
// or "mdp-large" draws: a larger Sample.Size draws MDPMaxSample unit samples
// and reports that many (the solver and its certificates count the samples
// an oracle reports). Up to it, counts are exact integers in float64 and
// an evaluation costs O(S·A·branch) whatever the size.
const MDPMaxSample = 1 << 53

// binomial draws from Binomial(n, p), n a whole number in [0, 2⁵³] and p in
// [0, 1], from ns. Up to binomialDirect trials it is gonum's sampler; above,
// the same rejection from a Cauchy proposal with the probability mass
// computed without cancellation (logBinomialPMF), in O(1) expected time
// whatever n.
func binomial(n, p float64, ns *noiseSource) float64 {
	q := math.Min(p, 1-p)
	if n <= binomialDirect || p == 0 || p == 1 || n*q < 1 {
		// Gonum's branch for a mean below 1 stays accurate for any n.
		return distuv.Binomial{N: n, P: p, Src: ns.pcg}.Rand()
	}
	rng := ns.rng
	am := n * q
	sq := math.Sqrt(2 * am * (1 - q))
	for {
		var em, y float64
		for {
			y = math.Tan(math.Pi * rng.Float64())
			em = sq*y + am
			if em >= 0 && em < n+1 {
				break
			}
		}
		em = math.Floor(em)
		t := 1.2 * sq * (1 + y*y) * math.Exp(logBinomialPMF(em, n, q))
		if rng.Float64() <= t {
			if q != p {
				return n - em
			}
			return em
		}
	}
}

// logBinomialPMF returns log P(X = k) for X ~ Binomial(n, p), 0 < p < 1, by
// Loader's saddle-point expansion ("Fast and accurate computation of
// binomial probabilities", 2000), accurate to rounding for n up to 2⁵³:
//
//	stirlerr(n) − stirlerr(k) − stirlerr(n−k) − bd0(k, np) − bd0(n−k, nq)
//	+ ½ ln(n / (2π k (n−k))).
func logBinomialPMF(k, n, p float64) float64 {
	q := 1 - p
	switch {
	case k == 0:
		return n * math.Log1p(-p)
	case k == n:
		return n * math.Log(p)
	}
	return stirlerr(n) - stirlerr(k) - stirlerr(n-k) - bd0(k, n*p) - bd0(n-k, n*q) +
		0.5*math.Log(n/(2*math.Pi*k*(n-k)))
}

// stirlerr returns ln(n!) − ln(√(2πn)(n/e)ⁿ), the error of Stirling's
// formula, for a whole number n ≥ 1.
func stirlerr(n float64) float64 {
	if n <= 15 {
		lg, _ := math.Lgamma(n + 1)
		return lg - (n+0.5)*math.Log(n) + n - 0.5*math.Log(2*math.Pi)
	}
	const (
		s0 = 1.0 / 12
		s1 = 1.0 / 360
		s2 = 1.0 / 1260
		s3 = 1.0 / 1680
		s4 = 1.0 / 1188
	)
	nn := n * n
	return (s0 - (s1-(s2-(s3-s4/nn)/nn)/nn)/nn) / n
}

// bd0 returns x ln(x/m) + m − x without the cancellation of that formula
// when x is close to m (Loader's deviance term), for x, m > 0.
func bd0(x, m float64) float64 {
	if math.Abs(x-m) < 0.1*(x+m) {
		v := (x - m) / (x + m)
		s := (x - m) * v
		ej := 2 * x * v
		v2 := v * v
		for j := 3.0; j < 1000; j += 2 {
			ej *= v2
			s1 := s + ej/j
			if s1 == s {
				return s1
			}
			s = s1
		}
		return s
	}
	return x*math.Log(x/m) + m - x
}
