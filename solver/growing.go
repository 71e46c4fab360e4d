package solver

import (
	"cmp"
	"fmt"
	"math"

	"github.com/deqgo/deq/internal/check"
)

// Defaults of GrowingBatch, used where its fields are zero.
const (
	DefaultGrowingBatch  = 8
	DefaultGrowingGrowth = 8
	DefaultGrowingZ      = 2
)

// GrowingBatch is minibatch Picard (Alpha = 1, the default) or
// Krasnoselskii–Mann iteration with a minibatch that grows geometrically,
// and a certified stop:
//
//	x_{k+1} = x_k + α(τ(x_k; B_k) − x_k),  |B_k| = min{MaxBatch, ⌈Batch·Growth^k⌉}.
//
// It is the baseline a sampled DEQ forward must beat: on a contraction the
// error of x_{k+1} is about γ times that of x_k plus the minibatch noise
// σ/√|B_k|, so a batch growing by a constant factor per step keeps the two
// balanced, and the work is dominated by the last step.
//
// Each minibatch is drawn as two independent halves, whose difference
// estimates the minibatch's standard error without extra samples; with the
// residual estimate and the observed contraction this gives a sampled bound
// on the next point's residual. When that bound meets the tolerance, a
// FiniteSum oracle is evaluated exactly at the next point: an exact
// residual at most the tolerance stops the run with Success (and Solve's
// Certificate reuses that evaluation), a larger one lets the iteration
// continue. Without a FiniteSum the run stops with ToleranceEstimated and
// Solve's Certificate decides. Once the batch reaches Terms() the method is
// exact Picard or Krasnoselskii–Mann. Under Settings.Certify.Sampled, with
// an oracle that declares a TermBound, the check at the next point is a
// sampled certificate whenever its sample is cheaper than the exact pass:
// a Bound at most the tolerance stops the run with Success (the
// Certificate, Own), at failure probability Settings.Certify.Delta over all
// of the run's checks; a larger one lets the iteration continue with the
// next minibatch. The page docs/solvers-and-certificates.md in the
// repository gives the bound.
//
// Methods lists it as "growing-batch", so that a command line can select
// it; a deep equilibrium model can use it for the forward solve and for
// the adjoint solve of its backward pass, both finite sums over the cell's
// terms.
type GrowingBatch struct {
	// Alpha is the step α ∈ (0, 1]. Zero means 1: Picard iteration.
	Alpha float64
	// Batch is the first minibatch size m₀ ≥ 1. Zero means
	// DefaultGrowingBatch.
	Batch int
	// Growth is the factor g > 1 by which the minibatch grows per step.
	// Zero means DefaultGrowingGrowth.
	Growth float64
	// Gamma is the Lipschitz bound γ̄ ∈ (0, 1] used by the sampled bound
	// before the contraction has been observed. Zero means 1.
	Gamma float64
	// Z multiplies the standard-error estimate in the sampled bound. Zero
	// means DefaultGrowingZ.
	Z float64
	// MaxBatch caps |B_k|. Zero means DefaultMaxBatch.
	MaxBatch int
}

var (
	_ Method    = GrowingBatch{}
	_ Validator = GrowingBatch{}
)

// String implements Method.
func (GrowingBatch) String() string { return "growing-batch" }

// Validate implements Validator: it checks the settings and that p is well
// formed.
func (m GrowingBatch) Validate(p Problem) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"Alpha", m.Alpha}, {"Gamma", m.Gamma}} {
		if f.v != 0 {
			if err := checkRange("GrowingBatch."+f.name, f.v, 0, 1, false); err != nil {
				return err
			}
		}
	}
	if m.Growth != 0 && !(m.Growth > 1 && !math.IsInf(m.Growth, 1)) {
		return fmt.Errorf("solver: GrowingBatch.Growth = %v must exceed 1 and be finite", m.Growth)
	}
	if err := check.NotNegative("solver: GrowingBatch.Batch", m.Batch); err != nil {
		return err
	}
	return blValidate("GrowingBatch", p, m.MaxBatch, blField{"Z", m.Z})
}

