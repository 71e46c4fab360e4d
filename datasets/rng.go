package datasets

import (
	"math/rand/v2"

	"github.com/deqgo/deq/internal/numeric"
)

// seedPCG seeds p for item index of stream from seed. Seeds, streams and
// indices are hashed with the SplitMix64 output function so that
// neighbouring values start PCG states far apart (PCG states that differ by
// a small constant produce correlated output).
func seedPCG(p *rand.PCG, seed, stream, index uint64) {
	s := numeric.SplitMix64(seed ^ numeric.SplitMix64(stream))
	p.Seed(numeric.SplitMix64(s^index), numeric.SplitMix64(s+numeric.SplitMix64(index)))
}
