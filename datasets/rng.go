package datasets

import "math/rand/v2"

// mix64 is the SplitMix64 finaliser, a bijection of uint64 whose outputs for
// nearby inputs look unrelated.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// seedPCG seeds p for item index of stream from seed. Seeds, streams and
// indices are hashed so that neighbouring values start PCG states far apart
// (PCG states that differ by a small constant produce correlated output).
func seedPCG(p *rand.PCG, seed, stream, index uint64) {
	s := mix64(seed ^ mix64(stream))
	p.Seed(mix64(s^index), mix64(s+mix64(index)))
}
