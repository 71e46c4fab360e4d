package solver

import (
	"cmp"
	"fmt"
	"math"

	"github.com/deqgo/deq/internal/check"
)

// This file holds the stochastic baselines against which VR-GHAL is compared:
// minibatch stochastic Krasnoselskii–Mann, stochastic Halpern with growing
// minibatches, and Halpern with a PAGE-type recursive variance-reduced
// estimator.
//
// None of them can observe the true residual ‖T(x) − x‖. Each records, for
// its iterate x_k, a residual estimate built from the oracle values it
// already drew (documented per method), and Settings.Tol is compared with
// that estimate: Status Success means that the estimate reached the
// tolerance, not that the true residual did. Result.Certificate, computed by
// Solve from fresh samples, is the bound to rely on. All three keep their
// last iterate (Env.KeepLast) rather than the one with the lowest noisy
// estimate, whose selection would be biased towards lucky draws. Each
// suggests a certificate minibatch size (Env.SuggestCertSamples), documented
// per method.

// Defaults of the stochastic baselines, used where their fields are zero.
const (
	// DefaultMaxBatch caps the minibatch of every baseline.
	DefaultMaxBatch = 1 << 22

	DefaultMinibatchKMAlpha      = 0.5
	DefaultMinibatchKMBatch      = 1
	DefaultMinibatchKMBatchPower = 2

	DefaultStochasticHalpernC          = 1
	DefaultStochasticHalpernBatchPower = 1

	DefaultPAGEHalpernC1 = 1
	DefaultPAGEHalpernC2 = 1
)

// MinibatchKM is the minibatch stochastic Krasnoselskii–Mann iteration
//
//	x_{k+1} = (1 − α_k) x_k + α_k τ(x_k; B_k),
//	α_k = Alpha/(k+1)^AlphaDecay,  |B_k| = min{MaxBatch, ⌈Batch·(k+1)^BatchPower⌉},
//
// studied in normed spaces by Bravo, Cominetti and Pavez-Signé ("Rates of
// convergence for inexact Krasnosel'skii–Mann iterations in Banach spaces",
// Math. Program. 175, 2019) and by Bravo and Cominetti ("Stochastic
// fixed-point iterations for nonexpansive maps: convergence and error
// bounds", SIAM J. Control Optim., 2024). Each minibatch draws fresh
// samples, so the method needs only a bounded-variance oracle.
//
// Residual estimate: the value recorded for x_k is ‖τ(x_k; B_k) − x_k‖, from
// the minibatch that also makes the step. It is biased upward on average
// (E‖τ − x‖ ≥ ‖T(x) − x‖ by Jensen's inequality) but a single value can fall
// below the true residual by up to ‖τ(x_k; B_k) − T(x_k)‖, of order
// σ/√|B_k|. The certificate's suggested minibatch is the last |B_k|.
//
// With a constant batch (FixedBatch) and constant step the iterates settle in
// a noise ball of radius of order σ/√Batch rather than converging. On a
// deterministic oracle every minibatch has size 1.
type MinibatchKM struct {
	// Alpha is the initial step α₀ ∈ (0, 1]. Zero means
	// DefaultMinibatchKMAlpha.
	Alpha float64
	// AlphaDecay is the exponent a ∈ [0, 1] of α_k = α₀/(k+1)^a. Zero keeps
	// the step constant.
	AlphaDecay float64
	// Batch is the initial minibatch size m₀ ≥ 1. Zero means
	// DefaultMinibatchKMBatch.
	Batch int
	// BatchPower is the exponent q ≥ 0 of |B_k| = ⌈m₀(k+1)^q⌉. Zero means
	// DefaultMinibatchKMBatchPower.
	BatchPower float64
	// FixedBatch keeps |B_k| = m₀, ignoring BatchPower.
	FixedBatch bool
	// MaxBatch caps |B_k|. Zero means DefaultMaxBatch.
	MaxBatch int
}

var (
	_ Method    = MinibatchKM{}
	_ Validator = MinibatchKM{}
)

// String implements Method.
func (MinibatchKM) String() string { return "minibatch-km" }

