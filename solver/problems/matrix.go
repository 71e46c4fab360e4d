package problems

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/deqgo/deq/solver"
)

// matrixOracle is X ↦ AXB + C on n×n row-major matrices with additive
// Gaussian noise. Since ‖AXB‖_Sp ≤ ‖A‖op‖X‖_Sp‖B‖op for every Schatten-p
// norm, with equality for a rank-one X aligned with the top singular vectors,
// its Lipschitz constant is exactly ‖A‖op‖B‖op = γ in every Schatten norm.
type matrixOracle struct {
	n       int
	a, b    blas64.General
	c       []float64
	sigma   float64
	tmp     blas64.General
	noise   noiseSource
	nSquare int
}

var (
	_ Oracle               = (*matrixOracle)(nil)
	_ solver.VarianceBound = (*matrixOracle)(nil)
)

// NoiseVariance implements solver.VarianceBound: σ² times the bound
// gaussSecondMoment on E‖G‖² for a standard Gaussian n×n matrix G.
func (o *matrixOracle) NoiseVariance(_ []float64, norm solver.Norm) float64 {
	return o.sigma * o.sigma * gaussSecondMoment(norm)
}

func (o *matrixOracle) Len() int            { return o.nSquare }
func (o *matrixOracle) Model() solver.Model { return solver.SamplewiseLipschitz }

func (o *matrixOracle) apply(dst, x []float64) {
	n := o.n
	xm := blas64.General{Rows: n, Cols: n, Stride: n, Data: x}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, o.a, xm, 0, o.tmp)
	copy(dst, o.c)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, o.tmp, o.b, 1, blas64.General{Rows: n, Cols: n, Stride: n, Data: dst})
}

// EvalExact implements solver.Exact.
func (o *matrixOracle) EvalExact(dst, x []float64) error {
	if err := checkEval(o.nSquare, dst, x, solver.Sample{}, false); err != nil {
		return err
	}
	o.apply(dst, x)
	return nil
}

// Eval implements solver.Oracle.
func (o *matrixOracle) Eval(dst, x []float64, s solver.Sample) (int, error) {
	if err := checkEval(o.nSquare, dst, x, s, true); err != nil {
		return 0, err
	}
	o.apply(dst, x)
	addGaussMean(dst, o.noise.reset(s.Seed), o.sigma, s.Size)
	return s.Size, nil
}

// newMatrix builds "matrix": A has spectral norm γ, B spectral norm 1, C is
// Gaussian. The fixed point solves the n²×n² system (I − A⊗Bᵀ)vec(X) = vec(C)
// (row-major vec), by LU.
func newMatrix(c Config, _ solver.Norm) (*Problem, error) {
	n := c.Dim
	rng := rand.New(rand.NewPCG(c.Seed, mix(c.Seed, saltBuild)))
	a := spectralScaled(rng, n, n, c.Gamma)
	b := spectralScaled(rng, n, n, 1)
	cm := gaussVec(rng, n*n)
	n2 := n * n
	k := make([]float64, n2*n2)
	// (AXB)_{ij} = Σ_{k,l} A_{ik} X_{kl} B_{lj}.
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			row := k[(i*n+j)*n2:]
			for p := 0; p < n; p++ {
				for q := 0; q < n; q++ {
					row[p*n+q] = a[i*n+p] * b[q*n+j]
				}
			}
		}
	}
	xs, err := solveAffine(k, cm, n2)
	if err != nil {
		return nil, fmt.Errorf("problems: matrix: %w", err)
	}
	o := &matrixOracle{
		n:       n,
		a:       blas64.General{Rows: n, Cols: n, Stride: n, Data: a},
		b:       blas64.General{Rows: n, Cols: n, Stride: n, Data: b},
		c:       cm,
		sigma:   c.Noise,
		tmp:     blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n2)},
		noise:   newNoiseSource(mix(c.Seed, saltNoise)),
		nSquare: n2,
	}
	return &Problem{Oracle: o, FixedPoint: xs, Sigma: c.Noise * float64(n)}, nil
}
