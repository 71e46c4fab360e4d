package problems

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/solver"
)

// mdpBranch is the number of possible next states of each state–action pair
// (fewer when there are fewer states).
const mdpBranch = 4

// mdpOracle is the Bellman optimality operator on Q-functions of a discounted
// MDP with S states and A actions, Q stored with entry s·A + a:
//
//	T(Q)(s, a) = r(s, a) + γ Σ_{s'} P(s'|s, a) max_{a'} Q(s', a').
//
// A unit sample draws one next state s' ~ P(·|s, a) for every pair (s, a),
// independently, and returns r(s, a) + γ max_{a'} Q(s', a'): the synchronous
// generative-model oracle. It is unbiased because the maximum sits inside the
// expectation, and each τ(·; ξ) is γ-Lipschitz in ℓ∞ because the maximum over
// actions is 1-Lipschitz in ℓ∞. The next states depend on the Sample only, so
// the same Sample at two Q-functions uses the same transitions.
type mdpOracle struct {
	s, a, k int
	r       []float64 // S·A
	next    []int32   // S·A·k successor states
	prob    []float64 // S·A·k probabilities
	cdf     []float64 // S·A·k cumulative probabilities, last exactly 1
	gamma   float64
	v       []float64 // scratch: max_a Q(s, a)
	noise   noiseSource
}

var (
	_ Oracle                      = (*mdpOracle)(nil)
	_ solver.NoiseBound           = (*mdpOracle)(nil)
	_ solver.CoordinateNoiseBound = (*mdpOracle)(nil)
)

// CoordinateNoise implements solver.CoordinateNoiseBound. Entry (s, a) of a
// unit sample deviates from T(Q)(s, a) by γ(V(s') − E) with E = Σ_j P_j V(s'_j)
// and s' drawn from the pair's successors, so |η_sa| ≤ b_sa =
// γ·max{max_j V(s'_j) − E, E − min_j V(s'_j)} and E η_sa² = γ² Var V(s'),
// computed exactly from the transition probabilities.
func (o *mdpOracle) CoordinateNoise(b, v, q []float64) bool {
	n := o.s * o.a
	if len(q) != n || len(b) != n || len(v) != n {
		return false
	}
	o.values(q)
	for sa := range n {
		e, e2, lo, hi := 0.0, 0.0, math.Inf(1), math.Inf(-1)
		for j := sa * o.k; j < (sa+1)*o.k; j++ {
			w := o.v[o.next[j]]
			e += o.prob[j] * w
			e2 += o.prob[j] * w * w
			lo, hi = math.Min(lo, w), math.Max(hi, w)
		}
		b[sa] = o.gamma * math.Max(hi-e, e-lo)
		// E(V − E)² by the two-pass formula, exact up to rounding (never
		// below the one-pass E V² − E², which may cancel).
		c := 0.0
		for j := sa * o.k; j < (sa+1)*o.k; j++ {
			d := o.v[o.next[j]] - e
			c += o.prob[j] * d * d
		}
		v[sa] = o.gamma * o.gamma * math.Max(c, e2-e*e)
	}
	return true
}

