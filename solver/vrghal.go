package solver

import (
	"cmp"
	"fmt"
	"math"
)

// VRGHAL is the variance-reduced gradual Halpern algorithm, Algorithm 1
// ("VR-GHAL") of the reference paper, for fixed points of a γ-Lipschitz
// operator T, γ ≤ 1, known only through a stochastic oracle, with residuals,
// variances and Lipschitz constants all measured in the problem's norm.
//
// # Algorithm
//
// VR-GHAL runs epochs k = 1, 2, …, K (K = Settings.MaxIter) from x̂₀ = x0.
// With ε_k = βε_{k−1}, λ̄_k = βλ̄_{k−1}, λ_k = λ̄_k/(1 + λ̄_k),
// δ₀ = (1 − β)δ/β and δ_k = βδ_{k−1}, epoch k runs
//
//	J_k = ⌈ln β / ln((1 − λ_k)γ̄)⌉
//
// anchored steps y_{j+1} = λ_k y₀ + (1 − λ_k)T̃_j from y₀ = x̂_{k−1} and sets
// x̂_k = y_{J_k}. The estimate T̃_0 of T(y₀) is a median-of-means estimate
// (MedianOfMeans) made when y₀ was reached, and later estimates follow the
// recursion of the paper's variance-reduced estimator,
//
//	T̃_j = T̃_{j−1} + (1/n_k) Σ_{ℓ=1}^{n_k} Cl(Δ^{(ℓ)}),  Δ^{(ℓ)} = τ(y_j; ξ₁) − τ(y_{j−1}; ξ₂),
//
// where each Δ^{(ℓ)} averages a minibatch of m_{k,j} unit samples, Cl clips
// it at γ̄‖y_j − y_{j−1}‖ (ClipDifference), and ξ₁ = ξ₂ (one Sample at both
// points) when the assumed model is LipschitzInExpectation or
// SamplewiseLipschitz, independent seeds under BoundedVariance. After the
// epoch, a median-of-means estimate T̃_{k,0} of T(x̂_k) with parameters
// (ε_{k+1}/2, δ_{k+1}/2) — ⌈18 ln(2/δ_{k+1})⌉ buckets of ⌈108/ε_{k+1}²⌉ unit
// samples (the paper's median-of-means proposition) — gives the estimated
// residual R̃_k = ‖T̃_{k,0} − x̂_k‖; the first one, at x̂₀, uses
// (βε₀/2, βδ₀/2).
//
// The sizes of epoch k depend on R̃_{k−1} and ρ_k = γ̄(1 − λ_k):
//
//	n_k = max{1, ⌈2(1 − λ_k)γ̄R̃_{k−1} ln(4/δ_k) / (3ε_k)⌉}     (the Master Theorem)
//	m_{k,j} = ⌈4J_k²/ε_k²⌉                 BoundedVariance       (the bounded-variance minibatch lemma)
//	m_{k,j} = ⌈4R̃_{k−1}²/(ε_k²(1 − ρ_k)²)⌉  LipschitzInExpectation (the Lipschitz-in-expectation minibatch lemma)
//	m_{k,j} = ⌈4R̃_{k−1}²/(ε_k²(1 − ρ_k))⌉   SamplewiseLipschitz   (the samplewise-Lipschitz corollary)
//
// SampleScale multiplies the unit-sample sizes m_{k,j} and the bucket sizes
// before rounding up; it leaves the counts (J_k, n_k, buckets) alone. The
// schedules use no smoothness constant: κ and σ enter only the guarantee.
// For a Deterministic model, every estimate is a single exact evaluation:
// one call at each epoch start and n_k = m_{k,j} = 1, with T(y_{j−1}) reused,
// so that an inner step costs one evaluation.
//
// # Guarantee
//
// By the Master Theorem, if T is γ-Lipschitz with γ ≤ γ̄ ≤ 1, the oracle is
// unbiased with E‖τ(x; ξ) − T(x)‖² ≤ σ² and satisfies the assumed model, then
// on one event of probability at least 1 − δ the residual ‖T(x̂_k) − x̂_k‖
// decreases nearly geometrically (as β^k·poly(k)) for every k at once
// (anytime). On that event R̃_k is within (ε_{k+1}/2)√κσ of the true
// residual (κ of the Norm); the Result's Certificate bounds it
// independently.
//
// # Stopping
//
// The run stops after K epochs (IterationLimit), when a residual bound
// reaches Settings.Tol, before an epoch whose requested samples would not
// fit in Settings.MaxSamples (SampleLimit; no sample of that epoch is
// drawn), on context cancellation or time limit, whichever comes first.
//
// Success means a bound. When the oracle declares a VarianceBound σ²(x)
// (or a NoiseBound b(x), so σ² ≤ b²), the median of means at x̂_k with
// K ≥ 18 ln(2/δ_{k+1}) buckets of n unit samples is within 3σ√(3κ/n) of
// T(x̂_k) with probability at least 1 − δ_{k+1}/2 (the paper's
// median-of-means proposition, with the minibatch-variance lemma in the
// norm's smooth witness), an event the run's 1 − δ guarantee includes; so
// B_k = R̃_k + 3σ√(3κ/n) bounds the residual, and the run stops with
// Success once B_k ≤ Tol. A deterministic oracle has B_k = R̃_k. Without a
// declaration, R̃_k ≤ Tol stops the run with ToleranceEstimated, which Solve
// turns into Success only if the Certificate is rigorous (for instance
// exact, for a FiniteSum oracle) and its Bound is at most Tol. The method is anytime: it records x̂₀ and then every
// completed epoch's x̂_k with R̃_k, and Result.X is the last recorded point,
// whatever interrupts the epoch after it. It suggests the last bucket size to
// the certificate.
//
// # Constants
//
// Everything above describes PaperConstants, the reference paper's
// Algorithm 1 with its constants, kept for reproducing the Master Theorem.
// The default, TunedConstants, keeps the algorithm (anchored inner steps,
// clipped recursive differences, the Master Theorem's n_k and the model's
// m_{k,j} formulas) and changes the following; each change keeps a
// guarantee that is proven, as argued here.
//
//   - Epoch-start estimator. The paper's proof of the Master Theorem needs
//     at x̂_k "any high-probability estimator" of T(x̂_k) with error at most
//     a_k = ε_{k+1}/2 (times a fixed constant) with probability 1 − δ'_k;
//     median of means with 18 ln(1/δ) buckets of 27/ε² samples is one. The
//     tuned estimator is the rigorous certificate rule of the oracle's
//     declaration, sized for radius a_k: for a NoiseBound the mean of the
//     smallest N whose Banach-space concentration radius, the sum of
//     √(2κ ln(2/δ)σ²/N) and C ln(2/δ)b/(3N), is at most a_k (the paper's
//     concentration proposition), or, in ℓ∞ with a CoordinateNoiseBound,
//     whose coordinatewise Bernstein radius is, when that is smaller
//     (Bernstein's inequality on each coordinate and a union bound over
//     them, see CoordinateNoiseBound: a Bellman operator's ℓ∞ noise then
//     costs max_i E η_i² ln(2d/δ) instead of κ·E‖η‖²∞ ln(2/δ)); for a
//     VarianceBound the median of means with the
//     exact-binomial bucket count of MoMChebyshevBuckets (about 2 ln(1/δ)
//     buckets at failure p ≈ 0.1 instead of 18 ln(1/δ) at 1/3, by the same
//     Chebyshev and minibatch-variance lemma argument), whose selection is
//     the Hsu–Sabato one or, in a Hilbert norm, the geometric median
//     (Minsker 2015) when its majority radius is smaller — any point z with
//     more than half the bucket means within r of it is within r + ε of
//     T(x̂_k) on the event (GeometricMedian) — or, in a flat Hilbert norm
//     (ℓ2, Schatten-2; not a Batched norm), RuleVarianceTruncated's
//     truncated mean about a median-of-means centre planned for radius
//     1.5·a_k when its closed-form size is smaller than that median of
//     means' (for sizes well above their rounding it is at every share
//     δ'_k ≤ 0.05: 12.5 against 47.3 variances κσ²/a_k² at δ'_k = 1e-2,
//     18.9 against 87.8 at 1e-3), its failure
//     probability δ'_k split between the centre (δ₀) and the truncated
//     sum (δ₁ = δ'_k − δ₀), and τ fixed from the centre before the
//     truncated calls are drawn (see RuleVarianceTruncated); for a
//     FiniteSum, a single
//     exact evaluation (Terms() samples) once the estimate would need as
//     many, and likewise every inner step whose 2·n_k·m_{k,j} reaches
//     Terms(). The estimate's radius ρ_k is known, so B_k = R̃_k + ρ_k is a
//     rigorous bound at every epoch. When the run stops on it, Solve
//     reports it as the Certificate (Certificate.Own; see
//     Env.OfferCertificate) instead of drawing a fresh one, with Delta =
//     0.9δ, the failure probability of the union of all the estimates'
//     events: the stopping epoch is chosen from the data, so the δ'_K of
//     the last estimate alone would not be honest. Without a declaration the buckets are
//     sized with a plug-in variance and the estimate has no guarantee
//     (Success then needs a rigorous Certificate, as before), except on a
//     finite sum, which runs the sampled mode below.
//   - ε₀ from a pilot. The first estimate, at x0, aims at radius √(κσ²)/2
//     (σ² declared); ε₀ is then the larger of its residual R̃₀ and 2ρ₀/β,
//     so the pilot meets the theorem's first requirement; the Master
//     Theorem holds for any ε₀ (it enters only the constants A_p). With a
//     tolerance in force, ε₀ is raised (by less than 1/β) so that a_{K*} =
//     0.4·Tol for an integer K*: the run then meets Tol with the epoch
//     whose estimate was sized for it, instead of overshooting by up to
//     1/β² in samples. ε₀ is in the problem's units (the paper's ε₀ = 1 is
//     relative to σ√κ); this only rescales the constants A_p.
//   - δ reallocation. The estimate at x̂_k gets δ'_k = 0.9δ·w_k and the
//     inner martingale events of epoch k get 0.1δ·w_k, with w₀ = 1/4 for
//     the pilot (sized before K* is known), w_k = 2^{−(K*−k+2)} for
//     1 ≤ k ≤ K* and 3/(2π²(k − K*)²) after, so Σ_k w_k ≤ 1 and
//     the union of all events still fails with probability at most δ (the
//     summability the proof uses, with more of δ on the large final
//     estimates). Every B_k holds on the estimates' events alone, so a
//     Success is a bound with probability at least 1 − δ whatever the inner
//     steps do.
//   - Contractive regime. With a known γ̄ < 1 every epoch uses λ_k = 0 (no
//     anchoring, a restart from x̂_{k−1}): J_k = ⌈ln β/ln γ̄⌉ steps of the
//     γ̄-contraction give the basic GHAL lemma's first inequality with
//     λ̄_k = 0, so the terms 2λ̄_k(‖x0 − x*‖ + Σε̃_i) of the Master Theorem's
//     recursion vanish and m_{k,j} ∝ R̃²/(ε_k²(1 − γ̄)^q) gives the
//     (1 − γ)^{-3}ε^{-2} rate of the paper's contractive corollaries.
//   - Early epoch end. An epoch ends at the first inner step j whose
//     running estimate already satisfies the lemma's conclusion,
//     ‖T̃_{k−1,j} − y_j‖ ≤ βR̃_{k−1} + λ̄_k‖y_j − y₀‖, which is all the
//     induction of the Master Theorem uses from the epoch (J_k is a cap).
//     This exploits contraction the run was not told of.
//   - Long final epochs. Under LipschitzInExpectation and
//     SamplewiseLipschitz, in the contractive regime an epoch at or past
//     the planned level K* (with a tolerance in force) ends only once its
//     running residual is at most min{βR̃_{k−1}, θ·Tol}, θ = (1 − η)/2 =
//     0.3, with a cap of 8J_k steps and the epoch's inner budget spread
//     over them. Its steps converge to the fixed point of T plus the start
//     estimate's error e, whose residual is about ‖e‖; stopping at βR̃_{k−1}
//     left about half the start's residual on top, so the closing bound
//     R̃_{K*} + ηTol missed Tol on most runs (by 1.0–1.3×) and the level
//     was repeated. θ splits the room 1 − η that the closing radius leaves
//     below Tol between the steps and the start's error. The longer
//     epoch still ends with the lemma's conclusion or at a cap; the
//     lemmas' minibatches under these models (m_{k,j} ∝ 1/(1 − ρ_k) or
//     1/(1 − ρ_k)², independent of J_k) bound the accumulated error of the
//     differences by a geometric series in ρ_k over any number of steps,
//     every step keeps at least that m_{k,j} (times SampleScale), and the
//     bound B_k rests on the closing estimate's event alone. Under
//     BoundedVariance, whose m_{k,j} grows like J_k², epochs keep J_k.
//     With γ̄ = 1 (restarts on) the same rule applies from four levels
//     before K* (level ≥ K* − 4). There the steps y_{j+1} = λ_k y₀ +
//     (1 − λ_k)T̃_j converge at the rate 1 − λ_k to the fixed point of the
//     anchored map of T + e, whose residual is about ‖e‖ + λ̄_k‖y − y₀‖,
//     and the early end at βR̃_{k−1} + λ̄_k‖y_j − y₀‖ stopped them after a
//     few steps with half the start's residual left: each further halving
//     then cost an epoch-start estimate at the next level, priced for its
//     rigorous radius although its error is several times smaller (on the
//     suite's shift the true residual reached 10⁻² after 1.51e4 samples
//     against PAGE-Halpern's 2930; with the rule, 2141). The early end
//     keeps the anchoring term, so the epoch still ends with the basic GHAL
//     lemma's conclusion or at the cap; ρ_k = 1 − λ_k < 1 gives the same
//     geometric series over any number of steps; and B_k rests on the
//     closing estimate alone: the argument above holds unchanged. The lead
//     of four levels was measured against 0 to 3 and every level
//     (the stochastic section of `deq bench`).
//   - Restarts. With γ̄ = 1, when the residual bound of an epoch start has
//     fallen to half the bound at the current anchor, the accuracy schedule
//     restarts there; with γ̄ < 1, a bound just missing Tol at the end
//     repeats the accuracy level once (see Restarts below).
//   - Balanced inner steps. Under LipschitzInExpectation and
//     SamplewiseLipschitz, m_{k,j} is the lemma's value times SampleScale,
//     enlarged so that the epoch's inner steps draw about half the samples
//     of its closing estimate: the variance–minibatch assumption is
//     monotone in m, so enlarging keeps it; a SampleScale below 1 changes
//     only its constants a_0, a_1, hence the A_p of the theorem. Under
//     BoundedVariance no enlargement is made.
//   - Balanced estimates. Under BoundedVariance the lemma's m_{k,j} ∝
//     J_k²/ε_k² makes the inner steps draw nearly all of an epoch's
//     samples (97% on the suite's affine-t), so the closing estimate is
//     enlarged instead: when an estimate at a_k would cost less than a
//     tenth of the samples the epoch's inner steps drew, it aims at the
//     smaller radius at which it costs about that tenth (its cost taken as
//     the last estimate's scaled by the square of the ratio of the two
//     radii). Its actual error decides where the next epoch's steps
//     converge (the fixed point of T plus that error), hence R̃_k, n_{k+1}
//     and the early end. The guarantee is untouched: the radius is still
//     at most a_k, all the Master Theorem asks of the estimate; it is
//     chosen from samples already drawn, before the estimate's fresh
//     ones; and δ'_k is the same. Measured with `deq bench --only
//     stochastic --seeds 20 --problems affine-t,shift` and `--problems
//     mdp,mdp-large,averaged,deq-experts` (BoundedVariance rows,
//     certified, against the same commands without the rule): affine-t at
//     ε = 10⁻³ on 20 of 20 seeds (6 of 20), shift at 10⁻² on 20 of 20 (14
//     of 20), mdp at 10⁻³ on 19 of 20 (0 of 20), mdp-large at 10⁻³ on 20
//     of 20 (0 of 20); the finite sums and the other models are unchanged
//     sample for sample.
//   - Sampled mode. On a FiniteSum that declares neither a VarianceBound
//     nor a NoiseBound (a DEQ cell's average over its M terms, say), no
//     sampled estimate has a guarantee, so no event of the theorem is at
//     stake and the sizes follow measurements instead of the lemmas. Every
//     epoch-start estimate is the mean of two independent halves of
//     N = v̂/a² unit samples, a the epoch's target max{a_k, ηTol} and v̂
//     the unit variance measured from the previous halves' spread (the
//     pilot draws 16); it is one exact evaluation instead once N would
//     reach M/2, or, when even a standard error of Tol/2 would cost M/2
//     (by a v̂ measured on at least min{128, M/32} samples), once N
//     exceeds what the first inner step from an exact start would cost. Inner steps draw two copies of m unit differences with
//     m = q̂‖y_j − y_{j−1}‖²/b, q̂ the measured difference variance per
//     squared step (about L²; γ̄² before the first measurement) and b what
//     is left of the epoch's noise budget max{ηTol, se}², se the standard
//     error of its start, so that each step adds half of what is left: the
//     differences add no more noise than the start carries, or than the
//     final accuracy after an exact start; a step is one exact evaluation
//     once 2m would reach M. The running estimate closes the epoch while
//     its accumulated error is within the target. When the sampled bound
//     R̃ + se meets Tol, one exact evaluation at x̂ decides — or, in the
//     contractive regime, at the next point T̃(x̂) when its predicted
//     residual ρ̂R̃ + se meets Tol (ρ̂ the contraction the last inner step
//     measured, ‖mean difference‖/‖y_j − y_{j−1}‖; the final estimates then
//     aim at 0.7·Tol instead of ηTol): its exact residual is recorded as a
//     rigorous bound (Success if it meets Tol), and otherwise the run goes
//     on from that exact epoch start, where differences are cheap. Where
//     sampling cannot reach Tol (a standard error of Tol/2 would cost half
//     an exact call), a start whose residual is 8 times its noise or more
//     is warmed up by fresh sampled estimates growing ×8 while the
//     residual stays above the noise (minibatch Picard; the recursion
//     would only carry the start's noise along), which measure
//     the contraction ρ̂ from the ratio of successive residuals, the
//     estimates' variances removed; the warm-up ends once ρ̂(ρ̂R̃ + se) meets
//     Tol, the check is made at the next point, and when its exact residual
//     r₁ misses Tol but ρ̂r₁ meets it, one more exact evaluation at the exact
//     T(x̂) decides: two exact calls where the contraction is strong. So
//     Success is always an exact residual; the certificate reuses it when
//     the returned point is the one last evaluated exactly.
//
// A start point close to a fixed point (a warm start from a previous
// solve) gives a small pilot residual and so a small ε₀: the run does not
// pay the cold epochs of the default ε₀ = 1.
//
// # Restarts
//
// With TunedConstants, when the residual bound B_{k−1} = R̃_{k−1} + ρ_{k−1}
// of an epoch start (R̃_{k−1} where nothing is declared) has fallen to half
// the bound at the current anchor (at first x0, with the pilot's bound),
// the run restarts there: x̂_{k−1} becomes the anchor, and epoch k is the
// first epoch of a new run of Algorithm 1 from x̂_{k−1} whose anchoring
// λ̄ does not grow back (see Anchoring below) and whose ε₀ is the smallest
// value of the lattice ε₀β^ℓ, ℓ = 0, 1, …, at least B_{k−1}/β² (ℓ = 0 if
// none is), but at
// least ε_{k−1}, so that no epoch is finer than it would have been without
// the restart. The accuracy schedule then follows the measured bound
// instead of running ahead of the residual: the new run's first estimate
// aims at a radius between B_{k−1}/2 and B_{k−1} (β = 1/2), and the lattice
// keeps a_{K*} aligned with η·Tol. Restarts apply with γ̄ = 1 only, not in
// sampled mode. They apply to a Deterministic oracle too: its estimates
// are exact at every accuracy, but a restart re-levels the schedule and
// holds λ̄ (see Anchoring), which changes the epochs' lengths and early
// ends.
// PaperConstants never restart. In
// the contractive regime (λ_k = 0, so only the accuracy schedule would
// restart) this rule was measured to cost more samples to a run's own
// bound (1.9–2.3× on an ℓ2 affine contraction at Tol = 0.03 and 0.01 of the
// initial residual, 2× on the package example), although the bench's
// certified counts, which also credit a fresh certificate at any point
// whose true residual meets ε, improved. There a restart is made only near
// the end: when the estimate at x̂_{k−1} was at or past the planned level
// K* and its bound missed Tol by a factor of at most 3/2, epoch k repeats
// its accuracy level (a new run of Algorithm 1 from x̂_{k−1} whose first
// estimate aims at the same radius) instead of halving it, once per level.
// Its start estimate is fresh at that radius and its steps contract the
// rest of the residual, so its bound often meets Tol at about a quarter of
// the cost of the finer level (the bimodal counts on mdp in the
// stochastic section of `deq bench`). The validity argument below covers both rules.
//
// Validity. The Master Theorem holds for any start point and any ε₀,
// λ̄₀ > 0 (they enter only its constants A_p), so each restarted run has
// the theorem's guarantee on its own events from the moment it starts. The
// δ shares keep one global epoch counter: epoch k gets the weight w_k of
// the Constants section whatever restarts came before, so the estimates
// and inner steps of the whole solve, restarts included, fail with
// probability at most Σ_k w_k·δ ≤ δ. Every bound B_k = R̃_k + ρ_k holds on
// the event of the estimate at x̂_k alone, whose samples are drawn after
// x̂_k is fixed: how x̂_k was reached (which anchors and accuracies, chosen
// from earlier data) does not enter it, just as the stopping epoch chosen
// from the data does not. So a Success and the own certificate (Delta =
// 0.9δ, the union of all the estimates' events) remain rigorous.
//
// Anchoring. Epoch 1 anchors with the paper's λ̄₁ = λ̄₀β, and epoch
// k ≥ 2 with λ̄_k = min{λ̄₀β^ℓ, λ̄_{k−1}·f}, ℓ the accuracy level of epoch
// k: f = β when the anchoring term λ̄_{k−1}‖x̂_{k−1} − x̂_{k−2}‖ of the basic
// GHAL lemma's first inequality exceeded, in the last epoch, the accuracy
// a_{k−1} its estimate aimed at, and f = 1 otherwise. Without restarts
// ℓ = k and λ̄₀β^k ≤ λ̄_{k−1}β, so this is the paper's λ̄_k = λ̄₀β^k. After a
// restart λ̄ never grows back: it holds while the anchoring term is within
// the estimates' accuracy (shrinking it further would only lengthen the
// epochs) and shrinks by β when that term is what limits the epoch's
// progress, and λ̄_k/ε_k ≤ λ̄₀/ε₀ at every epoch. The rule is fixed before
// the epoch draws anything (it uses the last epoch's points), and each
// epoch is the paper's GHAL epoch with its own λ_k = λ̄_k/(1 + λ̄_k) and
// J_k; the bound B_k, which alone decides Success, does not involve λ̄.
// Where the Master Theorem's recursion uses λ̄ (the anchoring term
// 2λ̄_k(‖x̂_anchor − x*‖ + Σ_i ε̃_i), with ε̃_i ∝ ε_i/λ̄_i the inner steps'
// accumulated error, and λ̄_k·ε̃_k ∝ ε_k), the terms over the levels a
// restart repeats are at most a constant times ε_k, so the recursion keeps
// its form with other constants. The previous rule, λ̄ shrinking by β at
// every epoch restarts included, let λ̄ run ahead of the accuracy, and the
// inner steps of epoch k, which grow like 1/λ̄_k² (J_k ≈ ln 2/λ_k steps of
// minibatches ∝ 1/λ_k under the samplewise model), then dominated: on the
// suite's shift at ε = 1e-3 one seed's first epoch at level 7 (global
// epoch 13, λ̄ = 2^-13) drew 8.5 million samples in its inner steps
// against 0.44 million in its closing estimate. Two other rules were
// measured (the stochastic section of `deq bench`): λ̄ = λ̄₀β^ℓ at the level of each epoch (the paper's ratio exactly;
// λ̄ grows back at a restart and the repeated epochs progress less), and
// λ̄ = λ̄₀β^M with M the finest level so far (λ̄ held until a new finest
// level, whatever the anchoring term: fewer samples on the suite's shift
// at ε = 3.2e-3, more epochs to Tol on a small shift at SampleScale 1).
//
// Rate. Under sharpness, ‖x − x*‖ ≤ S‖T(x) − x‖ (metric subregularity;
// S = ‖(I − R)^{-1}‖ for T(x) = Rx + b with I − R invertible), the
// anchoring term of the basic GHAL lemma at epoch k, λ̄_k‖x̂_k − x̂_{k−1}‖ ≤
// λ̄_k(2‖x̂_{k−1} − x*‖ + ε̃_k), is at most λ̄_k(2S·B_{k−1} + ε̃_k): GHAL
// re-anchors at every epoch, so once λ̄_k ≤ 1/(8S) every epoch cuts the
// residual by a constant factor down to the estimates' errors — linear
// convergence, as for Halpern iterations restarted once a residual has
// fallen by a constant factor (H. Lu and J. Yang's restarted Halpern PDHG
// for linear programming; V. Roulet and A. d'Aspremont, "Sharpness,
// Restart and Acceleration", for the principle). The paper's schedule
// meanwhile halves ε_k every epoch whatever the residual does, so where
// the residual lags it (on the suite's shift R̃_k ≈ 4.5a_k) the estimates
// are finer than the residual needs, at a cost of 1/a² each. A restart
// re-levels ε from the measured bound, so the new run's estimates aim at a
// constant fraction of the residual again. That fraction is large (radius
// B/2 to B for the first epoch): the next bound halves when the estimates'
// typical errors, not their worst case, are small against the residual,
// as measured on the suite. Without sharpness there is no proof of a
// constant-factor loss: a restart needs the bound to halve, so there are
// at most log₂(B₀/Tol) of them, λ̄ never grows, and each restart
// repeats at most about three accuracy levels (from ρ_{k−1} ≤ B_{k−1} up to
// B_{k−1}/β²), but the repeated epochs lengthen the run, and the inner
// steps of epoch k grow like 1/λ̄_k². Resetting λ̄ to λ̄₀ as well, the
// literal restart of Halpern's iteration, was measured worse: it only
// shortens the epochs and weakens their progress (BENCHMARKS.md, issue
// 13).
//
// # Limitations
//
// The paper's constants are conservative and its sample sizes grow
// geometrically: the bucket size by 1/β² per epoch, m_{k,j} under
// BoundedVariance by up to 1/β⁴ (J_k ∝ 1/λ_k for γ̄ = 1), so each epoch costs
// several times the previous one; bound runs with Tol, MaxIter or
// MaxSamples, and use SampleScale < 1 to trade the guarantee's constants for
// speed. The budget checks count requested sizes; an oracle over a finite sum
// may consume fewer (it may cap a request at its size). An epoch whose sizes
// exceed 2⁶² stops the run with SampleLimit. The median-of-means keeps all
// bucket means, ⌈18 ln(2/δ_{k+1})⌉ vectors of Norm.Len() values, and computes
// their pairwise distances. The estimate T̃_{J_k} that Algorithm 1 computes in
// the last inner step enters only the analysis, so it is not computed.
// If γ̄ is below the true Lipschitz constant, clipping biases the estimates
// and the guarantee is lost.
type VRGHAL struct {
	// Beta is the factor β ∈ (0, 1) by which ε_k, λ̄_k and δ_k shrink each
	// epoch. Zero means DefaultVRGHALBeta.
	Beta float64
	// Delta is the failure probability δ ∈ (0, 1) of the whole run. Zero
	// means DefaultVRGHALDelta.
	Delta float64
	// Gamma is the Lipschitz bound γ̄ ∈ (0, 1] of T used for the inner
	// steps and the clipping. It must be at least T's Lipschitz constant in
	// the problem's norm. Zero means DefaultVRGHALGamma (nonexpansive T).
	Gamma float64
	// Eps0 is the initial accuracy scale ε₀ > 0. Zero means
	// DefaultVRGHALEps0.
	Eps0 float64
	// Lambda0 is the initial anchoring scale λ̄₀ > 0. Zero means
	// DefaultVRGHALLambda0.
	Lambda0 float64
	// Model is the oracle model to assume. Zero (UnspecifiedModel) means
	// Problem.Oracle's own Model(); assuming a stronger model than the
	// oracle declares is an error, a weaker one is allowed.
	Model Model
	// SampleScale multiplies every unit-sample size (bucket sizes and
	// minibatches m_{k,j}) under PaperConstants, and only the inner
	// minibatches m_{k,j} under TunedConstants. Zero means
	// DefaultVRGHALSampleScale, the paper's constants.
	SampleScale float64
	// Constants selects the constants of the schedules: TunedConstants
	// (the zero value, efficient) or PaperConstants (the reference paper's
	// exactly, for reproducing the Master Theorem). See the Constants
	// section.
	Constants VRConstants
}

