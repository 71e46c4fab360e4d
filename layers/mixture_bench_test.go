package layers

import "testing"

// benchMixture is a Mixture cell of the benchmark shapes: 8 terms (patches)
// of 16 input features each, 128 hidden features.
func benchMixture() Cell {
	return mustCell(NewMixture(MixtureConfig{Hidden: benchHidden, Terms: 8, PatchLen: benchHidden / 8, Seed: 1}))
}

func BenchmarkMixtureForward(b *testing.B)         { benchOp(b, benchMixture(), "eval", 0) }
func BenchmarkMixtureForwardSampled(b *testing.B)  { benchOp(b, benchMixture(), "eval", 2) }
func BenchmarkMixtureVJPHidden(b *testing.B)       { benchOp(b, benchMixture(), "vjp-hidden", 0) }
func BenchmarkMixtureVJPHiddenSample(b *testing.B) { benchOp(b, benchMixture(), "vjp-hidden", 2) }
func BenchmarkMixtureVJP(b *testing.B)             { benchOp(b, benchMixture(), "vjp", 0) }
