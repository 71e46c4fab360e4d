// Package deqtest checks implicit cells in the style of net/http/httptest
// and testing/fstest: its functions, called from a user's go test with a
// testing.TB, verify that a layers.Cell keeps the promises the rest of the
// module relies on.
//
//   - CheckUnbiased: the sampled oracle Eval is an unbiased estimate of the
//     exact map EvalExact.
//   - CheckFixedPoint: a stochastic solve lands within its residual
//     certificate of the deterministic fixed point, in every norm in which
//     the cell proves its bound.
//   - CheckVJP: the vector–Jacobian products and parameter gradients match
//     central finite differences.
//   - CheckLipschitz: the declared bound Cell.Gamma holds on random and
//     adversarial pairs in every proven norm.
//
// CheckCell runs all four. Each failure is reported with t.Errorf and says
// what differed and by how much; a check never calls t.Fatal, so a caller
// sees every failure of a cell at once. The statistical checks have a
// stated false-alarm probability for a correct cell (Options.Alpha,
// Options.Delta); with a fixed Options.Seed their outcome is reproducible.
//
// A user's test of a cell is a few lines:
//
//	func TestMyCell(t *testing.T) {
//		cell, err := NewMyCell(...)
//		if err != nil {
//			t.Fatal(err)
//		}
//		deqtest.CheckCell(t, cell, &deqtest.Options{Seed: 1})
//	}
//
// In the repository, docs/own-cell.md describes how the checks decide and
// their limits.
package deqtest
