package train

import (
	"crypto/sha256"
	"encoding/binary"
	"math"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/internal/numeric"
)

// fingerprint returns a SHA-256 digest of the training and test sets.
func fingerprint(sets ...*datasets.Dataset) [32]byte {
	h := sha256.New()
	buf := make([]byte, 0, 8<<10)
	flush := func() {
		h.Write(buf)
		buf = buf[:0]
	}
	for _, d := range sets {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(d.Len()))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(d.Rows))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(d.Cols))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(d.Classes))
		for _, v := range d.X {
			if len(buf)+8 > cap(buf) {
				flush()
			}
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
		}
		for _, y := range d.Y {
			if len(buf)+8 > cap(buf) {
				flush()
			}
			buf = binary.LittleEndian.AppendUint64(buf, uint64(y))
		}
	}
	flush()
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// mix3 hashes three words into one.
func mix3(a, b, c uint64) uint64 { return numeric.Mix(numeric.Mix(a, b), c) }