// Validate implements Validator: it checks the settings and that p is well
// formed.
func (m MinibatchKM) Validate(p Problem) error {
	switch {
	case math.IsNaN(m.Alpha) || m.Alpha < 0 || m.Alpha > 1:
		return fmt.Errorf("solver: MinibatchKM.Alpha = %v outside (0, 1]", m.Alpha)
	case math.IsNaN(m.AlphaDecay) || m.AlphaDecay < 0 || m.AlphaDecay > 1:
		return fmt.Errorf("solver: MinibatchKM.AlphaDecay = %v outside [0, 1]", m.AlphaDecay)
	case math.IsNaN(m.BatchPower) || m.BatchPower < 0 || math.IsInf(m.BatchPower, 1):
		return fmt.Errorf("solver: MinibatchKM.BatchPower = %v must be finite and not negative", m.BatchPower)
	}
	if err := check.NotNegative("solver: MinibatchKM.Batch", m.Batch); err != nil {
		return err
	}
	return blValidate("MinibatchKM", p, m.MaxBatch)
}

// Run implements Method.
func (m MinibatchKM) Run(e *Env) error {
	alpha, m0, q := cmp.Or(m.Alpha, DefaultMinibatchKMAlpha), cmp.Or(m.Batch, DefaultMinibatchKMBatch), cmp.Or(m.BatchPower, DefaultMinibatchKMBatchPower)
	if m.FixedBatch {
		q = 0
	}
	maxB := cmp.Or(m.MaxBatch, DefaultMaxBatch)
	det := e.Oracle().Model() == Deterministic
	x := append([]float64(nil), e.X0()...)
	tx := make([]float64, len(x))
	e.KeepLast()
	for k := 0; ; k++ {
		size := 1
		if !det {
			size = blBatch(float64(m0), k, q, maxB)
		}
		if err := e.Eval(tx, x, Sample{Seed: e.Seed(), Size: size}); err != nil {
			return err
		}
		e.SuggestCertSamples(size)
		if err := e.Record(x, e.Dist(tx, x)); err != nil {
			return err
		}
		a := alpha / math.Pow(float64(k+1), m.AlphaDecay)
		for i := range x {
			x[i] += a * (tx[i] - x[i])
		}
	}
}

// StochasticHalpern is the stochastic Halpern iteration with growing
// minibatches, after Bravo and Contreras ("Stochastic Halpern iteration in
// normed spaces and applications to reinforcement learning", 2024,
// arXiv:2403.12338):
//
//	x_{k+1} = λ_k x_0 + (1 − λ_k) τ(x_k; B_k),  λ_k = 1/(k+2),
//	|B_k| = min{MaxBatch, ⌈C·(k+1)^BatchPower/ε²⌉}.
//
// Each minibatch draws fresh samples, so the method needs only a
// bounded-variance oracle. The schedule's shape (growth in k, 1/ε²) follows
// the paper; its constant C is a setting, not the paper's theoretical value:
// take C of the order of σ², the variance of one unit sample in the problem's
// norm (times κ for non-Euclidean norms), for the minibatch errors to stay of
// order ε. The paper's analysis of general norms uses faster-growing batches
// (BatchPower > 1).
//
// Residual estimate: ‖τ(x_k; B_k) − x_k‖, as for MinibatchKM. The
// certificate's suggested minibatch is ⌈C/ε²⌉ (capped at MaxBatch), whose
// standard error is of order ε when C is of order σ²; the later, larger
// batches grow with k only because Halpern iteration accumulates their errors.
//
// Anchoring slows Halpern iteration on contractions to an O(1/k) rate; the
// method targets nonexpansive maps. On a deterministic oracle every minibatch
// has size 1.
type StochasticHalpern struct {
	// Eps is the target accuracy ε of the minibatch schedule. Zero means the
	// absolute tolerance in force (Settings.Tol); with Settings.Relative, Eps
	// must be set.
	Eps float64
	// C scales the minibatch. Zero means DefaultStochasticHalpernC.
	C float64
	// BatchPower is the exponent of k+1 in the minibatch. Zero means
	// DefaultStochasticHalpernBatchPower.
	BatchPower float64
	// MaxBatch caps |B_k|. Zero means DefaultMaxBatch.
	MaxBatch int
}

var (
	_ Method    = StochasticHalpern{}
	_ Validator = StochasticHalpern{}
)

// String implements Method.
func (StochasticHalpern) String() string { return "stochastic-halpern" }

