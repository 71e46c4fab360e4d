package f32

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas"
)

// TestMirrorFollowsChanges: a Mirror rounds its values again after a
// change of any one entry, and not otherwise (the same slice is returned
// without allocation).
func TestMirrorFollowsChanges(t *testing.T) {
	v := []float64{1.0 / 3, -2.5, 1e-9, 7}
	var m Mirror
	got := m.Of(v)
	for i, x := range v {
		require.Equal(t, float32(x), got[i])
	}
	require.Zero(t, testing.AllocsPerRun(10, func() { m.Of(v) }))
	for i := range v {
		v[i] += 0.25
		got = m.Of(v)
		for j, x := range v {
			require.Equal(t, float32(x), got[j], "after a change of entry %d", i)
		}
	}
	// A slice of another length is rounded into new storage.
	require.Len(t, m.Of(v[:2]), 2)
}

// TestGemmTransposes compares Gemm, for every transposition, with the
// product of the same float32 operands accumulated in float64, within
// the float32 rounding bound of its k-term sums, and checks that beta = 1
// adds to dst.
func TestGemmTransposes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const m, n, k = 5, 3, 70
	a64, b64 := make([]float64, m*k), make([]float64, k*n)
	for i := range a64 {
		a64[i] = rng.NormFloat64()
	}
	for i := range b64 {
		b64[i] = rng.NormFloat64()
	}
	var a32, b32 []float32
	a, b := Round(&a32, a64), Round(&b32, b64)
	for _, ta := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		for _, tb := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			// The operands in the layout op expects.
			opA, opB := a, b
			if ta == blas.Trans {
				opA = transpose(a, m, k)
			}
			if tb == blas.Trans {
				opB = transpose(b, k, n)
			}
			dst := make([]float32, m*n)
			for i := range dst {
				dst[i] = 1
			}
			Gemm(ta, tb, m, n, k, opA, opB, 1, dst)
			for i := range m {
				for j := range n {
					want, mag := 1.0, 1.0
					for l := range k {
						p := float64(a[i*k+l]) * float64(b[l*n+j])
						want += p
						mag += math.Abs(p)
					}
					bound := float64(k+1) * 0x1p-24 * mag
					require.InDelta(t, want, float64(dst[i*n+j]), bound, "ta %v tb %v [%d,%d]", ta, tb, i, j)
				}
			}
		}
	}
}

// transpose returns the c×r transpose of the row-major r×c matrix x.
func transpose(x []float32, r, c int) []float32 {
	t := make([]float32, len(x))
	for i := range r {
		for j := range c {
			t[j*r+i] = x[i*c+j]
		}
	}
	return t
}

func TestConvertAndAddTo(t *testing.T) {
	src := []float64{1.0 / 3, -1e-3}
	var r []float32
	got := Round(&r, src)
	require.Equal(t, []float32{float32(1.0 / 3), float32(-1e-3)}, got)
	require.Zero(t, testing.AllocsPerRun(10, func() { Round(&r, src) }))
	wide := make([]float64, 2)
	Convert(wide, got)
	require.Equal(t, []float64{float64(float32(1.0 / 3)), float64(float32(-1e-3))}, wide)
	AddTo(wide, got)
	require.Equal(t, 2*float64(float32(1.0/3)), wide[0])
	require.Len(t, Scratch(&r, 5), 5)
}
