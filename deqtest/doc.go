// Package deqtest checks implicit cells in the style of net/http/httptest
// and testing/fstest: its functions, called from a user's go test with a
// testing.TB, verify that a layers.Cell keeps the promises the rest of the
// module relies on.
//
//   - CheckUnbiased: the sampled oracle Eval is an unbiased estimate of the
//     exact map EvalExact. Many draws are averaged at random points (z, x)
//     and every coordinate's mean must lie within a z-score bound of the
//     exact value, the bound derived from the draws' own sample variance
//     with a Bonferroni correction over all coordinates checked.
//   - CheckFixedPoint: a stochastic solve (minibatch Krasnoselskii–Mann on
//     the sampled oracle, with a small budget) lands within its residual
//     certificate of the deterministic fixed point z* found by Anderson
//     acceleration on the exact map to 1e-10: ‖ẑ − z*‖ ≤ Bound/(1 − γ̄) per example, the
//     residual-to-distance bound of a γ̄-contraction, in every norm among
//     Options.Norms in which the cell proves its bound (Cell.Proven).
//   - CheckVJP: VJP's (∂f/∂z)ᵀg, (∂f/∂x)ᵀg and every parameter gradient,
//     and VJPHidden for a fixed Sample, match central finite differences.
//   - CheckLipschitz: the declared bound γ̄ = Cell.Gamma holds on random
//     and adversarial pairs in every proven norm, for the exact map and,
//     for a SamplewiseLipschitz oracle, for sampled maps with one Sample.
//
// CheckCell runs all four. Each failure is reported with t.Errorf and says
// what differed and by how much; a check never calls t.Fatal, so a caller
// sees every failure of a cell at once. The checks restore the cell's
// parameters and gradients when they return, and leave the evaluators'
// inputs set to something arbitrary.
//
// The statistical checks (unbiasedness, certificates) have a stated
// false-alarm probability (Options.Alpha, Options.Delta) for a correct cell;
// with a fixed Options.Seed their outcome is reproducible.
//
// # Example
//
// A user's test of a cell is a few lines (the package's example_test.go
// checks a user-defined cell this way):
//
//	func TestMyCell(t *testing.T) {
//		cell, err := NewMyCell(...)
//		if err != nil {
//			t.Fatal(err)
//		}
//		deqtest.CheckCell(t, cell, nil)
//	}
//
// # Limitations
//
//   - The finite-difference checks assume f is differentiable at the
//     points drawn; for piecewise-linear activations (ReLU) a mismatch is
//     reported only if it recurs at Options.Retries further random points,
//     since a kink within the step of a pre-activation (probability about
//     the step size per pre-activation) spoils one point's differences.
//   - Lipschitz pairs give evidence, not proof: a bound that is only a few
//     per cent too small may survive the pairs drawn.
//   - The LipschitzInExpectation model's mean-square condition on sampled
//     maps is not checked; only the exact map's bound is.
//   - Cells are evaluated on small batches (Options.Batch examples) and
//     every coordinate is perturbed up to Options.MaxCoords per argument:
//     the checks are meant for small test instances of a cell.
package deqtest