// VRConstants selects the constants of VR-GHAL's schedules.
type VRConstants int

const (
	// TunedConstants is the default: the estimators, δ allocation, ε₀ and
	// regime of the Constants section of VRGHAL.
	TunedConstants VRConstants = iota
	// PaperConstants are the reference paper's constants of Algorithm 1,
	// exactly as the Master Theorem states them.
	PaperConstants
)

// String returns "tuned" or "paper".
func (c VRConstants) String() string {
	switch c {
	case TunedConstants:
		return "tuned"
	case PaperConstants:
		return "paper"
	}
	return fmt.Sprintf("VRConstants(%d)", int(c))
}

var (
	_ Method    = VRGHAL{}
	_ Validator = VRGHAL{}
)

// Defaults of VRGHAL, used where its fields are zero.
const (
	DefaultVRGHALBeta        = 0.5
	DefaultVRGHALDelta       = 0.05
	DefaultVRGHALGamma       = 1
	DefaultVRGHALEps0        = 1
	DefaultVRGHALLambda0     = 1
	DefaultVRGHALSampleScale = 1
)

// maxDraw is the largest unit-sample size or count VR-GHAL requests.
const maxDraw = 1 << 62

// String implements Method.
func (VRGHAL) String() string { return "vrghal" }

// Validate implements Validator. It checks the settings and that Model is
// not stronger than the oracle's.
func (v VRGHAL) Validate(p Problem) error {
	if err := p.check(); err != nil {
		return err
	}
	_, err := v.config(p.Oracle.Model())
	return err
}

