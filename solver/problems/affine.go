package problems

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/solver"
)

// Salts separating the random streams of a problem.
const (
	saltBuild uint64 = iota + 1
	saltNoise
)

// maxCond is the largest condition number of I − A accepted for the LU
// solve of a fixed point; beyond it New reports an error rather than an
// inaccurate answer.
const maxCond = 1e10

// affineOracle is T(x) = Ax + b on R^d with dense A and additive noise.
type affineOracle struct {
	d     int
	a     blas64.General
	b     []float64
	sigma float64
	kind  noiseKind
	// For switchNoise: the noise sign is that of ⟨u, x − xs⟩.
	u, xs []float64
	noise noiseSource
	model solver.Model
}

var (
	_ Oracle               = (*affineOracle)(nil)
	_ solver.VarianceBound = (*affineOracle)(nil)
)

// NoiseVariance implements solver.VarianceBound. A unit sample's noise is
// σ·ζ with independent coordinates of variance 1: Gaussian (its second
// moment in the norm is bounded by gaussSecondMoment), Student-t with
// ν = 2.5 scaled to variance 1 (only moments below 2.5 exist, so the ℓ2
// value E‖ζ‖₂² = d, which bounds every norm of the suite), or for
// "affine-switch" a Gaussian times a sign, whose norm is the Gaussian's.
func (o *affineOracle) NoiseVariance(_ []float64, norm solver.Norm) float64 {
	if o.kind == studentNoise {
		return o.sigma * o.sigma * float64(o.d)
	}
	return o.sigma * o.sigma * gaussSecondMoment(norm)
}

func (o *affineOracle) Len() int            { return o.d }
func (o *affineOracle) Model() solver.Model { return o.model }

func (o *affineOracle) apply(dst, x []float64) {
	copy(dst, o.b)
	blas64.Gemv(blas.NoTrans, 1, o.a, blas64.Vector{N: o.d, Inc: 1, Data: x}, 1, blas64.Vector{N: o.d, Inc: 1, Data: dst})
}

// EvalExact implements solver.Exact.
func (o *affineOracle) EvalExact(dst, x []float64) error {
	if err := checkEval(o.d, dst, x, solver.Sample{}, false); err != nil {
		return err
	}
	o.apply(dst, x)
	return nil
}

// Eval implements solver.Oracle.
func (o *affineOracle) Eval(dst, x []float64, s solver.Sample) (int, error) {
	if err := checkEval(o.d, dst, x, s, true); err != nil {
		return 0, err
	}
	o.apply(dst, x)
	rng := o.noise.reset(s.Seed)
	switch o.kind {
	case gaussNoise:
		addGaussMean(dst, rng, o.sigma, s.Size)
	case studentNoise:
		addStudentMean(dst, rng, o.sigma, s.Size)
	case switchNoise:
		side := 0.0
		for i, u := range o.u {
			side += u * (x[i] - o.xs[i])
		}
		sigma := o.sigma
		if side < 0 {
			sigma = -sigma
		}
		addGaussMean(dst, rng, sigma, s.Size)
	}
	return s.Size, nil
}

// newAffine builds "affine", "affine-t" or "affine-switch".
func newAffine(c Config, norm solver.Norm, kind noiseKind) (*Problem, error) {
	d := c.Dim
	rng := rand.New(rand.NewPCG(c.Seed, mix(c.Seed, saltBuild)))
	var a []float64
	switch normKind(norm) {
	case "l2":
		a = spectralScaled(rng, d, d, c.Gamma)
	case "linf":
		a = rowScaled(rng, d, c.Gamma)
	default: // ℓp, 2 < p < ∞
		a = doublyScaled(rng, d, c.Gamma)
	}
	o, p, err := newAffineProblem(c, a, gaussVec(rng, d), kind)
	if err != nil {
		return nil, err
	}
	if kind == switchNoise {
		o.u = gaussVec(rng, d)
		o.xs = p.FixedPoint
		o.model = solver.BoundedVariance
	}
	return p, nil
}

// newAffineProblem returns the problem T(x) = Ax + b on R^{c.Dim}, A
// row-major, with noise of the given kind and level c.Noise, its oracle and
// its fixed point solved by LU.
func newAffineProblem(c Config, a, b []float64, kind noiseKind) (*affineOracle, *Problem, error) {
	d := c.Dim
	xs, err := solveAffine(a, b, d)
	if err != nil {
		return nil, nil, fmt.Errorf("problems: %s: %w", c.Name, err)
	}
	o := &affineOracle{
		d:     d,
		a:     blas64.General{Rows: d, Cols: d, Stride: d, Data: a},
		b:     b,
		sigma: c.Noise,
		kind:  kind,
		noise: newNoiseSource(mix(c.Seed, saltNoise)),
		model: solver.SamplewiseLipschitz,
	}
	return o, &Problem{Oracle: o, FixedPoint: xs, Sigma: c.Noise * math.Sqrt(float64(d))}, nil
}

