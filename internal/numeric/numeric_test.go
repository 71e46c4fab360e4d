package numeric

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplitMix64KnownValues(t *testing.T) {
	// The first outputs of the SplitMix64 generator seeded with 0 (Vigna's
	// reference implementation): state k·Golden gives output k+1.
	want := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}
	var s uint64
	for i, w := range want {
		require.Equal(t, w, SplitMix64(s), "output %d", i)
		s += Golden
	}
}

func TestFinalizeIsABijectionOnASample(t *testing.T) {
	seen := map[uint64]uint64{}
	for z := range uint64(1 << 16) {
		f := Finalize(z)
		_, dup := seen[f]
		require.False(t, dup, "Finalize(%d) repeats Finalize(%d)", z, seen[f])
		seen[f] = z
	}
}

func TestMixDependsOnBothWords(t *testing.T) {
	require.NotEqual(t, Mix(1, 2), Mix(2, 1))
	require.NotEqual(t, Mix(1, 2), Mix(1, 3))
	require.NotEqual(t, Mix(1, 2), Mix(0, 2))
}

func TestAllFinite(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want bool
	}{
		{nil, true},
		{[]float64{0, -1, math.MaxFloat64, math.SmallestNonzeroFloat64}, true},
		{[]float64{1, math.NaN()}, false},
		{[]float64{math.Inf(1), 0}, false},
		{[]float64{0, math.Inf(-1)}, false},
	} {
		require.Equal(t, tc.want, AllFinite(tc.x), "%v", tc.x)
	}
}

func TestSameBits(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		a, b []float64
		want bool
	}{
		{nil, nil, true},
		{nil, []float64{}, true},
		{[]float64{1, 2}, []float64{1, 2}, true},
		{[]float64{1, 2}, []float64{1}, false},
		{[]float64{1, 2}, []float64{1, math.Nextafter(2, 3)}, false},
		{[]float64{nan}, []float64{nan}, true},
		{[]float64{0}, []float64{math.Copysign(0, -1)}, false},
	} {
		require.Equal(t, tc.want, SameBits(tc.a, tc.b), "%v, %v", tc.a, tc.b)
	}
}

// BenchmarkSameBits compares two equal vectors of a dense cell's weights
// (128×128), as f32.Mirror does before every product.
func BenchmarkSameBits(b *testing.B) {
	x := make([]float64, 128*128)
	for i := range x {
		x[i] = float64(i) / 7
	}
	y := slices.Clone(x)
	b.SetBytes(int64(16 * len(x)))
	for b.Loop() {
		if !SameBits(x, y) {
			b.Fatal("equal vectors differ")
		}
	}
}
