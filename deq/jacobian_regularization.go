package deq

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// ErrJacobianUnsupported is wrapped by the error JacobianRegularize returns
// for a cell whose evaluator does not implement layers.JacobianPenalizer
// (every built-in cell but Dense) when the weight is positive.
var ErrJacobianUnsupported = errors.New("Jacobian regularisation is not supported")

// JacobianRegOptions configure JacobianRegularize. The zero value of every
// field is its documented default; a nil *JacobianRegOptions means the
// defaults.
type JacobianRegOptions struct {
	// Probes is the number k of Hutchinson probes. Zero means
	// DefaultProbes.
	Probes int
	// Gaussian draws standard normal probes instead of the default
	// Rademacher (±1) ones, whose estimator has the smaller variance (see
	// JacobianFrobenius).
	Gaussian bool
	// PerDimension divides the estimate by the per-example state length
	// Rows·Hidden as well, TorchDEQ's normalisation (its jac_reg divides
	// ‖vᵀJ‖² by the number of entries of the batch's state). By default R
	// is the mean over examples of ‖J_b‖_F², as JacobianFrobenius reports
	// it, which grows with the width of the state.
	PerDimension bool
	// Seed seeds the probes. It is mixed with the forward seed of the
	// Layer (Settings.ForwardSettings.Seed, which SetSeeds sets per batch),
	// so a fixed Seed still gives fresh probes for every batch.
	Seed uint64
}

// JacobianRegularize computes the Jacobian regularisation term of
// "Stabilizing Equilibrium Models by Jacobian Regularization" by Shaojie
// Bai, Vladlen Koltun and J. Zico Kolter (ICML 2021) at the fixed point of
// sol, and adds weight times its gradient to the cell's parameter
// gradients (layers.Param.GradData).
//
// The term is Hutchinson's estimate
//
//	R = (1/(k·N)) Σ_i ‖v_iᵀ J‖²,  J = ∂f/∂z at (z*, x),
//
// over k probes v_i (JacobianRegOptions.Probes; Rademacher or Gaussian,
// E[vvᵀ] = I), with N the batch size (or N·Rows·Hidden under
// PerDimension): an unbiased estimate of the mean over examples of
// ‖J_b‖_F² (per entry under PerDimension). The returned FrobeniusEstimate
// holds R in Value (before the weight), its standard error over the probes
// and the per-example estimates (normalised alike). Under Settings.Dropout
// the Jacobian is that of the masked map m ⊙ f/(1 − p) whose fixed point sol
// is.
//
// The gradient is exact for the given probes: z* and the probes are
// treated as constants, as in the reference implementation (z* is detached
// there; the dependence of z* on θ is not differentiated), while x is not:
// weight·∂R/∂x is written into dx and weight·∂R/∂z* into dz when they are
// not nil (lengths of sol.X and sol.Z). A training loop adds R·weight to its
// loss and passes dx on to the encoder; dz is for callers that want the
// path through z* as well (say, by adding it to the cotangent of a
// Backward).
//
// A positive weight needs a cell whose evaluator implements
// layers.JacobianPenalizer (of the built-in cells, Dense); for the others
// JacobianRegularize returns an error wrapping ErrJacobianUnsupported that
// names the cell. A zero weight only measures R (with exact VJPs) and works
// for every cell.
func (l *Layer) JacobianRegularize(sol *Solution, weight float64, o *JacobianRegOptions, dz, dx []float64) (FrobeniusEstimate, error) {
	var opts JacobianRegOptions
	if o != nil {
		opts = *o
	}
	switch {
	case !(weight >= 0) || math.IsInf(weight, 0):
		return FrobeniusEstimate{}, fmt.Errorf("deq: JacobianRegularize: weight = %v must be non-negative and finite", weight)
	case opts.Probes < 0:
		return FrobeniusEstimate{}, fmt.Errorf("deq: JacobianRegOptions.Probes = %d must not be negative", opts.Probes)
	}
	if opts.Probes == 0 {
		opts.Probes = DefaultProbes
	}
	b, err := l.prepareSolution("JacobianRegularize", sol, stateArg("dz", dz, true), inputArg("dx", dx))
	if err != nil {
		return FrobeniusEstimate{}, err
	}
	pen, ok := b.ev.(layers.JacobianPenalizer)
	if weight > 0 && !ok {
		return FrobeniusEstimate{}, fmt.Errorf("deq: JacobianRegularize: %w for the %s cell", ErrJacobianUnsupported, cellKind(l.cell))
	}
	n, d := sol.Examples, len(sol.Z)/sol.Examples
	norm := float64(opts.Probes * n)
	if opts.PerDimension {
		norm *= float64(d)
	}
	scale := weight / norm
	rng := rand.New(rand.NewPCG(numeric.Mix(opts.Seed, l.s.ForwardSettings.Seed), 0x1f83d9abfb41bd6b))
	v := make([]float64, len(sol.Z))
	r := make([]float64, len(sol.Z))
	var dzp, dxp []float64
	if dz != nil {
		clear(dz)
		dzp = make([]float64, len(dz))
	}
	if dx != nil {
		clear(dx)
		dxp = make([]float64, len(dx))
	}
	est := FrobeniusEstimate{PerExample: make([]float64, n), Probes: opts.Probes}
	var acc running
	for range opts.Probes {
		drawProbe(rng, v, opts.Gaussian)
		// Under dropout vᵀ(DJ) = (Dv)ᵀJ with D = diag(m).
		sol.mask.apply(v)
		if ok {
			if err := pen.JacobianPenalty(r, dzp, dxp, sol.Z, v, scale); err != nil {
				return est, err
			}
			addInto(dz, dzp)
			addInto(dx, dxp)
		} else if _, err := b.ev.VJPHidden(r, sol.Z, v, solver.Sample{Size: max(b.ev.Terms(), 1)}); err != nil {
			return est, err
		}
		batch := 0.0
		for e := range n {
			rb := r[e*d : (e+1)*d]
			x := dot(rb, rb) * float64(n) / norm
			est.PerExample[e] += x
			batch += x
		}
		batch *= float64(opts.Probes) / float64(n)
		acc.add(batch)
	}
	est.Value, est.StdErr = acc.mean, acc.stdErr()
	return est, nil
}