// NoiseBound implements solver.NoiseBound. A unit sample's entry (s, a)
// deviates from T(Q)(s, a) by γ(V(s') − Σ_j P_j V(s'_j)) with V = max_a Q
// and s' one of the pair's successors: the rewards are deterministic and
// cancel. So |τ₁(Q) − T(Q)| ≤ b_sa = γ·max{max_j V(s'_j) − E, E − min_j
// V(s'_j)} ≤ γ·span(V) entrywise, and the bound is max_sa b_sa in ℓ∞
// (times d^{1/p} in ℓp). Other norms get +Inf (no bound declared).
func (o *mdpOracle) NoiseBound(q []float64, norm solver.Norm) float64 {
	if len(q) != o.s*o.a {
		return math.Inf(1)
	}
	o.values(q)
	b := 0.0
	for sa := 0; sa < o.s*o.a; sa++ {
		e, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
		for j := sa * o.k; j < (sa+1)*o.k; j++ {
			v := o.v[o.next[j]]
			e += o.prob[j] * v
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		b = math.Max(b, o.gamma*math.Max(hi-e, e-lo))
	}
	switch n := norm.(type) {
	case solver.LInf:
		return b
	case solver.LP:
		return b * math.Pow(float64(n.Len()), 1/n.P())
	}
	return math.Inf(1)
}

func (o *mdpOracle) Len() int            { return o.s * o.a }
func (o *mdpOracle) Model() solver.Model { return solver.SamplewiseLipschitz }

// values writes V(s) = max_a Q(s, a) into o.v.
func (o *mdpOracle) values(q []float64) {
	for s := 0; s < o.s; s++ {
		row := q[s*o.a : (s+1)*o.a]
		m := row[0]
		for _, v := range row[1:] {
			m = math.Max(m, v)
		}
		o.v[s] = m
	}
}

// EvalExact implements solver.Exact; it costs O(S·A·branch).
func (o *mdpOracle) EvalExact(dst, q []float64) error {
	if err := checkEval(o.s*o.a, dst, q, solver.Sample{}, false); err != nil {
		return err
	}
	o.values(q)
	for sa := range dst {
		e := 0.0
		for j := sa * o.k; j < (sa+1)*o.k; j++ {
			e += o.prob[j] * o.v[o.next[j]]
		}
		dst[sa] = o.r[sa] + o.gamma*e
	}
	return nil
}

// mdpDirectDraws is the largest Sample.Size that Eval draws next state by
// next state; larger samples draw each pair's successor counts at once.
const mdpDirectDraws = 32

// Eval implements solver.Oracle: Size next states per pair, averaged. Up to
// mdpDirectDraws next states are drawn one by one, in O(S·A·Size); above,
// each pair's successor counts (n₁, …, n_k), which are all the average
// depends on, are drawn from their multinomial(Size; P(·|s, a)) law as
// n_i ~ Binomial(Size − n₁ − … − n_{i−1}, P_i/(1 − P₁ − … − P_{i−1})), the
// exact conditional laws, in O(S·A·branch) whatever Size. Either way the
// average has the law of Size independent successor draws, and the counts
// depend on the Sample only, so the same Sample at two Q-functions uses the
// same transitions. A Size above MDPMaxSample draws, and reports,
// MDPMaxSample unit samples.
func (o *mdpOracle) Eval(dst, q []float64, s solver.Sample) (int, error) {
	if err := checkEval(o.s*o.a, dst, q, s, true); err != nil {
		return 0, err
	}
	s.Size = min(s.Size, MDPMaxSample)
	o.values(q)
	rng := o.noise.reset(s.Seed)
	inv := 1 / float64(s.Size)
	for sa := range dst {
		cdf := o.cdf[sa*o.k : (sa+1)*o.k]
		next := o.next[sa*o.k : (sa+1)*o.k]
		sum := 0.0
		if s.Size <= mdpDirectDraws {
			for j := 0; j < s.Size; j++ {
				u := rng.Float64()
				i := 0
				for i < o.k-1 && u >= cdf[i] {
					i++
				}
				sum += o.v[next[i]]
			}
		} else {
			left, below := float64(s.Size), 0.0
			for i := 0; i < o.k-1 && left > 0; i++ {
				n := left
				if rest := 1 - below; cdf[i]-below < rest {
					n = binomial(left, (cdf[i]-below)/rest, &o.noise)
				}
				sum += n * o.v[next[i]]
				left -= n
				below = cdf[i]
			}
			sum += left * o.v[next[o.k-1]]
		}
		dst[sa] = o.r[sa] + o.gamma*sum*inv
	}
	return s.Size, nil
}

// newMDP builds "mdp": rewards uniform on [0, 1], each pair (s, a) moving to
// min(S, 4) distinct random states with Dirichlet(1) probabilities. Q* comes
// from policy iteration with exact policy evaluation by LU.
func newMDP(c Config, _ solver.Norm) (*Problem, error) {
	if c.Noise != 0 {
		return nil, configErr("Noise", "%v: mdp takes its noise from its transitions; leave it zero", c.Noise)
	}
	if c.Gamma >= 1 {
		return nil, configErr("Gamma", "%v: mdp needs a discount γ < 1", c.Gamma)
	}
	ns, na := c.Dim, c.Actions
	k := min(ns, mdpBranch)
	rng := rand.New(rand.NewPCG(c.Seed, mix(c.Seed, saltBuild)))
	o := &mdpOracle{
		s: ns, a: na, k: k,
		r:     make([]float64, ns*na),
		next:  make([]int32, ns*na*k),
		prob:  make([]float64, ns*na*k),
		cdf:   make([]float64, ns*na*k),
		gamma: c.Gamma,
		v:     make([]float64, ns),
		noise: newNoiseSource(mix(c.Seed, saltNoise)),
	}
	for sa := 0; sa < ns*na; sa++ {
		o.r[sa] = rng.Float64()
		perm := rng.Perm(ns)
		tot := 0.0
		for j := 0; j < k; j++ {
			o.next[sa*k+j] = int32(perm[j])
			o.prob[sa*k+j] = rng.ExpFloat64()
			tot += o.prob[sa*k+j]
		}
		cum := 0.0
		for j := 0; j < k; j++ {
			o.prob[sa*k+j] /= tot
			cum += o.prob[sa*k+j]
			o.cdf[sa*k+j] = cum
		}
		o.cdf[sa*k+k-1] = 1
	}
	v, err := policyIteration(o)
	if err != nil {
		return nil, fmt.Errorf("problems: mdp: %w", err)
	}
	qs := make([]float64, ns*na)
	variance := 0.0
	for sa := range qs {
		e, e2 := 0.0, 0.0
		for j := sa * k; j < (sa+1)*k; j++ {
			w := v[o.next[j]]
			e += o.prob[j] * w
			e2 += o.prob[j] * w * w
		}
		qs[sa] = o.r[sa] + c.Gamma*e
		variance += c.Gamma * c.Gamma * math.Max(0, e2-e*e)
	}
	return &Problem{Oracle: o, FixedPoint: qs, Sigma: math.Sqrt(variance)}, nil
}

// policyIteration returns V* of the MDP by Howard's policy iteration: exact
// evaluation of the current policy π by solving (I − γP_π)V = r_π, then greedy
// improvement, keeping the current action on ties, until the policy is stable.
// A NaN or ±Inf in the system is an error wrapping solver.ErrNonFinite,
// found before the LU factorisation.
func policyIteration(o *mdpOracle) ([]float64, error) {
	ns, na, k := o.s, o.a, o.k
	pi := make([]int, ns)
	for s := range pi {
		for a := 1; a < na; a++ {
			if o.r[s*na+a] > o.r[s*na+pi[s]] {
				pi[s] = a
			}
		}
	}
	m := mat.NewDense(ns, ns, nil)
	rhs := mat.NewVecDense(ns, nil)
	v := mat.NewVecDense(ns, nil)
	var lu mat.LU
	for iter := 0; iter < 100*ns*na+100; iter++ {
		m.Zero()
		for s := 0; s < ns; s++ {
			sa := s*na + pi[s]
			m.Set(s, s, 1)
			for j := sa * k; j < (sa+1)*k; j++ {
				t := int(o.next[j])
				m.Set(s, t, m.At(s, t)-o.gamma*o.prob[j])
			}
			rhs.SetVec(s, o.r[sa])
		}
		if err := checkFinite("I − γP_π", m.RawMatrix().Data); err != nil {
			return nil, err
		}
		if err := checkFinite("r_π", rhs.RawVector().Data); err != nil {
			return nil, err
		}
		lu.Factorize(m)
		if err := lu.SolveVecTo(v, false, rhs); err != nil {
			return nil, err
		}
		vs := v.RawVector().Data
		changed := false
		for s := 0; s < ns; s++ {
			q := func(a int) float64 {
				sa := s*na + a
				e := 0.0
				for j := sa * k; j < (sa+1)*k; j++ {
					e += o.prob[j] * vs[o.next[j]]
				}
				return o.r[sa] + o.gamma*e
			}
			cur := q(pi[s])
			for a := 0; a < na; a++ {
				if qa := q(a); qa > cur+1e-12*(1+math.Abs(cur)) {
					pi[s], cur, changed = a, qa, true
				}
			}
		}
		if !changed {
			return append([]float64(nil), vs...), nil
		}
	}
	return nil, errors.New("policy iteration did not terminate")
}
