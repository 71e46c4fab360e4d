package solver

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Test-only oracles with exactly known operators T.

// vrNoise selects the additive noise of a vrAffine oracle.
type vrNoise int

const (
	vrGaussian  vrNoise = iota // standard Gaussian per coordinate
	vrStudentT                 // Student-t with 2.5 degrees of freedom (finite variance 5, infinite fourth moment)
	vrLognormal                // e^g − e^{1/2}, g standard Gaussian: skewed, variance (e − 1)e
)

// vrAffine is the oracle τ(x; ξ) = A x + b + s·ζ̄ of T(x) = A x + b on R^d,
// where ζ̄ averages Size independent noise vectors of the stream Seed. For
// Gaussian noise it draws the average directly (N(0, I/Size)), so large
// sizes cost O(d); Student-t and lognormal noise cost O(Size·d). The noise does not depend
// on x, so the same Sample at two points gives differences A(x − y): the
// oracle is samplewise Lipschitz, and model says what it declares.
type vrAffine struct {
	d     int
	a, b  []float64 // A row-major, b
	s     float64
	noise vrNoise
	model Model
	pcg   rand.PCG
	rng   *rand.Rand
	t     distuv.StudentsT
}

// newVRAffine returns a vrAffine on R^d with a random A of Lipschitz constant
// gamma in the ℓ2 (linf false) or ℓ∞ (linf true) operator norm and a random
// b of norm 1.
func newVRAffine(seed uint64, d int, gamma float64, linf bool, s float64, noise vrNoise, model Model) *vrAffine {
	rng := rand.New(rand.NewPCG(seed, 17))
	m := mat.NewDense(d, d, nil)
	for i := range d {
		for j := range d {
			m.Set(i, j, rng.NormFloat64())
		}
	}
	ord := 2.0
	if linf {
		ord = math.Inf(1)
	}
	m.Scale(gamma/mat.Norm(m, ord), m)
	b := make([]float64, d)
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	nb := mat.Norm(mat.NewVecDense(d, b), ord)
	for i := range b {
		b[i] /= nb
	}
	o := &vrAffine{d: d, a: m.RawMatrix().Data, b: b, s: s, noise: noise, model: model}
	o.rng = rand.New(&o.pcg)
	o.t = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: 2.5, Src: &o.pcg}
	return o
}

func (o *vrAffine) Len() int     { return o.d }
func (o *vrAffine) Model() Model { return o.model }

func (o *vrAffine) EvalExact(dst, x []float64) error {
	for i := range o.d {
		v := o.b[i]
		for j, xj := range x {
			v += o.a[i*o.d+j] * xj
		}
		dst[i] = v
	}
	return nil
}

func (o *vrAffine) Eval(dst, x []float64, s Sample) (int, error) {
	n := max(s.Size, 1)
	o.EvalExact(dst, x)
	if o.model == Deterministic {
		return 1, nil
	}
	o.pcg.Seed(s.Seed, 0x5851f42d4c957f2d)
	switch o.noise {
	case vrGaussian:
		f := o.s / math.Sqrt(float64(n))
		for i := range dst {
			dst[i] += f * o.rng.NormFloat64()
		}
	case vrStudentT, vrLognormal:
		for i := range dst {
			sum := 0.0
			for range n {
				if o.noise == vrStudentT {
					sum += o.t.Rand()
				} else {
					sum += math.Exp(o.rng.NormFloat64()) - math.Exp(0.5)
				}
			}
			dst[i] += o.s * sum / float64(n)
		}
	}
	return n, nil
}

// vrShift is a samplewise nonexpansive oracle on R^d: a random signed cyclic
// shift with random damping plus Gaussian noise,
//
//	τ(x; ξ)_i = σ_i (1 − 2c_i u_ξ) x_{i+1 mod d} + b_i + s·g_{ξ,i},
//
// with u_ξ ~ Bernoulli(1/2), g_ξ standard Gaussian, σ_i = ±1 and c_i ∈
// [0, 1), c_0 = 0. Each map τ(·; ξ) is a permutation times a diagonal with
// entries in [−1, 1], so it is 1-Lipschitz in every ℓp norm, and so is
// T(x)_i = σ_i(1 − c_i)x_{i+1} + b_i, with Lipschitz constant exactly 1
// (c_0 = 0) and a unique fixed point (the cycle product is below 1). The
// average of Size samples uses ū = Binomial(Size, 1/2)/Size and
// ḡ ~ N(0, I/Size), both exact.
type vrShift struct {
	d         int
	sign, c   []float64
	b         []float64
	s         float64
	pcg       rand.PCG
	rng       *rand.Rand
	bernoulli distuv.Binomial
}

func newVRShift(seed uint64, d int, cmax, s float64) *vrShift {
	rng := rand.New(rand.NewPCG(seed, 29))
	o := &vrShift{d: d, sign: make([]float64, d), c: make([]float64, d), b: make([]float64, d), s: s}
	for i := range d {
		o.sign[i] = 1
		if rng.IntN(2) == 0 {
			o.sign[i] = -1
		}
		if i > 0 {
			o.c[i] = cmax * (0.2 + 0.8*rng.Float64())
		}
		o.b[i] = 2*rng.Float64() - 1
	}
	o.rng = rand.New(&o.pcg)
	o.bernoulli = distuv.Binomial{P: 0.5, Src: &o.pcg}
	return o
}

func (o *vrShift) Len() int     { return o.d }
func (o *vrShift) Model() Model { return SamplewiseLipschitz }

func (o *vrShift) apply(dst, x []float64, u float64) {
	for i := range o.d {
		dst[i] = o.sign[i]*(1-2*o.c[i]*u)*x[(i+1)%o.d] + o.b[i]
	}
}

func (o *vrShift) EvalExact(dst, x []float64) error {
	o.apply(dst, x, 0.5)
	return nil
}

func (o *vrShift) Eval(dst, x []float64, s Sample) (int, error) {
	n := max(s.Size, 1)
	o.pcg.Seed(s.Seed, 0x2545f4914f6cdd1d)
	o.bernoulli.N = float64(n)
	o.apply(dst, x, o.bernoulli.Rand()/float64(n))
	f := o.s / math.Sqrt(float64(n))
	for i := range dst {
		dst[i] += f * o.rng.NormFloat64()
	}
	return n, nil
}

// vrExactOracle is an Oracle that also knows T.
type vrExactOracle interface {
	Oracle
	Exact
}

// vrTrueResidual returns ‖T(x) − x‖ from the exact operator.
func vrTrueResidual(o vrExactOracle, norm Norm, x []float64) float64 {
	tx := make([]float64, len(x))
	if err := o.EvalExact(tx, x); err != nil {
		panic(err)
	}
	subInto(tx, tx, x)
	return norm.Norm(tx)
}

func vrNorm(t testing.TB, linf bool, d int) Norm {
	if linf {
		n, err := NewLInf(d)
		require.NoError(t, err)
		return n
	}
	n, err := NewLP(2, d)
	require.NoError(t, err)
	return n
}

// vrBinomialSlack is 3 standard deviations of a failure fraction with
// probability p over n independent runs.
func vrBinomialSlack(p float64, n int) float64 { return 3 * math.Sqrt(p*(1-p)/float64(n)) }
