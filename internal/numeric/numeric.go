package numeric

import (
	"bytes"
	"unsafe"

	"github.com/deqgo/deq/internal/vec"
)

// Golden is 2⁶⁴/φ, the increment of the SplitMix64 generator.
const Golden = 0x9e3779b97f4a7c15

// Finalize is the SplitMix64 output function (Stafford's "Mix13"): a
// bijection of uint64 whose outputs for nearby inputs look unrelated. Every
// seed derivation in the module goes through it, so that streams seeded from
// neighbouring values start far apart.
func Finalize(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// SplitMix64 returns the SplitMix64 generator's output for state z:
// Finalize(z + Golden).
func SplitMix64(z uint64) uint64 { return Finalize(z + Golden) }

// Mix hashes two words into one: the boost hash_combine of a and b, then
// Finalize.
func Mix(a, b uint64) uint64 { return Finalize(a ^ (b + Golden + (a << 6) + (a >> 2))) }

// AllFinite reports whether x holds no NaN and no ±Inf. It is
// vec.AllFinite, which tests v − v, 0 for every finite v and NaN
// otherwise, four entries per instruction where the processor has AVX2.
func AllFinite(x []float64) bool { return vec.AllFinite(x) }

// SameBits reports whether a and b hold the same float64 bit patterns (so
// a NaN matches itself and 0 does not match −0). It compares their bytes
// with bytes.Equal, whose vectorised loop is several times faster than a
// loop over the values.
func SameBits(a, b []float64) bool {
	return len(a) == len(b) && bytes.Equal(asBytes(a), asBytes(b))
}

// asBytes returns the bytes of x's values, in memory order, sharing x's
// storage.
func asBytes(x []float64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 8*len(x))
}
