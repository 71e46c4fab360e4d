package solver

import "math"

// CoordinateNoiseBound is implemented by oracles that know, coordinate by
// coordinate, an almost-sure bound and a variance bound on the deviation of
// one unit sample from the operator. In the ℓ∞ norm the certificate rule
// RuleBoundedNoise, CertifyRadius and VR-GHAL's epoch-start estimates then
// use, for the mean of N independent unit samples, the smaller of the
// Banach-space concentration radius of a NoiseBound and
//
//	max_i √(2v_i L/N) + 2b_i L/(3N),  L = ln(2d/δ),
//
// Bernstein's inequality on every coordinate at failure probability δ/d
// with a union bound over the d coordinates. It pays max_i E η_i²·ln(2d/δ)
// where the Banach-space radius pays κ·E‖η‖²∞·ln(2/δ), κ of order ln d and
// E‖η‖²∞ ≥ max_i E η_i²; both radii are fixed by N before the samples are
// drawn, so their minimum holds with probability at least 1 − δ.
type CoordinateNoiseBound interface {
	// CoordinateNoise writes into b and v, of length Len(), bounds at x on
	// each coordinate of one unit sample's noise η = τ₁(x; ξ) − T(x):
	// |η_i| ≤ b[i] almost surely and E η_i² ≤ v[i]. It reports false
	// when it knows no bounds at x. It must not keep x, b or v. Example:
	// the Bellman operator with a generative model, whose entry (s, a)
	// deviates by γ(V(s') − E V(s')) for one drawn next state s'.
	CoordinateNoise(b, v, x []float64) bool
}

// noiseDecl is what an oracle declares about bounded noise at a point, in
// a norm: an almost-sure bound b and a variance bound v ≤ b² of one unit
// sample in the norm (b = +Inf if none), and, in ℓ∞, coordinatewise bounds
// cb, cv (nil if none).
type noiseDecl struct {
	kappa, c float64
	b, v     float64
	cb, cv   []float64
}

// declaredNoise returns the bounded-noise declarations of o at x in norm,
// and whether there is any.
func declaredNoise(o Oracle, x []float64, norm Norm) (noiseDecl, bool) {
	d := noiseDecl{kappa: norm.Kappa(), c: norm.C(), b: declaredBound(o, x, norm), v: declaredVariance(o, x, norm)}
	if cn, ok := o.(CoordinateNoiseBound); ok {
		if _, linf := norm.(LInf); linf {
			n := norm.Len()
			cb, cv := make([]float64, n), make([]float64, n)
			if cn.CoordinateNoise(cb, cv, x) && validCoord(cb, cv) {
				d.cb, d.cv = cb, cv
			}
		}
	}
	return d, !math.IsInf(d.b, 1) || d.cb != nil
}

// validCoord reports whether every coordinate bound is finite and
// non-negative.
func validCoord(b, v []float64) bool {
	for i, x := range b {
		if !(x >= 0) || math.IsInf(x, 1) || !(v[i] >= 0) || math.IsInf(v[i], 1) {
			return false
		}
	}
	return true
}

// zero reports whether the declared noise is zero, so that one unit sample
// is exact.
func (d noiseDecl) zero() bool {
	if d.b == 0 || d.v == 0 {
		return true
	}
	if d.cb == nil {
		return false
	}
	for i, b := range d.cb {
		if b != 0 && d.cv[i] != 0 {
			return false
		}
	}
	return true
}

// radius returns ρ(N), a radius within which the mean of N independent unit
// samples lies of T(x) with probability at least 1 − δ: the smaller of the
// Banach-space concentration radius √(2κ ln(2/δ)σ²/N) + C ln(2/δ)b/(3N)
// (the reference paper's concentration proposition) and, with
// coordinatewise bounds in ℓ∞, max_i √(2v_i L/N) + 2b_i L/(3N) with
// L = ln(2d/δ). The second is Bernstein's inequality for the mean of N
// independent centred variables with |η_i| ≤ b_i and E η_i² ≤ v_i,
// P(|η̄_i| ≥ t) ≤ 2 exp(−Nt²/(2v_i + 2b_i t/3)), solved for t at
// probability δ/d (t ≤ √(2v_i L/N) + 2b_i L/(3N)), and a union bound over
// the d coordinates. Either radius is fixed before the samples are drawn,
// so their minimum holds with probability at least 1 − δ.
func (d noiseDecl) radius(delta, n float64) float64 {
	return d.least(delta, func() float64 { return boundedNoiseRadius(d.kappa, d.c, delta, d.b, d.v, n) },
		func(qa, qb float64) float64 { return qb/math.Sqrt(n) + qa/n })
}

// size returns the smallest N (not rounded) with radius(δ, N) ≤ a.
func (d noiseDecl) size(delta, a float64) float64 {
	return d.least(delta, func() float64 { return boundedNoiseSize(d.kappa, d.c, delta, d.b, d.v, a) },
		func(qa, qb float64) float64 { return concentrationSize(qa, qb, a) })
}

// least returns the smaller of banach(), when a bound in the norm is
// declared, and of coordMax(δ, coord), when coordinatewise bounds are;
// +Inf when neither is.
func (d noiseDecl) least(delta float64, banach func() float64, coord func(qa, qb float64) float64) float64 {
	r := math.Inf(1)
	if !math.IsInf(d.b, 1) {
		r = banach()
	}
	if d.cb != nil {
		r = math.Min(r, d.coordMax(delta, coord))
	}
	return r
}

// coordMax returns the maximum over the coordinates i of f(qa_i, qb_i),
// with the coordinatewise Bernstein radius qb_i/√N + qa_i/N: qa_i =
// 2b_i L/3, qb_i = √(2v_i L), L = ln(2d/δ).
func (d noiseDecl) coordMax(delta float64, f func(qa, qb float64) float64) float64 {
	l := math.Log(2 * float64(len(d.cb)) / delta)
	m := 0.0
	for i, b := range d.cb {
		m = math.Max(m, f(2*b*l/3, math.Sqrt(2*d.cv[i]*l)))
	}
	return m
}
