package solver_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"github.com/deqgo/deq/solver"
)

// boundedAffine samples T(x) = A x + b on R³ with noise uniform on
// [−0.2, 0.2] in every coordinate: one unit sample deviates from T(x) by at
// most 0.2 in ℓ∞, almost surely, which it declares (solver.NoiseBound).
type boundedAffine struct{}

func (boundedAffine) Len() int            { return 3 }
func (boundedAffine) Model() solver.Model { return solver.SamplewiseLipschitz }

// NoiseBound implements solver.NoiseBound: ‖τ₁(x) − T(x)‖∞ ≤ 0.2, and in ℓ2
// at most 0.2·√3.
func (boundedAffine) NoiseBound(_ []float64, n solver.Norm) float64 {
	if _, ok := n.(solver.LInf); ok {
		return 0.2
	}
	return 0.2 * math.Sqrt(3)
}

func (boundedAffine) exact(dst, x []float64) {
	dst[0] = 0.4*x[0] + 0.2*x[1] + 1
	dst[1] = 0.2*x[1] - 0.3*x[2] - 1
	dst[2] = 0.1*x[0] + 0.5*x[2] + 0.5
}

// Eval writes the average of s.Size unit samples of T(x) to dst.
func (o boundedAffine) Eval(dst, x []float64, s solver.Sample) (int, error) {
	n := max(s.Size, 1)
	rng := rand.New(rand.NewPCG(s.Seed, 2))
	o.exact(dst, x)
	for i := range dst {
		sum := 0.0
		for range n {
			sum += 0.4*rng.Float64() - 0.2
		}
		dst[i] += sum / float64(n)
	}
	return n, nil
}

// ExampleNoiseBound solves a fixed-point equation whose oracle declares an
// almost-sure bound on its noise, and reads the rigorous certificate of
// the returned point: its rule, the probability with which it holds and
// what it guarantees.
func ExampleNoiseBound() {
	o := boundedAffine{}
	norm, err := solver.NewLInf(3)
	if err != nil {
		log.Fatal(err)
	}
	res, err := solver.Solve(context.Background(), solver.Problem{Oracle: o, Norm: norm},
		[]float64{0, 0, 0}, &solver.Settings{Tol: 0.02, Seed: 3}, solver.VRGHAL{Gamma: 0.6})
	if err != nil {
		log.Fatal(err)
	}
	c := res.Certificate
	tx := make([]float64, 3)
	o.exact(tx, res.X)
	r := 0.0
	for i := range tx {
		r = math.Max(r, math.Abs(tx[i]-res.X[i]))
	}
	fmt.Println("status:", res.Status)
	fmt.Printf("rule %v, rigorous %v, holds with probability ≥ %.3f\n", c.Rule, c.Rigorous(), 1-c.Delta)
	fmt.Println("certified ‖T(x) − x‖∞ ≤ tol:", c.Bound <= 0.02)
	fmt.Println("true residual within the certificate:", r <= c.Bound)
	// Output:
	// status: Success
	// rule bounded-noise, rigorous true, holds with probability ≥ 0.955
	// certified ‖T(x) − x‖∞ ≤ tol: true
	// true residual within the certificate: true
}