// vrConfig holds the settings of a VRGHAL with defaults filled in and the
// model resolved against the oracle's.
type vrConfig struct {
	beta, delta, gamma, eps0, lambda0, scale float64
	model                                    Model
	constants                                VRConstants
}

// config validates v and resolves it against an oracle of model om.
func (v VRGHAL) config(om Model) (vrConfig, error) {
	c := vrConfig{
		beta: cmp.Or(v.Beta, DefaultVRGHALBeta), delta: cmp.Or(v.Delta, DefaultVRGHALDelta),
		gamma: cmp.Or(v.Gamma, DefaultVRGHALGamma), eps0: cmp.Or(v.Eps0, DefaultVRGHALEps0),
		lambda0: cmp.Or(v.Lambda0, DefaultVRGHALLambda0), scale: cmp.Or(v.SampleScale, DefaultVRGHALSampleScale),
		model: om, constants: v.Constants,
	}
	if v.Constants != TunedConstants && v.Constants != PaperConstants {
		return c, fmt.Errorf("solver: VRGHAL.Constants = %v is not TunedConstants or PaperConstants", v.Constants)
	}
	if err := checkRange("VRGHAL.Beta", c.beta, 0, 1, true); err != nil {
		return c, err
	}
	if err := checkRange("VRGHAL.Delta", c.delta, 0, 1, true); err != nil {
		return c, err
	}
	if err := checkRange("VRGHAL.Gamma", c.gamma, 0, 1, false); err != nil {
		return c, err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Eps0", c.eps0}, {"Lambda0", c.lambda0}, {"SampleScale", c.scale}} {
		if !(f.v > 0) || math.IsInf(f.v, 1) {
			return c, fmt.Errorf("solver: VRGHAL.%s = %v must be positive and finite", f.name, f.v)
		}
	}
	if m := v.Model; m != UnspecifiedModel {
		switch {
		case !m.isOracleModel():
			return c, fmt.Errorf("solver: VRGHAL.Model = %v is not an oracle model", m)
		case m > om:
			return c, fmt.Errorf("solver: VRGHAL.Model = %v assumes more than Problem.Oracle declares (%v)", m, om)
		}
		c.model = m
	}
	return c, nil
}

