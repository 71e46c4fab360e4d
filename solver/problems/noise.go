package problems

import (
	"math"
	"math/rand/v2"

	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/solver"
)

// StudentTExactDraws is the number of honest Student-t draws per coordinate
// that one evaluation of "affine-t" sums. An evaluation averaging m unit
// samples with m > StudentTExactDraws sums StudentTExactDraws draws honestly
// and replaces the sum of the other m − StudentTExactDraws draws by a Gaussian
// with the same mean and variance. The mean and variance of the result are
// exact; its tails are those of the honest part only. Evaluations cost
// O(d·min(m, StudentTExactDraws)).
const StudentTExactDraws = 256

// studentDF is the Student-t degrees of freedom ν; its variance ν/(ν−2) = 5
// is finite, its third and fourth moments are not.
const studentDF = 2.5

type noiseKind int

const (
	gaussNoise noiseKind = iota
	studentNoise
	switchNoise
)

// noiseSource is a reseedable generator: reset(seed) restarts the stream of a
// Sample, so that the same Sample gives the same draws.
type noiseSource struct {
	pcg    *rand.PCG
	rng    *rand.Rand
	stream uint64
}

func newNoiseSource(stream uint64) noiseSource {
	pcg := rand.NewPCG(0, stream)
	return noiseSource{pcg: pcg, rng: rand.New(pcg), stream: stream}
}

func (n *noiseSource) reset(seed uint64) *rand.Rand {
	n.pcg.Seed(seed, n.stream)
	return n.rng
}

// mix derives a stream constant from a problem seed and a salt, so that two
// problems with different seeds, or two roles within a problem, draw from
// unrelated streams (SplitMix64 finaliser).
func mix(seed, salt uint64) uint64 {
	return numeric.Finalize(seed + salt*numeric.Golden + 0x632be59bd9b4e019)
}

// addGaussMean adds to dst the mean of m i.i.d. N(0, σ²I) vectors, sampled
// exactly as one N(0, σ²/m · I) vector in O(len(dst)).
func addGaussMean(dst []float64, rng *rand.Rand, sigma float64, m int) {
	s := sigma / math.Sqrt(float64(m))
	for i := range dst {
		dst[i] += s * rng.NormFloat64()
	}
}

// addStudentMean adds to dst the mean of m i.i.d. vectors of independent
// Student-t coordinates with ν = 2.5, scaled to variance σ², summing
// min(m, StudentTExactDraws) draws honestly (see StudentTExactDraws).
func addStudentMean(dst []float64, rng *rand.Rand, sigma float64, m int) {
	honest := min(m, StudentTExactDraws)
	scale := sigma / math.Sqrt(studentDF/(studentDF-2))
	rest := math.Sqrt(float64(m - honest))
	for i := range dst {
		s := 0.0
		for j := 0; j < honest; j++ {
			s += studentT(rng)
		}
		s *= scale
		if m > honest {
			s += sigma * rest * rng.NormFloat64()
		}
		dst[i] += s / float64(m)
	}
}

// studentT draws a standard Student-t variate with studentDF degrees of
// freedom: Z/√(V/ν) with V ~ χ²_ν = 2·Gamma(ν/2).
func studentT(rng *rand.Rand) float64 {
	z := rng.NormFloat64()
	v := 2 * gammaVariate(rng, studentDF/2)
	return z / math.Sqrt(v/studentDF)
}

// gammaVariate draws Gamma(a, 1) for a ≥ 1 by Marsaglia and Tsang's method
// ("A simple method for generating gamma variables", ACM TOMS 26(3), 2000).
func gammaVariate(rng *rand.Rand, a float64) float64 {
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 || math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// gaussSecondMoment returns an upper bound on E‖g‖² for a standard Gaussian
// vector g of norm.Len() entries, measured in norm: the smallest of
//
//   - d = E‖g‖₂², since every norm of the suite is at most ℓ2 (Frobenius);
//   - for ℓp, p ≥ 2: (E‖g‖_p^p)^{2/p} = (d·E|g₁|^p)^{2/p} (Jensen, 2/p ≤ 1);
//   - for ℓ∞: the same with any finite r ≥ 2 in place of p (‖g‖∞ ≤ ‖g‖_r),
//     r = 2, 3, …, ⌈4 ln d⌉ + 2;
//   - for Schatten-p on k×c matrices, k ≤ c: k^{2/p}·((√k + √c)² + 1), from
//     ‖G‖_Sp ≤ k^{1/p}‖G‖op, E‖G‖op ≤ √k + √c (Gordon) and Var‖G‖op ≤ 1
//     (the Gaussian Poincaré inequality; ‖·‖op is 1-Lipschitz in Frobenius).
func gaussSecondMoment(norm solver.Norm) float64 {
	d := float64(norm.Len())
	best := d
	lp := func(p float64) float64 { // (d·E|g|^p)^{2/p}, E|g|^p = 2^{p/2}Γ((p+1)/2)/√π
		lg, _ := math.Lgamma((p + 1) / 2)
		return math.Exp(2 / p * (math.Log(d) + p/2*math.Ln2 + lg - 0.5*math.Log(math.Pi)))
	}
	switch n := norm.(type) {
	case solver.LP:
		best = math.Min(best, lp(n.P()))
	case solver.LInf:
		for r := 2.0; r <= math.Ceil(4*math.Log(d))+2; r++ {
			best = math.Min(best, lp(r))
		}
	case *solver.Schatten:
		rows, cols := n.Dims()
		k, c := float64(min(rows, cols)), float64(max(rows, cols))
		op := math.Pow(math.Sqrt(k)+math.Sqrt(c), 2) + 1
		if math.IsInf(n.P(), 1) {
			best = math.Min(best, op)
		} else {
			best = math.Min(best, math.Pow(k, 2/n.P())*op)
		}
	}
	return best
}