// newShift builds "shift": T(x) = γRx + b with (Rx)_0 = −x_{d−1} and
// (Rx)_i = x_{i−1}. R is a signed permutation, an isometry of every ℓp norm,
// and R^d = −I, so no eigenvalue of γR is 1 and the fixed point is unique.
func newShift(c Config, _ solver.Norm) (*Problem, error) {
	d := c.Dim
	rng := rand.New(rand.NewPCG(c.Seed, mix(c.Seed, saltBuild)))
	a := make([]float64, d*d)
	a[d-1] = -c.Gamma // row 0, column d−1
	for i := 1; i < d; i++ {
		a[i*d+i-1] = c.Gamma
	}
	_, p, err := newAffineProblem(c, a, gaussVec(rng, d), gaussNoise)
	return p, err
}

func gaussVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return v
}

// spectralScaled returns a rows×cols Gaussian matrix scaled to spectral norm
// gamma (up to rounding), row-major.
func spectralScaled(rng *rand.Rand, rows, cols int, gamma float64) []float64 {
	g := mat.NewDense(rows, cols, gaussVec(rng, rows*cols))
	var svd mat.SVD
	if !svd.Factorize(g, mat.SVDNone) {
		panic("problems: SVD of a Gaussian matrix failed")
	}
	s := gamma / svd.Values(nil)[0]
	data := g.RawMatrix().Data
	for i := range data {
		data[i] *= s
	}
	return data
}

// checkFinite returns an error wrapping solver.ErrNonFinite that names
// the first NaN or ±Inf of v as what[i], or nil.
func checkFinite(what string, v []float64) error {
	for i, x := range v {
		if x-x != 0 {
			return fmt.Errorf("%s[%d] = %v: %w", what, i, x, solver.ErrNonFinite)
		}
	}
	return nil
}

// rowScaled returns a d×d Gaussian matrix whose rows all have absolute sum
// gamma: its induced ℓ∞ norm is gamma.
func rowScaled(rng *rand.Rand, d int, gamma float64) []float64 {
	a := gaussVec(rng, d*d)
	for i := 0; i < d; i++ {
		row := a[i*d : (i+1)*d]
		s := 0.0
		for _, v := range row {
			s += math.Abs(v)
		}
		for j := range row {
			row[j] *= gamma / s
		}
	}
	return a
}

// doublyScaled returns a d×d matrix with random signs whose absolute values
// are Sinkhorn-balanced towards doubly stochastic and then scaled so that the
// larger of the maximum absolute row sum and column sum is exactly gamma. By
// Riesz–Thorin its induced ℓp norm is at most gamma for every p ∈ [1, ∞].
func doublyScaled(rng *rand.Rand, d int, gamma float64) []float64 {
	a := make([]float64, d*d)
	for i := range a {
		a[i] = rng.ExpFloat64()
	}
	col := make([]float64, d)
	for it := 0; it < 50; it++ {
		for i := 0; i < d; i++ {
			row := a[i*d : (i+1)*d]
			s := 0.0
			for _, v := range row {
				s += v
			}
			for j := range row {
				row[j] /= s
			}
		}
		clear(col)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				col[j] += a[i*d+j]
			}
		}
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				a[i*d+j] /= col[j]
			}
		}
	}
	for i := range a {
		if rng.IntN(2) == 0 {
			a[i] = -a[i]
		}
	}
	m := mat.NewDense(d, d, a)
	s := gamma / math.Max(mat.Norm(m, 1), mat.Norm(m, math.Inf(1)))
	for i := range a {
		a[i] *= s
	}
	return a
}

// solveAffine returns the solution of (I − A)x = b for the n×n row-major A by
// LU factorisation, or an error if I − A is too ill-conditioned, or, before
// any factorisation, one wrapping solver.ErrNonFinite if A or b holds NaN
// or ±Inf.
func solveAffine(a, b []float64, n int) ([]float64, error) {
	if err := checkFinite("A", a); err != nil {
		return nil, err
	}
	if err := checkFinite("b", b); err != nil {
		return nil, err
	}
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			v := -a[i*n+j]
			if i == j {
				v++
			}
			m.Set(i, j, v)
		}
	}
	var lu mat.LU
	lu.Factorize(m)
	if c := lu.Cond(); !(c <= maxCond) {
		return nil, fmt.Errorf("I − A has condition number %.3g > %.0g: the fixed point is not well determined (try another seed or a smaller gamma)", c, maxCond)
	}
	x := mat.NewVecDense(n, nil)
	if err := lu.SolveVecTo(x, false, mat.NewVecDense(n, append([]float64(nil), b...))); err != nil {
		return nil, err
	}
	return x.RawVector().Data, nil
}