// vrMoM sizes one median-of-means estimate with accuracy parameter eps and
// failure probability delta: buckets oracle calls of size unit samples each.
type vrMoM struct {
	eps, delta    float64
	buckets, size int
}

// vrEpoch is the schedule of epoch k ≥ 1 of VR-GHAL.
type vrEpoch struct {
	k                             int
	eps, lambdaBar, lambda, delta float64 // ε_k, λ̄_k, λ_k, δ_k
	rho                           float64 // ρ_k = γ̄(1 − λ_k)
	steps                         int     // J_k
	copies                        int     // n_k
	batch                         int     // m_{k,j}, the same for every j
	evals                         int     // oracle calls per copy: 2, or 1 for a deterministic model
	mom                           vrMoM   // the estimate at x̂_k
}

// drawCount returns max{1, ⌈x⌉} for a count of samples, calls or steps, and
// an error naming what if x exceeds maxDraw (or is NaN). The ceiling forgives
// a relative rounding error of 1e-12, so that a formula whose exact value is
// an integer (⌈576⌉, computed as 576.0000000000002) rounds to it.
func drawCount(x float64, what string, k int) (int, error) {
	if !(x <= maxDraw) {
		return 0, fmt.Errorf("epoch %d needs %s = %.3g, more than VR-GHAL can request (2^62)", k, what, x)
	}
	return max(1, int(math.Ceil(x*(1-1e-12)))), nil
}

