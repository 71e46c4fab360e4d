// Package numeric holds the small numeric helpers that several of the
// library's packages share: the SplitMix64 seed mixer, a finiteness check
// and a bit-for-bit comparison of float64 slices.
// It is internal: its names are not part of the module's API.
package numeric
