package layers

import (
	"math"
	"math/rand/v2"
	"testing"
)

// activationCases are pre-activations at every kind of float64 the kernels
// must tell apart: signed zeros, subnormals, infinities and ordinary values
// of both signs.
var activationCases = []float64{
	0, math.Copysign(0, -1), 5e-324, -5e-324, math.SmallestNonzeroFloat64 * 3,
	1, -1, 0.5, -0.25, 1e300, -1e300, math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64,
}

func TestActivationKernels(t *testing.T) {
	for _, a := range []Activation{ReLU, Tanh} {
		for _, pre := range activationCases {
			var sigma, slope float64
			switch a {
			case ReLU:
				sigma = 0
				if pre > 0 {
					sigma, slope = pre, 1
				}
			case Tanh:
				sigma = math.Tanh(pre)
				slope = 1 - sigma*sigma
			}
			// ReLU's values are exact; tanh's go through arithmetic that
			// the compiler may fuse differently here and in the kernels.
			near := func(got, want float64) bool {
				return got == want || math.Abs(got-want) <= 1e-15*math.Abs(want)
			}
			x := []float64{pre}
			a.apply(x)
			if !near(x[0], sigma) {
				t.Errorf("%v.apply(%v) = %v, want %v", a, pre, x[0], sigma)
			}
			d := []float64{3, 7} // longer than act: backward stops at act's end
			a.backward(d, x)
			if want := 3 * slope; !near(d[0], want) || d[1] != 7 {
				t.Errorf("%v.backward(3, σ(%v)) = %v, want [%v 7]", a, pre, d, want)
			}
			a.derivative(x)
			if !near(x[0], slope) {
				t.Errorf("%v.derivative(σ(%v)) = %v, want %v", a, pre, x[0], slope)
			}
		}
	}
}

func TestReLUKeepsNaN(t *testing.T) {
	x := []float64{math.NaN()}
	ReLU.apply(x)
	if !math.IsNaN(x[0]) {
		t.Errorf("ReLU.apply(NaN) = %v, want NaN", x[0])
	}
}

func BenchmarkReLUApply(b *testing.B) { benchActivation(b, ReLU.apply) }
func BenchmarkReLUBackward(b *testing.B) {
	benchActivation(b, func(x []float64) { ReLU.backward(x, x) })
}

// benchActivation times kernel on a dense-batch-sized vector (128×128) of
// pre-activations whose signs are random, as in training.
func benchActivation(b *testing.B, kernel func([]float64)) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float64, benchHidden*benchHidden)
	for i := range src {
		src[i] = rng.NormFloat64()
	}
	x := make([]float64, len(src))
	b.ReportAllocs()
	b.SetBytes(int64(8 * len(x)))
	for b.Loop() {
		copy(x, src)
		kernel(x)
	}
}
