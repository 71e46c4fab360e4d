package problems

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/deqgo/deq/solver"
)

// averagedOracle is the family τ(x; i) = γ S_i x + b_i, i uniform over
// {0, …, M−1}, with (S_i x)_r = sign_i[r]·x[perm_i[r]]: a signed permutation,
// so ‖τ(x; i) − τ(y; i)‖ = γ‖x − y‖ in every ℓp norm. A unit sample is one
// index drawn uniformly with replacement; T is the exact average over i.
type averagedOracle struct {
	d, m  int
	perm  []int32   // M×d
	coef  []float64 // M×d: γ·sign
	b     []float64 // M×d
	noise noiseSource
}

var (
	_ Oracle           = (*averagedOracle)(nil)
	_ solver.FiniteSum = (*averagedOracle)(nil)
)

// Terms implements solver.FiniteSum: T is the exact average of the M maps,
// which EvalExact computes.
func (o *averagedOracle) Terms() int { return o.m }

func (o *averagedOracle) Len() int            { return o.d }
func (o *averagedOracle) Model() solver.Model { return solver.SamplewiseLipschitz }

// addTerm adds τ(x; i) to dst.
func (o *averagedOracle) addTerm(dst, x []float64, i int) {
	off := i * o.d
	perm, coef, b := o.perm[off:off+o.d], o.coef[off:off+o.d], o.b[off:off+o.d]
	for r := range dst {
		dst[r] += coef[r]*x[perm[r]] + b[r]
	}
}

// EvalExact implements solver.Exact; it costs O(M·d).
func (o *averagedOracle) EvalExact(dst, x []float64) error {
	if err := checkEval(o.d, dst, x, solver.Sample{}, false); err != nil {
		return err
	}
	clear(dst)
	for i := 0; i < o.m; i++ {
		o.addTerm(dst, x, i)
	}
	inv := 1 / float64(o.m)
	for r := range dst {
		dst[r] *= inv
	}
	return nil
}

// Eval implements solver.Oracle: the mean of τ(x; i_j) over Size indices
// drawn uniformly with replacement, in O(Size·d). A Size of M or more
// returns the exact average and reports M unit samples (as solver.Oracle
// allows a finite sum), in O(M·d): no Size makes an evaluation cost more.
func (o *averagedOracle) Eval(dst, x []float64, s solver.Sample) (int, error) {
	if err := checkEval(o.d, dst, x, s, true); err != nil {
		return 0, err
	}
	if s.Size >= o.m {
		return o.m, o.EvalExact(dst, x)
	}
	rng := o.noise.reset(s.Seed)
	clear(dst)
	for j := 0; j < s.Size; j++ {
		o.addTerm(dst, x, rng.IntN(o.m))
	}
	inv := 1 / float64(s.Size)
	for r := range dst {
		dst[r] *= inv
	}
	return s.Size, nil
}

// newAveraged builds "averaged". The offsets are b_i = b̄ + σ(z_i − z̄) with
// b̄ and z_i standard Gaussian, so that their mean is exactly b̄. The fixed
// point solves (I − Ā)x = b̄ with Ā = (γ/M)Σ S_i, by LU.
func newAveraged(c Config, _ solver.Norm) (*Problem, error) {
	d, m, g := c.Dim, c.Terms, c.Gamma
	rng := rand.New(rand.NewPCG(c.Seed, mix(c.Seed, saltBuild)))
	o := &averagedOracle{
		d: d, m: m,
		perm:  make([]int32, m*d),
		coef:  make([]float64, m*d),
		b:     make([]float64, m*d),
		noise: newNoiseSource(mix(c.Seed, saltNoise)),
	}
	bbar := gaussVec(rng, d)
	zbar := make([]float64, d)
	for i := 0; i < m; i++ {
		p := rng.Perm(d)
		for r := 0; r < d; r++ {
			o.perm[i*d+r] = int32(p[r])
			o.coef[i*d+r] = g
			if rng.IntN(2) == 0 {
				o.coef[i*d+r] = -g
			}
			z := rng.NormFloat64()
			o.b[i*d+r] = z
			zbar[r] += z / float64(m)
		}
	}
	for i := 0; i < m; i++ {
		for r := 0; r < d; r++ {
			o.b[i*d+r] = bbar[r] + c.Noise*(o.b[i*d+r]-zbar[r])
		}
	}
	abar := make([]float64, d*d)
	bmean := make([]float64, d)
	for i := 0; i < m; i++ {
		for r := 0; r < d; r++ {
			abar[r*d+int(o.perm[i*d+r])] += o.coef[i*d+r] / float64(m)
			bmean[r] += o.b[i*d+r] / float64(m)
		}
	}
	xs, err := solveAffine(abar, bmean, d)
	if err != nil {
		return nil, fmt.Errorf("problems: averaged: %w", err)
	}
	// Sigma² = (1/M) Σ_i ‖τ(x*; i) − T(x*)‖₂², with T(x*) = x*.
	tau := make([]float64, d)
	v := 0.0
	for i := 0; i < m; i++ {
		clear(tau)
		o.addTerm(tau, xs, i)
		for r := range tau {
			e := tau[r] - xs[r]
			v += e * e / float64(m)
		}
	}
	return &Problem{Oracle: o, FixedPoint: xs, Sigma: math.Sqrt(v)}, nil
}
