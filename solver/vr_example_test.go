package solver_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"github.com/deqgo/deq/solver"
)

// noisyAffine is a stochastic oracle for T(x) = A x + b on R²: each unit
// sample adds standard Gaussian noise times scale, so the average of n unit
// samples adds noise of variance scale²/n, drawn here in one go. The noise
// does not depend on x, so one Sample at two points gives the exact
// difference A(x − y): the oracle is samplewise Lipschitz. It declares the
// variance of a unit sample (solver.VarianceBound), so that its certificate
// and VR-GHAL's stopping test are rigorous bounds.
type noisyAffine struct {
	a     [2][2]float64
	b     [2]float64
	scale float64
}

func (noisyAffine) Len() int            { return 2 }
func (noisyAffine) Model() solver.Model { return solver.SamplewiseLipschitz }
func (o noisyAffine) exact(dst, x []float64) {
	for i := range 2 {
		dst[i] = o.a[i][0]*x[0] + o.a[i][1]*x[1] + o.b[i]
	}
}

// NoiseVariance implements solver.VarianceBound: E‖scale·g‖² ≤
// E‖scale·g‖₂² = 2·scale² for standard Gaussian g ∈ R², in any ℓp norm,
// p ≥ 2.
func (o noisyAffine) NoiseVariance(_ []float64, _ solver.Norm) float64 { return 2 * o.scale * o.scale }

func (o noisyAffine) Eval(dst, x []float64, s solver.Sample) (int, error) {
	n := max(s.Size, 1)
	rng := rand.New(rand.NewPCG(s.Seed, 1))
	o.exact(dst, x)
	for i := range dst {
		dst[i] += o.scale * rng.NormFloat64() / math.Sqrt(float64(n))
	}
	return n, nil
}

// ExampleVRGHAL solves a noisy linear fixed-point equation in the ℓ∞ norm,
// where T is a 0.8-contraction, to a proven residual of 0.01 (its Success
// means a bound), and certifies the residual of the returned point.
func ExampleVRGHAL() {
	o := noisyAffine{a: [2][2]float64{{0.5, 0.3}, {-0.3, 0.5}}, b: [2]float64{1, -1}, scale: 0.5}
	norm, err := solver.NewLInf(2)
	if err != nil {
		log.Fatal(err)
	}
	res, err := solver.Solve(context.Background(), solver.Problem{Oracle: o, Norm: norm}, []float64{0, 0},
		&solver.Settings{Tol: 0.01, MaxIter: 20, Seed: 1}, solver.VRGHAL{Gamma: 0.8})
	if err != nil {
		log.Fatal(err)
	}
	tx := make([]float64, 2)
	o.exact(tx, res.X)
	fmt.Printf("%v after %d epochs\n", res.Status, res.Stats.Iterations)
	fmt.Printf("x = (%.2f, %.2f); the fixed point is (%.2f, %.2f)\n", res.X[0], res.X[1], 0.2/0.34, -0.8/0.34)
	fmt.Printf("true residual below 0.01: %v\n", math.Max(math.Abs(tx[0]-res.X[0]), math.Abs(tx[1]-res.X[1])) < 0.01)
	fmt.Printf("certified residual below 0.02 with probability %.2f (rule %v): %v\n", 1-res.Certificate.Delta, res.Certificate.Rule, res.Certificate.Bound < 0.02)
	// Output:
	// Success after 8 epochs
	// x = (0.59, -2.35); the fixed point is (0.59, -2.35)
	// true residual below 0.01: true
	// certified residual below 0.02 with probability 0.95 (rule variance-mom): true
}
