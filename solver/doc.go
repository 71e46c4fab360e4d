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
// κ of a quadratically smoothable space, as the reference paper defines it,
// which the stochastic methods use in their sample sizes. Batched combines per-example
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
// residual Certificate.
//
// Deterministic methods (they need a Deterministic oracle and return the
// lowest-residual iterate they evaluated): Picard, KrasnoselskiiMann,
// Halpern, GHAL, Anderson and Broyden.
//
// VRGHAL is the variance-reduced gradual Halpern method of the reference
// paper, "Solving Stochastic Fixed-Point Equations with High Probability" by
// Jelena Diakonikolas (its VR-GHAL algorithm, Section 3): epochs of
// Halpern-type inner steps anchored at the previous epoch's point, an
// estimate of T at every epoch start, and recursive estimates built from
// clipped minibatch differences in between, with the paper's schedules and
// sample sizes for the three oracle models. It is anytime: it returns the
// last completed epoch's point. The page docs/vrghal.md describes it.
//
// Stochastic baselines behind the same interface and sample accounting:
// MinibatchKM, StochasticHalpern (growing minibatches) and PAGEHalpern
// (recursive variance reduction).
//
// Methods lists every method under its name (its String()) with a summary,
// the oracle model it needs and a constructor from MethodOptions;
// LookupMethod finds one by name, so that command lines and configuration
// files spell names in one place. Settings.Tol is the residual target of
// every method: Success means the residual is proven to be at most Tol (see
// Certificates).
//
// # Zero values and limits
//
// The zero value of every field of Settings and of every method is its
// documented default (a Default… constant of this package) or has no
// effect, so that a nil *Settings, &Settings{} and a method's zero value are
// ready to use. Negative and NaN values are errors. A limit whose zero value
// already means "none" (Settings.MaxSamples, Settings.MaxTime) is off at
// zero; a limit with a finite default is lifted in one way, by setting it to
// +Inf (Settings.DivergenceFactor, Broyden.Protect). Counts (MaxIter,
// Patience, memories) have no "off" value: set them as large as needed.
// Switches that turn off a default behaviour are booleans named for what
// they do (Settings.NoTrace, CertifySettings.Skip, MinibatchKM.FixedBatch),
// so that their zero value keeps the default, and VRGHAL.Model's zero value,
// UnspecifiedModel, takes the oracle's own model.
//
// # Goroutines
//
// A solve runs its method, oracle and norm on the calling goroutine. The
// passes over whole vectors that the Env makes for every method (copies,
// finiteness checks, Dist's difference) and Anderson's own (residuals with their inner
// products, the mixing step) are shared by Settings.Workers goroutines:
// by default GOMAXPROCS of them on problems of dimension at least
// MinParallelLen, where a pass is long enough to pay for waking a helper,
// and the caller alone below. The result does not depend on the number of
// workers, bit for bit: the passes cut vectors into blocks of a fixed
// length and add the blocks' partial inner products in block order. The
// helpers work only during a pass: each has finished its blocks when the
// pass returns and exits right after.
//
// # Methods written outside the package
//
// Any type with a Run(*Env) error method is a Method. Besides evaluating
// and recording through the Env, it can take its vectors from the solve's
// Workspace (Env.Buffer, so that a solve through a kept Workspace allocates
// nothing) and run its vector work through the Env's passes (Env.Copy,
// Env.Sub, Env.AddScaled, Env.Dist), which Settings.Workers shares as it
// does the built-in methods' (ExampleEnv_Buffer).
//
// # Errors
//
// Errors name the argument or field at fault. Those that callers branch on
// are sentinel values or types: ErrUnknownMethod, ErrUnknownModel,
// ErrUnknownStatus and ErrUnknownAggregate from the lookups and Parse…
// functions, *NormError from ParseNorm and the norm constructors,
// ErrNonFinite for a NaN or ±Inf in an argument, an evaluation or a
// certificate (see Solve), and StopStatus for the errors that stop a
// method.
//
// # Certificates
//
// After every solve, the Result's Certificate bounds ‖T(x̂) − x̂‖ using
// only what the oracle declares, and says what it guarantees (see CertRule
// and Certificate.Guarantee). By the Bahadur–Savage argument no
// finite-sample bound on a mean exists without a known quantity, so an
// oracle states what it knows by implementing optional interfaces:
//
//   - Deterministic model (RuleExact): one evaluation, the exact residual.
//   - FiniteSum (RuleFiniteSum): T is the average of Terms() terms and
//     EvalExact computes it; one exact call, the exact residual. Every DEQ
//     cell's evaluator is one, so every DEQ forward gets an exact
//     certificate.
//   - NoiseBound (RuleBoundedNoise): an almost-sure bound b(x) on one unit
//     sample's deviation; the average of N fresh unit samples plus the
//     radius of the reference paper's Banach-space concentration
//     proposition, √(2κ ln(2/δ)σ²/N) + C ln(2/δ) b/(3N), σ² = min{b², the
//     declared variance}: ≤ Bound with probability at least 1 − δ.
//   - CoordinateNoiseBound (RuleBoundedNoise, in ℓ∞): almost-sure and
//     variance bounds b_i(x), v_i(x) on each coordinate of one unit
//     sample's deviation; the same average with the smaller of that radius
//     and the coordinatewise Bernstein radius max_i √(2v_i L/N) +
//     2b_i L/(3N), L = ln(2d/δ) (a union bound over the d coordinates),
//     both fixed before the draw: ≤ Bound with probability at least 1 − δ.
//   - VarianceBound (RuleVarianceMoM): a bound σ²(x) on one unit sample's
//     second moment; a median of means of k buckets of m samples whose
//     per-bucket failure probability p comes from Chebyshev's inequality
//     and the paper's minibatch-variance lemma, with k and p chosen from
//     the exact binomial tail (about 2 ln(1/δ)
//     buckets at p ≈ 0.1, against 18 ln(1/δ) from Hoeffding's bound):
//     ≤ Bound with probability at least 1 − δ.
//   - VarianceBound in a flat Hilbert norm, ℓ2 or Schatten-2
//     (RuleVarianceTruncated): a centre from a first median of means, then
//     the mean of k fresh calls each pulled back to within τ of the centre,
//     with radius √(2κVL/k) + CL(τ + m)/(3k) + V/(4τ), m = min{τ, r_c +
//     V/(4τ)} the calls' range beyond τ (the paper's Banach-space
//     concentration proposition for the truncated calls plus their bias;
//     V the calls' variance plus the centre's squared radius, L =
//     ln(2/δ₁), δ = δ₀ + δ₁ split between the centre and the truncated
//     sum, τ fixed from the centre before the calls are drawn): about
//     4 ln(2/δ) variances κσ²/a² for a radius a plus its centre's (42.5 in
//     all at δ = 1e-3, where the median of means pays 351 and one
//     Chebyshev bucket 1000), used whenever its planned size is the
//     smaller (not at δ = 0.1, at 0.05 and below; for Solve's certificate
//     and CertifyRadius only with CertifySettings.Calls unset); ≤ Bound
//     with probability at least 1 − δ.
//   - TermBound on a FiniteSum, with CertifySettings.Sampled
//     (RuleSampledBernstein in ℓ2 and Schatten-2, RuleSampledSerfling in
//     ℓ∞ with a TermEvaluator): an almost-sure bound on every term's
//     deviation from the average; a sample of the terms, an empirical
//     Bernstein bound that pays their measured spread (Maurer and Pontil
//     with the Banach-space proposition; the empirical Bernstein–Serfling
//     inequality of Bardenet and Maillard on every coordinate, without
//     replacement), in doubling stages, and the exact pass when that is
//     cheaper: ≤ Bound with probability at least 1 − δ (see SampledRule
//     and certify_sampled.go).
//   - nothing (RuleEstimate): an empirical-scale median of means, an
//     estimate with no guarantee; Delta is NaN so that it cannot be read as
//     a probability.
//
// κ and C are those of the norm's smooth witness (see Norm). The
// stochastic rules draw fresh samples, independent of the solve's
// (CertifySettings), except when the method offers its own certificate
// for the returned point (Env.OfferCertificate, Certificate.Own: VR-GHAL's
// rigorous epoch-start estimate, whose samples were drawn after the point
// was fixed). The proofs are sketched on the rules' functions in
// certify.go and measured by the coverage tests (fixed seeds, 400 runs per
// rule, noise law and norm).
//
// Status Success means the same thing: a residual proven to be at most
// Settings.Tol — exactly, by VR-GHAL's own bound when the oracle declares
// a variance or almost-sure bound, or by a rigorous Certificate. A
// stochastic method that stops on an estimate it cannot prove reports
// ToleranceEstimated.
package solver
