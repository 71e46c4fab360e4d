// Package solver finds fixed points x = T(x) of operators on finite-dimensional
// normed spaces, deterministic or accessed through a stochastic oracle, and
// certifies the residual ‖T(x̂) − x̂‖ of what it returns.
//
// The package works on plain float64 slices and knows nothing of neural
// networks: a point is a []float64 of length Norm.Len() (a batch of examples
// when the norm is Batched), and an operator is an Oracle that writes an
// estimate of T(x) into a destination slice.
//
// # Entry points
//
// Solve runs a Method on a Problem{Oracle, Norm} from a start point under
// Settings and returns a Result holding the final point, a Status saying why
// the method stopped, Stats (iterations, oracle calls, unit samples, trace)
// and a residual Certificate. A nil *Settings and the zero value of every
// method are ready to use: zero fields mean documented defaults.
//
//	norm, _ := solver.NewLP(2, len(x0))
//	res, err := solver.Solve(ctx, solver.Problem{Oracle: t, Norm: norm}, x0,
//		&solver.Settings{Tol: 1e-6}, solver.Anderson{})
//	// res.Status, res.X, res.Certificate.Bound, res.Certificate.Guarantee()
//
// Norms: LP (ℓp, 2 ≤ p < ∞), LInf, Schatten and Batched (per-example norms
// of a batch), built by their constructors or by ParseNorm from a name such
// as "l2" or "schatten:4". Each reports the smoothness constant κ that the
// stochastic methods use in their sample sizes.
//
// Oracles: an Oracle evaluates τ(x; ξ) for a Sample{Seed, Size}, the average
// of Size unit samples from the stream Seed; the same Sample at two points
// reuses the same randomness. Its Model says whether it is Deterministic,
// SamplewiseLipschitz, LipschitzInExpectation or only of BoundedVariance.
// Func wraps a deterministic function.
//
// Methods: Picard, KrasnoselskiiMann, Halpern, GHAL, Anderson and Broyden
// for deterministic oracles; VRGHAL (the variance-reduced gradual Halpern
// method of Diakonikolas, "Solving Stochastic Fixed-Point Equations with
// High Probability") and GrowingBatch for stochastic ones, with the
// baselines MinibatchKM, StochasticHalpern and PAGEHalpern. Methods lists
// them by name; LookupMethod finds one. Any type with a Run(*Env) error
// method is a Method (see ExampleEnv_Buffer).
//
// # Certificates
//
// No finite-sample bound on a mean exists without a known quantity, so an
// oracle declares what it knows through optional interfaces, and the
// certificate uses the one rule its declaration allows (Certificate.Rule):
// the exact residual for a deterministic oracle or a FiniteSum (every DEQ
// cell's evaluator is one); a bound holding with probability at least 1 − δ
// for a NoiseBound, CoordinateNoiseBound or VarianceBound; an estimate with
// no guarantee (Delta NaN) otherwise. Status Success always means a residual
// proven to be at most Settings.Tol; a stochastic method that stops on an
// estimate it cannot prove reports ToleranceEstimated. A FiniteSum that
// also declares a TermBound can be certified from a sample of its terms
// (CertifySettings.Sampled; see SampledRule).
//
// A NaN or ±Inf in an argument, an evaluation or a certificate is an error
// wrapping ErrNonFinite (see Solve); errors name the argument or field at
// fault.
//
// # Speed
//
// Anderson's and Broyden's per-iteration vector work runs in fused,
// allocation-free passes over blocks of their vectors, split between
// goroutines for vectors of at least MinParallelLen entries. Their inner
// products and updates with the stored vectors take four vectors at a
// time with AVX2 and FMA assembly on amd64 processors that have it, and
// gonum's floats elsewhere or with the build tag purego; the two round
// differently, so results differ in their last bits between them.
//
// # Further reading
//
// In the repository: docs/solvers-and-certificates.md (methods, norms,
// declarations and their rules, coverage tests, settings conventions,
// goroutines) and docs/vrghal.md (VR-GHAL: the algorithm, its constants and
// why its guarantee holds).
package solver
