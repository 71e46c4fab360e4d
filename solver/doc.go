// Package solver finds fixed points x = T(x) of operators on finite-dimensional
// normed spaces, deterministic or accessed through a stochastic oracle, and
// certifies the residual ‖T(x̂) − x̂‖ of what it returns.
//
// The package works on plain float64 slices. It knows nothing of neural
// networks: a point is a []float64 of length Norm.Len(), laid out as a batch of
// examples (see Batched), and an operator is an Oracle that writes an estimate
// of T(x) into a destination slice.
//
// # Norms
//
// Residuals, tolerances and Lipschitz constants are measured in the native norm
// of the space: ℓp for 2 ≤ p < ∞ (LP), ℓ∞ (LInf) and Schatten-p for
// 2 ≤ p ≤ ∞ on matrices (Schatten). Every norm reports the smoothness constant
// κ of the reference paper (Definition "Quadratically Smoothable Space"), which
// the stochastic methods use in their sample sizes. Batched combines per-example
// norms; its aggregate is the maximum over examples unless set otherwise.
//
// # Oracles
//
// An Oracle evaluates τ(x; ξ) for a Sample{Seed, Size}: the average of Size
// unit samples drawn from the stream Seed. The same Sample at two points reuses
// the same randomness (the multi-query oracle of the paper). A deterministic
// oracle returns T(x) exactly and says so through its Model, so that methods
// spend a single evaluation where the noise is zero. Stats count both oracle
// calls and unit samples.
//
// # Methods
//
// Solve runs a Method from a start point under Settings and returns a Result
// holding the final point, a Status saying why the method stopped, Stats and a
// residual Certificate. Deterministic methods: Picard, KrasnoselskiiMann,
// Halpern, GHAL, Anderson and Broyden.
//
// # Reliability
//
// Constructors, ParseNorm, ParseModel, Solve and every method's Validate
// return errors that name the bad field or value; they do not panic on bad
// input (Norm.Norm and Batched.Each panic on a point of the wrong length, a
// programming error). An oracle value that is NaN or ±Inf stops the method at
// once with Status Diverged, and Result.X is then the best finite point
// recorded (the start point if none was). For an oracle whose answers depend
// only on the point and the Sample, as the Oracle contract requires, results
// depend only on the problem, the start point, the Settings (Settings.Seed
// included) and the method: the same inputs give the same Result bit for bit,
// wall-clock times aside. A Method value holds only settings and may be shared
// by goroutines; oracles and norms may hold scratch space, so each concurrent
// solve needs its own (Norm.Clone). Anderson and Broyden allocate their
// history once, in proportion to their Memory setting (capped at
// Settings.MaxIter + 1 slots), and nothing per iteration besides the trace.
//
// # Fuzzing
//
// FuzzParseNorm checks that ParseNorm never panics and that accepted names
// round-trip through String. Its seed corpus (testdata/fuzz) runs with every
// go test; to search further:
//
//	go test -run '^$' -fuzz '^FuzzParseNorm$' -fuzztime 60s ./solver/
package solver
