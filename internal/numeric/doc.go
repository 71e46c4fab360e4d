// Package numeric holds the small numeric helpers that several of the
// library's packages share: the SplitMix64 seed mixer and a finiteness check.
// It is internal: its names are not part of the module's API.
package numeric