// Validate implements Validator: it checks the settings and that p is well
// formed.
func (m StochasticHalpern) Validate(p Problem) error {
	return blValidate("StochasticHalpern", p, m.MaxBatch, blField{"Eps", m.Eps}, blField{"C", m.C}, blField{"BatchPower", m.BatchPower})
}

// Run implements Method.
func (m StochasticHalpern) Run(e *Env) error {
	eps, err := blEps(e, "StochasticHalpern", m.Eps)
	if err != nil {
		return err
	}
	c, q, maxB := cmp.Or(m.C, DefaultStochasticHalpernC), cmp.Or(m.BatchPower, DefaultStochasticHalpernBatchPower), cmp.Or(m.MaxBatch, DefaultMaxBatch)
	det := e.Oracle().Model() == Deterministic
	x0 := e.X0()
	x := append([]float64(nil), x0...)
	tx := make([]float64, len(x))
	e.KeepLast()
	if !det {
		e.SuggestCertSamples(blBatch(c/(eps*eps), 0, 0, maxB))
	}
	for k := 0; ; k++ {
		size := 1
		if !det {
			size = blBatch(c/(eps*eps), k, q, maxB)
		}
		if err := e.Eval(tx, x, Sample{Seed: e.Seed(), Size: size}); err != nil {
			return err
		}
		if err := e.Record(x, e.Dist(tx, x)); err != nil {
			return err
		}
		lam := 1 / float64(k+2)
		for i := range x {
			x[i] = lam*x0[i] + (1-lam)*tx[i]
		}
	}
}

// PAGEHalpern is Halpern iteration driven by the recursive PAGE-type
// variance-reduced estimator of Cai, Song, Guzmán and Diakonikolas
// ("Stochastic Halpern iteration with variance reduction for stochastic
// monotone inclusions", NeurIPS 2022), written for the fixed-point map T
// (their cocoercive operator is I − T):
//
//	x_{k+1} = λ_k x_0 + (1 − λ_k) T̃_k,  λ_k = 1/(k+2),
//	T̃_0 = τ(x_0; S⁽¹⁾_0), and for k ≥ 1, with probability p_k = min{1, 2/(k+1)}:
//	  T̃_k = τ(x_k; S⁽¹⁾_k),                            |S⁽¹⁾_k| = ⌈C1·(k+1)/ε²⌉,
//	otherwise
//	  T̃_k = T̃_{k−1} + τ(x_k; S⁽²⁾_k) − τ(x_{k−1}; S⁽²⁾_k), |S⁽²⁾_k| = ⌈C2·(k+1)‖x_k − x_{k−1}‖²/ε²⌉,
//
// both capped at MaxBatch, the difference evaluated with one Sample at both
// points. The difference costs 2|S⁽²⁾_k| unit samples (two oracle calls). The
// schedules' shapes follow the paper; their constants are settings: C1 of the
// order of σ² and C2 of the order of L², the Lipschitz-in-expectation
// constant (γ² for a samplewise γ-Lipschitz oracle).
//
// The method needs a multi-query oracle that is Lipschitz in expectation
// (model LipschitzInExpectation or stronger); Validate rejects others.
//
// Residual estimate: ‖T̃_k − x_k‖, from the recursive estimator; its error
// accumulates over the differences since the last refresh. The certificate's
// suggested minibatch is ⌈C1/ε²⌉ (capped at MaxBatch), whose standard error is
// of order ε when C1 is of order σ²; the refresh batches carry an extra factor
// k+1 only because refreshes become rarer.
type PAGEHalpern struct {
	// Eps is the target accuracy ε of the minibatch schedules. Zero means the
	// absolute tolerance in force (Settings.Tol); with Settings.Relative, Eps
	// must be set.
	Eps float64
	// C1 scales the refresh minibatch. Zero means DefaultPAGEHalpernC1.
	C1 float64
	// C2 scales the difference minibatch. Zero means DefaultPAGEHalpernC2.
	C2 float64
	// MaxBatch caps both minibatches. Zero means DefaultMaxBatch.
	MaxBatch int
}

var (
	_ Method    = PAGEHalpern{}
	_ Validator = PAGEHalpern{}
)

// String implements Method.
func (PAGEHalpern) String() string { return "page-halpern" }

