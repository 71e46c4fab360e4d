package blasimpl

import (
	"fmt"
	"testing"

	"gonum.org/v1/gonum/blas"
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
}

func TestUseInstallsEverywhere(t *testing.T) {
	Use()
	want := fmt.Sprintf("%T", Implementation())
	if got := fmt.Sprintf("%T", blas64.Implementation()); got != want {
		t.Errorf("blas64 uses %s, want %s", got, want)
	}
	if got := fmt.Sprintf("%T", G.WhichBLAS()); got != want {
		t.Errorf("gorgonia uses %s, want %s", got, want)
	}
}
