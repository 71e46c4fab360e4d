package blasimpl

import (
	"fmt"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"
)

func TestImplementationMultiplies(t *testing.T) {
	Use()
	impl := Implementation()
	a := []float64{1, 2, 3, 4}
	b := []float64{5, 6, 7, 8}
	c := make([]float64, 4)
	impl.Dgemm(blas.NoTrans, blas.NoTrans, 2, 2, 2, 1, a, 2, b, 2, 0, c, 2)
	want := []float64{19, 22, 43, 50}
	for i := range c {
		if c[i] != want[i] {
			t.Fatalf("%s Dgemm = %v, want %v", Name, c, want)
		}
	}
	var _ blas.Float64 = impl
	a32 := []float32{1, 2, 3, 4}
	b32 := []float32{5, 6, 7, 8}
	c32 := make([]float32, 4)
	Implementation32().Sgemm(blas.NoTrans, blas.NoTrans, 2, 2, 2, 1, a32, 2, b32, 2, 0, c32, 2)
	for i := range c32 {
		if float64(c32[i]) != want[i] {
			t.Fatalf("%s Sgemm = %v, want %v", Name, c32, want)
		}
	}
}

func TestUseInstallsEverywhere(t *testing.T) {
	Use()
	want := fmt.Sprintf("%T", Implementation())
	if got := fmt.Sprintf("%T", blas64.Implementation()); got != want {
		t.Errorf("blas64 uses %s, want %s", got, want)
	}
	if got := fmt.Sprintf("%T", blas32.Implementation()); got != fmt.Sprintf("%T", Implementation32()) {
		t.Errorf("blas32 uses %s, want %T", got, Implementation32())
	}
	if got := fmt.Sprintf("%T", G.WhichBLAS()); got != want {
		t.Errorf("gorgonia uses %s, want %s", got, want)
	}
}