// momPlan sizes the median-of-means estimate at x̂_k (k ≥ 0): accuracy
// ε_{k+1}/2 and failure probability δ_{k+1}/2, that is ⌈18 ln(2/δ_{k+1})⌉
// buckets of ⌈SampleScale·27/(ε_{k+1}/2)²⌉ samples, or one exact call for a
// deterministic model.
func (c *vrConfig) momPlan(k int) (vrMoM, error) {
	b := math.Pow(c.beta, float64(k+1))
	m := vrMoM{eps: c.eps0 * b / 2, delta: c.delta0() * b / 2, buckets: 1, size: 1}
	if c.model == Deterministic {
		return m, nil
	}
	if !(m.delta > 0) {
		return m, fmt.Errorf("epoch %d: failure probability δ_k underflows", k)
	}
	var err error
	m.buckets = MoMBuckets(m.delta)
	m.size, err = drawCount(c.scale*27/(m.eps*m.eps), "a bucket size", k)
	return m, err
}

// delta0 returns δ₀ = (1 − β)δ/β.
func (c *vrConfig) delta0() float64 { return (1 - c.beta) * c.delta / c.beta }

// epochPlan returns the schedule of epoch k ≥ 1 given R̃_{k−1}.
func (c *vrConfig) epochPlan(k int, rPrev float64) (vrEpoch, error) {
	bk := math.Pow(c.beta, float64(k))
	p := vrEpoch{k: k, eps: c.eps0 * bk, lambdaBar: c.lambda0 * bk, delta: c.delta0() * bk}
	p.lambda = p.lambdaBar / (1 + p.lambdaBar)
	p.rho = c.gamma * (1 - p.lambda)
	// ln((1 − λ)γ̄) via log1p for small λ; it is 0 once λ_k underflows.
	rate := math.Log1p(-p.lambda) + math.Log(c.gamma)
	if rate == 0 {
		return p, fmt.Errorf("epoch %d needs infinitely many inner steps (λ_k underflows)", k)
	}
	var err error
	if p.steps, err = drawCount(math.Log(c.beta)/rate, "J_k inner steps", k); err != nil {
		return p, err
	}
	if p.mom, err = c.momPlan(k); err != nil {
		return p, err
	}
	if c.model == Deterministic {
		p.copies, p.batch, p.evals = 1, 1, 1
		return p, nil
	}
	p.evals = 2
	if p.copies, err = drawCount(2*(1-p.lambda)*c.gamma*rPrev*math.Log(4/p.delta)/(3*p.eps), "n_k copies", k); err != nil {
		return p, err
	}
	var m float64
	switch c.model {
	case BoundedVariance:
		j := float64(p.steps)
		m = 4 * j * j / (p.eps * p.eps)
	case LipschitzInExpectation:
		m = 4 * rPrev * rPrev / (p.eps * p.eps * (1 - p.rho) * (1 - p.rho))
	default: // SamplewiseLipschitz
		m = 4 * rPrev * rPrev / (p.eps * p.eps * (1 - p.rho))
	}
	p.batch, err = drawCount(c.scale*m, "a minibatch m_{k,j}", k)
	return p, err
}