// Validate implements Validator: it checks the settings and that the oracle
// is Lipschitz in expectation.
func (m PAGEHalpern) Validate(p Problem) error {
	if err := blValidate("PAGEHalpern", p, m.MaxBatch, blField{"Eps", m.Eps}, blField{"C1", m.C1}, blField{"C2", m.C2}); err != nil {
		return err
	}
	if mod := p.Oracle.Model(); mod < LipschitzInExpectation {
		return fmt.Errorf("solver: PAGEHalpern needs a multi-query oracle Lipschitz in expectation (model %v or stronger), Problem.Oracle has model %v", LipschitzInExpectation, mod)
	}
	return nil
}

// Run implements Method.
func (m PAGEHalpern) Run(e *Env) error {
	eps, err := blEps(e, "PAGEHalpern", m.Eps)
	if err != nil {
		return err
	}
	c1, c2, maxB := cmp.Or(m.C1, DefaultPAGEHalpernC1)/(eps*eps), cmp.Or(m.C2, DefaultPAGEHalpernC2)/(eps*eps), cmp.Or(m.MaxBatch, DefaultMaxBatch)
	det := e.Oracle().Model() == Deterministic
	x0 := e.X0()
	n := len(x0)
	x := append([]float64(nil), x0...)
	prev := make([]float64, n)
	est := make([]float64, n)
	t1, t2 := make([]float64, n), make([]float64, n)
	e.KeepLast()
	size := 1
	if !det {
		size = blBatch(c1, 0, 1, maxB)
		e.SuggestCertSamples(size)
	}
	if err := e.Eval(est, x, Sample{Seed: e.Seed(), Size: size}); err != nil {
		return err
	}
	if err := e.Record(x, e.Dist(est, x)); err != nil {
		return err
	}
	for k := 1; ; k++ {
		lam := 1 / float64(k+1) // λ_{k−1} = 1/((k−1)+2)
		copy(prev, x)
		for i := range x {
			x[i] = lam*x0[i] + (1-lam)*est[i]
		}
		if p := 2 / float64(k+1); p >= 1 || e.Rand().Float64() < p {
			size = 1
			if !det {
				size = blBatch(c1, k, 1, maxB)
			}
			if err := e.Eval(est, x, Sample{Seed: e.Seed(), Size: size}); err != nil {
				return err
			}
		} else {
			d := e.Dist(x, prev)
			size = 1
			if !det {
				size = blBatch(c2*d*d, k, 1, maxB)
			}
			if !e.CanDraw(2 * int64(size)) {
				return e.Stop(SampleLimit, nil)
			}
			s := Sample{Seed: e.Seed(), Size: size}
			if err := e.Eval(t1, x, s); err != nil {
				return err
			}
			if err := e.Eval(t2, prev, s); err != nil {
				return err
			}
			for i := range est {
				est[i] += t1[i] - t2[i]
			}
		}
		if err := e.Record(x, e.Dist(est, x)); err != nil {
			return err
		}
	}
}

// blBatch returns min{maxB, max{1, ⌈scale·(k+1)^q⌉}}.
func blBatch(scale float64, k int, q float64, maxB int) int {
	b := math.Ceil(scale * math.Pow(float64(k+1), q))
	if !(b < float64(maxB)) { // also NaN and +Inf
		return maxB
	}
	return max(1, int(b))
}

// blEps returns the target accuracy of a Halpern baseline: eps, or the
// absolute tolerance in force.
func blEps(e *Env, method string, eps float64) (float64, error) {
	if eps != 0 {
		return eps, nil
	}
	if t := e.Tol(); t > 0 {
		return t, nil
	}
	return 0, fmt.Errorf("solver: %s.Eps must be set when Settings.Relative is: the minibatch schedule needs an absolute accuracy", method)
}

// blField is a float field of a Halpern baseline, for blValidate.
type blField struct {
	name string
	v    float64
}

// blValidate returns an error naming the first field of method that is
// neither zero (the default) nor positive and finite, a negative maxBatch,
// or p's fault (see Problem.check).
func blValidate(method string, p Problem, maxBatch int, fields ...blField) error {
	for _, f := range fields {
		if err := check.PositiveFinite("solver: "+method+"."+f.name, f.v); err != nil {
			return err
		}
	}
	if err := check.NotNegative("solver: "+method+".MaxBatch", maxBatch); err != nil {
		return err
	}
	return p.check()
}
