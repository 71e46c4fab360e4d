package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
)

// randSlices returns k random slices of length n, each starting off
// entries into its backing array so that the kernels meet unaligned data.
func randSlices(rng *rand.Rand, k, n, off int) [][]float64 {
	s := make([][]float64, k)
	for j := range s {
		b := make([]float64, n+off)
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		s[j] = b[off:]
	}
	return s
}

func TestDot4(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 70 {
		for _, off := range []int{0, 1, 3} {
			s := randSlices(rng, 5, n, off)
			got := [4]float64{}
			got[0], got[1], got[2], got[3] = Dot4(s[0], s[1], s[2], s[3], s[4])
			for j := range 4 {
				want := floats.Dot(s[j], s[4])
				// A sum of n products in any order is within n·ε·Σ|aᵢyᵢ|
				// of the exact one, and so is floats.Dot's.
				abs := 0.0
				for i := range n {
					abs += math.Abs(s[j][i] * s[4][i])
				}
				require.InDelta(t, want, got[j], 2*float64(n+1)*0x1p-53*abs, "n %d off %d vector %d", n, off, j)
			}
		}
	}
}

func TestAddScaled4(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := [4]float64{0.5, -1.25, 3, 1e-3}
	for n := range 70 {
		for _, off := range []int{0, 1, 2} {
			s := randSlices(rng, 5, n, off)
			dst := append([]float64(nil), s[4]...)
			AddScaled4(dst, w[0], w[1], w[2], w[3], s[0], s[1], s[2], s[3])
			for i := range n {
				var want float64
				if accelerated {
					// Fused multiply–adds in the documented order: the same
					// rounding in the assembly and in its scalar tail.
					want = math.FMA(w[3], s[3][i], math.FMA(w[2], s[2][i], math.FMA(w[1], s[1][i], math.FMA(w[0], s[0][i], s[4][i]))))
					require.Equal(t, want, dst[i], "n %d off %d entry %d", n, off, i)
					continue
				}
				want = s[4][i]
				for j := range 4 {
					want += w[j] * s[j][i]
				}
				require.InDelta(t, want, dst[i], 1e-14*(1+math.Abs(want)), "n %d off %d entry %d", n, off, i)
			}
		}
	}
}

func TestDot2AddScaled2(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := range 40 {
		for _, off := range []int{0, 1} {
			s := randSlices(rng, 3, n, off)
			ra, rb := Dot2(s[0], s[1], s[2])
			want := [2]float64{}
			want[0], want[1], _, _ = Dot4(s[0], s[1], s[0], s[1], s[2])
			for j, got := range []float64{ra, rb} {
				abs := 0.0
				for i := range n {
					abs += math.Abs(s[j][i] * s[2][i])
				}
				require.InDelta(t, floats.Dot(s[j], s[2]), got, 2*float64(n+1)*0x1p-53*abs, "n %d vector %d", n, j)
			}
			// Two of four terms: AddScaled4 with zero weights on copies of
			// finite vectors computes the same fused multiply–adds and
			// additions of exact zeros.
			d2 := append([]float64(nil), s[2]...)
			d4 := append([]float64(nil), s[2]...)
			AddScaled2(d2, 0.75, -2, s[0], s[1])
			AddScaled4(d4, 0.75, -2, 0, 0, s[0], s[1], s[0], s[1])
			for i := range n {
				require.InDelta(t, d4[i], d2[i], 1e-15*(1+math.Abs(d4[i])), "n %d entry %d", n, i)
			}
		}
	}
}

func TestAllFinite(t *testing.T) {
	for n := range 70 {
		x := make([]float64, n)
		for i := range x {
			x[i] = math.MaxFloat64 * float64(1-2*(i%2))
		}
		require.True(t, AllFinite(x), "n %d", n)
		for i := range n {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				old := x[i]
				x[i] = bad
				require.False(t, AllFinite(x), "n %d entry %d %v", n, i, bad)
				x[i] = old
			}
		}
	}
}

func TestLengthsChecked(t *testing.T) {
	a, b := make([]float64, 4), make([]float64, 5)
	require.Panics(t, func() { Dot4(a, a, a, b, a) })
	require.Panics(t, func() { AddScaled4(a, 1, 1, 1, 1, a, a, a, b) })
	require.Panics(t, func() { Dot2(a, b, a) })
	require.Panics(t, func() { AddScaled2(a, 1, 1, b, a) })
}

var sink float64

// benchKernels times Dot4 and AddScaled4 on vectors of length n against
// four calls of gonum's floats.Dot and floats.AddScaled.
func benchKernels(b *testing.B, n int) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := randSlices(rng, 5, n, 0)
	b.Run("Dot4", func(b *testing.B) {
		b.SetBytes(int64(5 * 8 * n))
		for b.Loop() {
			ra, rb, rc, rd := Dot4(s[0], s[1], s[2], s[3], s[4])
			sink = ra + rb + rc + rd
		}
	})
	b.Run("floats.Dot×4", func(b *testing.B) {
		b.SetBytes(int64(5 * 8 * n))
		for b.Loop() {
			sink = floats.Dot(s[0], s[4]) + floats.Dot(s[1], s[4]) + floats.Dot(s[2], s[4]) + floats.Dot(s[3], s[4])
		}
	})
	b.Run("AddScaled4", func(b *testing.B) {
		b.SetBytes(int64(5 * 8 * n))
		for b.Loop() {
			AddScaled4(s[4], 1e-9, -1e-9, 1e-9, -1e-9, s[0], s[1], s[2], s[3])
		}
	})
	b.Run("floats.AddScaled×4", func(b *testing.B) {
		b.SetBytes(int64(5 * 8 * n))
		for b.Loop() {
			floats.AddScaled(s[4], 1e-9, s[0])
			floats.AddScaled(s[4], -1e-9, s[1])
			floats.AddScaled(s[4], 1e-9, s[2])
			floats.AddScaled(s[4], -1e-9, s[3])
		}
	})
}

func BenchmarkKernels4096(b *testing.B)   { benchKernels(b, 1<<12) }
func BenchmarkKernels602112(b *testing.B) { benchKernels(b, 64*48*196) }