// samples returns the unit samples epoch p requests: J_k − 1 inner steps of
// n_k copies of evals minibatches, and the closing median-of-means.
func (p *vrEpoch) samples() float64 {
	return float64(p.steps-1)*float64(p.copies)*float64(p.evals)*float64(p.batch) + p.mom.samples()
}

// samples returns the unit samples the estimate requests.
func (m vrMoM) samples() float64 { return float64(m.buckets) * float64(m.size) }

// Run implements Method.
func (v VRGHAL) Run(e *Env) error {
	c, err := v.config(e.Oracle().Model())
	if err != nil {
		return err
	}
	if c.constants == TunedConstants {
		return newTunedRun(e, c).run()
	}
	return newVRRun(e, c).run()
}

// vrRun is the state of one VR-GHAL run. All buffers are allocated once,
// except the bucket means, which grow with the epochs' bucket counts.
type vrRun struct {
	e     *Env
	c     vrConfig
	norm  Norm
	det   bool // deterministic model: exact evaluations, T(y_{j−1}) reused
	multi bool // multi-query model: one Sample at both points of a difference

	xhat, t0    []float64 // x̂ of the last completed epoch and T̃_{k,0}
	y0, tt      []float64 // anchor y₀ and running estimate T̃_j
	yPrev, yCur []float64 // y_{j−1}, y_j
	tau1, tau2  []float64 // oracle outputs; tau2 holds T(y_{j−1}) when det
	acc         []float64 // sum of clipped differences
	means       [][]float64
	momWork     []float64
	residual    float64 // R̃ of xhat
}