// Run implements Method.
func (m GrowingBatch) Run(e *Env) error {
	alpha, gamma := cmp.Or(m.Alpha, 1), cmp.Or(m.Gamma, 1)
	m0, g := cmp.Or(m.Batch, DefaultGrowingBatch), cmp.Or(m.Growth, DefaultGrowingGrowth)
	z, maxB := cmp.Or(m.Z, DefaultGrowingZ), cmp.Or(m.MaxBatch, DefaultMaxBatch)
	o := e.Oracle()
	det := o.Model() == Deterministic
	fs, finite := o.(FiniteSum)
	n := e.Len()
	x := append([]float64(nil), e.X0()...)
	tx, ta, tb := make([]float64, n), make([]float64, n), make([]float64, n)
	e.KeepLast()
	step := func() {
		for i := range x {
			x[i] += alpha * (tx[i] - x[i])
		}
	}
	// exact evaluates T(x) into tx with one exact call and records x with
	// its exact residual.
	exact := func() error {
		if det {
			if err := e.Eval(tx, x, Sample{Size: 1}); err != nil {
				return err
			}
		} else if err := e.evalFiniteSum(tx, x, fs); err != nil {
			return err
		}
		r := e.Dist(tx, x)
		return e.RecordBound(x, r, r)
	}
	prev := math.NaN()
	attempts := 0 // sampled certificates drawn (see Env.sampledStop)
	for k := 0; ; k++ {
		size := blBatch(float64(m0)*math.Pow(g, float64(k)), 0, 0, maxB)
		if det || (finite && size >= fs.Terms()) {
			if err := exact(); err != nil {
				return err
			}
			step()
			continue
		}
		half := max(1, size/2)
		if !e.CanDraw(2 * int64(half)) {
			return e.Stop(SampleLimit, nil)
		}
		if err := e.Eval(ta, x, Sample{Seed: e.Seed(), Size: half}); err != nil {
			return err
		}
		if err := e.Eval(tb, x, Sample{Seed: e.Seed(), Size: half}); err != nil {
			return err
		}
		for i := range tx {
			tx[i] = (ta[i] + tb[i]) / 2
			ta[i] -= tb[i]
		}
		e.SuggestCertSamples(2 * half)
		se := e.norm.Norm(ta) / 2
		r := e.Dist(tx, x)
		rho := 1 - alpha*(1-gamma)
		if prev > 0 {
			rho = math.Min(rho, r/prev)
		}
		prev = r
		bound := rho*r + z*se
		if bound > e.Tol() || math.IsNaN(e.Tol()) {
			if err := e.Record(x, r+z*se); err != nil {
				return err
			}
			step()
			continue
		}
		// The sampled bound meets the tolerance at the next point: step,
		// then certify.
		step()
		if !finite {
			return e.Record(x, bound)
		}
		if drawn, err := e.sampledStop(x, &attempts); drawn || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		if err := exact(); err != nil {
			return err
		}
		step()
	}
}

// evalFiniteSum evaluates the exact average of a FiniteSum oracle at x
// into dst, counting one call of fs.Terms() unit samples, with the checks
// of Eval.
func (e *Env) evalFiniteSum(dst, x []float64, fs FiniteSum) error {
	m := int64(fs.Terms())
	if err := e.checkLimits(m); err != nil {
		return err
	}
	e.beginExact(x)
	err := fs.EvalExact(dst, x)
	e.stats.Calls++
	e.stats.Samples += m
	if err != nil {
		return fmt.Errorf("solver: exact evaluation %d: %w", e.stats.Calls, err)
	}
	if i := firstNonFinite(dst); i >= 0 {
		return nonFiniteStop("exact evaluation %d returned %v at coordinate %d", e.stats.Calls, dst[i], i)
	}
	e.endExact(dst)
	return nil
}
