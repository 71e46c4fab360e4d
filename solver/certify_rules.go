package solver

import "math"

// The certificate of a solve (see Certificate) can only promise what the
// oracle knows. By the Bahadur–Savage argument no finite-sample bound on a
// mean holds for every finite-variance distribution: without a known
// quantity (an exact average, an almost-sure bound, a variance bound) a
// residual computed from samples is an estimate and nothing more. An Oracle
// states what it knows by implementing the optional interfaces below; the
// certificate picks its rule from them (see CertRule).

// FiniteSum is implemented by oracles whose operator is the average of
// Terms() = M terms, T(x) = (1/M) Σ_i τ(x; i), and that evaluate that
// average exactly with EvalExact. The certificate of such an oracle is the
// exact residual from one EvalExact call, counted as M unit samples
// (RuleFiniteSum). Every evaluator of a DEQ cell in package layers
// satisfies it.
//
// Implementing Exact alone is not a declaration: an oracle that can compute
// T exactly for tests, but whose EvalExact is not the cheap "one full pass
// over the data" of a finite sum, keeps its stochastic certificate.
type FiniteSum interface {
	// Terms returns M ≥ 1, the number of terms averaged.
	Terms() int
	// EvalExact writes T(x), the exact average, into dst.
	EvalExact(dst, x []float64) error
}

// NoiseBound is implemented by oracles that know an almost-sure bound on
// the deviation of one unit sample from the operator.
type NoiseBound interface {
	// NoiseBound returns b(x) with ‖τ₁(x; ξ) − T(x)‖ ≤ b(x) almost surely,
	// measured in norm, for one unit sample τ₁ (an Eval of Size 1). It
	// returns +Inf or NaN when it knows no bound at x. It must not keep x.
	// Example: a Bellman operator with a generative model, whose unit
	// sample replaces the expected next value by one drawn next value, has
	// b(Q) = γ·span(max_a Q) in ℓ∞.
	NoiseBound(x []float64, norm Norm) float64
}

// VarianceBound is implemented by oracles that know a bound on the
// second moment of one unit sample's deviation from the operator.
type VarianceBound interface {
	// NoiseVariance returns σ²(x) ≥ E‖τ₁(x; ξ) − T(x)‖², measured in norm,
	// for one unit sample τ₁. It returns +Inf or NaN when it knows no bound
	// at x. It must not keep x. A bound in ℓ2 is also one in every ℓp
	// (p ≥ 2) and Schatten-p norm, which are at most ℓ2 (Frobenius).
	NoiseVariance(x []float64, norm Norm) float64
}

// CertRule says how a Certificate bounds the residual, and so what it
// guarantees. Its zero value, RuleEstimate, guarantees nothing.
type CertRule int

const (
	// RuleEstimate: the oracle declares nothing that a finite-sample bound
	// could rest on. Bound is an estimate of an upper bound, not a bound;
	// Delta is NaN. See Certificate.
	RuleEstimate CertRule = iota
	// RuleExact: a deterministic oracle; Bound is the exact residual and
	// Delta is 0.
	RuleExact
	// RuleFiniteSum: a FiniteSum oracle; Bound is the exact residual from
	// one EvalExact call and Delta is 0.
	RuleFiniteSum
	// RuleBoundedNoise: a NoiseBound oracle; Bound holds with probability
	// at least 1 − Delta by the paper's Banach-space concentration
	// proposition.
	RuleBoundedNoise
	// RuleVarianceMoM: a VarianceBound oracle; Bound holds with probability
	// at least 1 − Delta by a median of means with Chebyshev buckets.
	RuleVarianceMoM
	// RuleVarianceTruncated: a VarianceBound oracle in a Hilbert norm;
	// Bound holds with probability at least 1 − Delta by a truncated mean
	// about a median-of-means centre and the paper's Banach-space
	// concentration proposition.
	RuleVarianceTruncated
	// RuleSampledBernstein: a TermBound oracle in ℓ2 or Schatten-2; Bound
	// holds with probability at least 1 − Delta by an empirical Bernstein
	// bound on a sample of terms drawn with replacement (see
	// SampledRule and CertifySettings.Sampled).
	RuleSampledBernstein
	// RuleSampledSerfling: a TermBound and TermEvaluator oracle in ℓ∞;
	// Bound holds with probability at least 1 − Delta by the empirical
	// Bernstein–Serfling inequality on every coordinate of a sample of
	// terms drawn without replacement (see SampledRule).
	RuleSampledSerfling
)

// Rigorous reports whether the rule proves its Bound: every rule but
// RuleEstimate.
func (r CertRule) Rigorous() bool { return r > RuleEstimate && r <= RuleSampledSerfling }

// Exact reports whether the rule's Bound is the exact residual (RuleExact
// and RuleFiniteSum).
func (r CertRule) Exact() bool { return r == RuleExact || r == RuleFiniteSum }

// declaredBound returns the oracle's almost-sure unit-noise bound at x in
// norm, or +Inf if it declares none (or a value that is not a finite
// non-negative number).
func declaredBound(o Oracle, x []float64, norm Norm) float64 {
	if nb, ok := o.(NoiseBound); ok {
		if b := nb.NoiseBound(x, norm); b >= 0 && !math.IsInf(b, 1) {
			return b
		}
	}
	return math.Inf(1)
}

// declaredVariance returns the oracle's unit-noise variance bound at x in
// norm, or +Inf if it declares none; with an almost-sure bound b it is at
// most b².
func declaredVariance(o Oracle, x []float64, norm Norm) float64 {
	v := math.Inf(1)
	if vb, ok := o.(VarianceBound); ok {
		if s := vb.NoiseVariance(x, norm); s >= 0 {
			v = s
		}
	}
	if b := declaredBound(o, x, norm); b*b < v {
		v = b * b
	}
	return v
}