func newVRRun(e *Env, c vrConfig) *vrRun {
	n := e.Len()
	buf := make([]float64, 9*n)
	next := func() []float64 {
		s := buf[:n:n]
		buf = buf[n:]
		return s
	}
	return &vrRun{
		e: e, c: c, norm: e.Norm(),
		det:   c.model == Deterministic,
		multi: c.model == LipschitzInExpectation || c.model == SamplewiseLipschitz,
		xhat:  next(), t0: next(), y0: next(), tt: next(), yPrev: next(), yCur: next(),
		tau1: next(), tau2: next(), acc: next(),
	}
}

// fits reports whether need more requested samples fit in the budget.
func (r *vrRun) fits(need float64) bool {
	return need <= maxDraw && r.e.CanDraw(int64(need))
}

func (r *vrRun) run() error {
	e := r.e
	e.KeepLast()
	copy(r.xhat, e.X0())
	m0, err := r.c.momPlan(0)
	if err != nil {
		return e.Stop(SampleLimit, err)
	}
	if !r.fits(m0.samples()) {
		return e.Stop(SampleLimit, nil)
	}
	if err := r.mome(r.t0, r.xhat, m0); err != nil {
		return err
	}
	if err := r.record(m0); err != nil {
		return err
	}
	for k := 1; ; k++ {
		p, err := r.c.epochPlan(k, r.residual)
		if err != nil {
			return e.Stop(SampleLimit, err)
		}
		if !r.fits(p.samples()) {
			return e.Stop(SampleLimit, nil)
		}
		if err := r.epoch(&p); err != nil {
			return err
		}
		if err := r.record(p.mom); err != nil {
			return err
		}
	}
}