// solutionArg is a slice argument of a method that takes a Solution: one
// of the state's length (state) or of the input's, nil allowed when
// optional.
type solutionArg struct {
	name     string
	v        []float64
	state    bool
	optional bool
}

// stateArg is an argument of the state's length.
func stateArg(name string, v []float64, optional bool) solutionArg {
	return solutionArg{name: name, v: v, state: true, optional: optional}
}

// inputArg is an optional argument of the input's length.
func inputArg(name string, v []float64) solutionArg {
	return solutionArg{name: name, v: v, optional: true}
}

// prepareSolution returns the batch state for sol, with the evaluator's
// input set to sol.X, after checking that sol fits the cell, that its Z
// and X are finite (an error wrapping solver.ErrNonFinite otherwise) and
// that the arguments have the lengths of sol's state or input; what names
// the caller in errors.
func (l *Layer) prepareSolution(what string, sol *Solution, args ...solutionArg) (*batch, error) {
	b, err := l.checkSolution(what, sol, args...)
	if err != nil {
		return nil, err
	}
	if err := b.ev.SetInput(sol.X); err != nil {
		return nil, err
	}
	return b, nil
}

// checkSolution is prepareSolution without setting the evaluator's input.
func (l *Layer) checkSolution(what string, sol *Solution, args ...solutionArg) (*batch, error) {
	if sol == nil {
		return nil, fmt.Errorf("deq: %s: nil Solution", what)
	}
	b, err := l.batch(sol.Examples)
	if err != nil {
		return nil, err
	}
	if len(sol.Z) != b.ev.Len() || len(sol.X) != sol.Examples*l.cell.Shape().InputLen() {
		return nil, fmt.Errorf("deq: %s: Solution does not match the cell's shapes", what)
	}
	for _, a := range args {
		want := len(sol.X)
		if a.state {
			want = len(sol.Z)
		}
		if len(a.v) != want && !(a.optional && a.v == nil) {
			return nil, fmt.Errorf("deq: %s: %s has length %d, want %d", what, a.name, len(a.v), want)
		}
	}
	if err := checkFinite(what+": Solution.Z", sol.Z, sol.Examples); err != nil {
		return nil, err
	}
	if err := checkFinite(what+": Solution.X", sol.X, sol.Examples); err != nil {
		return nil, err
	}
	return b, nil
}

// cellKind names a cell by its type, without package or pointer: "Dense".
func cellKind(c layers.Cell) string {
	s := fmt.Sprintf("%T", c)
	s = strings.TrimLeft(s, "*")
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// drawProbe fills v with a Hutchinson probe: Rademacher (±1) entries, or
// standard normal ones.
func drawProbe(rng *rand.Rand, v []float64, gaussian bool) {
	for i := range v {
		if gaussian {
			v[i] = rng.NormFloat64()
		} else {
			v[i] = float64(2*int(rng.Uint64()&1) - 1)
		}
	}
}

// addInto adds src to dst; a nil dst is left alone.
func addInto(dst, src []float64) {
	if dst == nil {
		return
	}
	for i, v := range src {
		dst[i] += v
	}
}

// running is Welford's running mean and variance of the per-probe
// estimates of a Hutchinson estimate.
type running struct {
	n        int
	mean, m2 float64
}

// add adds one probe's estimate.
func (r *running) add(x float64) {
	r.n++
	delta := x - r.mean
	r.mean += delta / float64(r.n)
	r.m2 += delta * (x - r.mean)
}

// stdErr returns the sample standard error of the mean, NaN below two
// probes.
func (r *running) stdErr() float64 {
	if r.n < 2 {
		return math.NaN()
	}
	k := float64(r.n)
	return math.Sqrt(r.m2 / (k - 1) / k)
}