// record computes R̃ = ‖T̃_{k,0} − x̂_k‖ and records the completed epoch
// with its rigorous bound (see the Stopping section of VRGHAL).
func (r *vrRun) record(m vrMoM) error {
	r.residual = r.e.Dist(r.t0, r.xhat)
	r.e.SuggestCertSamples(m.size)
	return r.e.RecordBound(r.xhat, r.residual, r.bound(m))
}

// bound returns a bound on ‖T(x̂_k) − x̂_k‖ that holds on the run's event:
// R̃ itself for a deterministic oracle, R̃ + 3σ√(3κ/n) when the oracle
// declares a variance bound σ² (or an almost-sure bound b, σ² ≤ b²) at x̂_k,
// n being the bucket size of the median of means m, and +Inf otherwise.
func (r *vrRun) bound(m vrMoM) float64 {
	o := r.e.Oracle()
	if o.Model() == Deterministic {
		return r.residual
	}
	v := declaredVariance(o, r.xhat, r.norm)
	if math.IsInf(v, 1) {
		return v
	}
	return r.residual + 3*math.Sqrt(3*r.norm.Kappa()*v/float64(m.size))
}

// epoch runs epoch p.k from x̂_{k−1} = r.xhat with T̃_{k−1,0} = r.t0 and
// leaves x̂_k in r.xhat and T̃_{k,0} in r.t0. It allocates nothing once the
// bucket storage is large enough.
func (r *vrRun) epoch(p *vrEpoch) error {
	copy(r.y0, r.xhat)
	copy(r.tt, r.t0)
	copy(r.yPrev, r.y0)
	if r.det {
		copy(r.tau2, r.t0) // T(y₀), exact
	}
	lam := p.lambda
	for j := 1; ; j++ {
		for i, a := range r.y0 {
			r.yCur[i] = lam*a + (1-lam)*r.tt[i]
		}
		if j == p.steps {
			break
		}
		if err := r.step(p, r.c.gamma*r.e.Dist(r.yCur, r.yPrev)); err != nil {
			return err
		}
		r.yPrev, r.yCur = r.yCur, r.yPrev
	}
	if err := r.mome(r.t0, r.yCur, p.mom); err != nil {
		return err
	}
	r.xhat, r.yCur = r.yCur, r.xhat
	return nil
}

// step updates T̃_j = T̃_{j−1} + (1/n_k)Σ_ℓ Cl(Δ^{(ℓ)}) for y_j = r.yCur and
// y_{j−1} = r.yPrev, clipping at radius = γ̄‖y_j − y_{j−1}‖.
func (r *vrRun) step(p *vrEpoch, radius float64) error {
	e := r.e
	if r.det {
		if err := e.Eval(r.tau1, r.yCur, Sample{Size: 1}); err != nil {
			return err
		}
		subInto(r.acc, r.tau1, r.tau2)
		ClipDifference(r.acc, r.acc, radius, r.norm)
		for i, v := range r.acc {
			r.tt[i] += v
		}
		r.tau1, r.tau2 = r.tau2, r.tau1 // tau2 = T(y_j) for the next step
		return nil
	}
	clear(r.acc)
	for range p.copies {
		s1 := Sample{Seed: e.Seed(), Size: p.batch}
		s2 := s1
		if !r.multi {
			s2.Seed = e.Seed()
		}
		if err := e.Eval(r.tau1, r.yCur, s1); err != nil {
			return err
		}
		if err := e.Eval(r.tau2, r.yPrev, s2); err != nil {
			return err
		}
		subInto(r.tau1, r.tau1, r.tau2)
		ClipDifference(r.tau1, r.tau1, radius, r.norm)
		for i, v := range r.tau1 {
			r.acc[i] += v
		}
	}
	inv := 1 / float64(p.copies)
	for i, v := range r.acc {
		r.tt[i] += inv * v
	}
	return nil
}

// mome writes into dst the median-of-means estimate of T(x) sized by m:
// m.buckets independent oracle calls of m.size unit samples, combined by
// MedianOfMeans.
func (r *vrRun) mome(dst, x []float64, m vrMoM) error {
	r.growBuckets(m.buckets)
	means := r.means[:m.buckets]
	for _, b := range means {
		if err := r.e.Eval(b, x, Sample{Seed: r.e.Seed(), Size: m.size}); err != nil {
			return err
		}
	}
	MedianOfMeans(dst, means, r.norm, r.momWork)
	return nil
}

// growBuckets makes room for k bucket means, allocating only the missing
// ones (the count grows by about 18 ln(1/β) per epoch).
func (r *vrRun) growBuckets(k int) {
	if k <= len(r.means) {
		return
	}
	n := r.e.Len()
	for len(r.means) < k {
		r.means = append(r.means, make([]float64, n))
	}
	r.momWork = make([]float64, MedianOfMeansWork(k, n))
}
