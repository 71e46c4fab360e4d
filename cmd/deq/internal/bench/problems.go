package bench

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// exactOracle is a stochastic oracle that also evaluates its operator.
type exactOracle interface {
	solver.Oracle
	solver.Exact
}

// instance is one freshly built, unscaled benchmark problem. It is not safe
// for concurrent use; every run builds its own.
type instance struct {
	oracle exactOracle
	norm   solver.Norm
	x0     []float64
	gamma  float64
	// fixed is the exact fixed point when the problem knows it, else nil.
	fixed []float64
	// terms is the number of terms of a finite-sum oracle (0: not one).
	terms int
	// sigma is the problem's own ℓ2 noise scale when it reports one (0:
	// none).
	sigma float64
}

// problemSpec describes a problem of the stochastic section.
type problemSpec struct {
	name, summary string
	// affine marks problems whose exact operator is affine, T(x) = Ax + b,
	// for which the calibration computes ‖A‖ in the problem's norm.
	affine bool
	build  func(seed uint64) (*instance, error)
}

// problemSpecs returns the problems of the stochastic section.
func problemSpecs() []problemSpec {
	return []problemSpec{
		suite("ℓ∞ Bellman operator of a random MDP (4 states × 2 actions, γ = 0.9), generative model",
			false, problems.Config{Name: "mdp", Dim: 4, Actions: 2, Gamma: 0.9}),
		suite("affine map in ℓ2 (d = 16, γ = 0.9) with Student-t noise, 2.5 degrees of freedom (heavy tails)",
			true, problems.Config{Name: "affine-t", Dim: 16, Gamma: 0.9}),
		suite("average of 64 samplewise-nonexpansive maps x ↦ S_i x + b_i in ℓ2, S_i signed permutations (d = 16, γ = 1)",
			true, problems.Config{Name: "averaged", Dim: 16, Gamma: 1, Terms: 64}),
		suite("nonexpansive T(x) = Rx + b in ℓ2, R the signed cyclic shift (an isometry), Gaussian noise (d = 16, γ = 1)",
			true, problems.Config{Name: "shift", Dim: 16, Gamma: 1}),
		{
			name:    "deq-experts",
			summary: "layers.Experts DEQ cell, random untrained weights: 4 examples × 16 hidden, 16 inputs, 256 experts, γ̄ = 0.9, batched ℓ2",
			build:   expertsInstance,
		},
		suite("ℓ∞ Bellman operator of a random MDP (50 states × 4 actions = 200 state–action pairs, γ = 0.95), generative model",
			false, problems.Config{Name: "mdp-large"}),
	}
}

// ProblemNames returns the names of the problems of the stochastic section,
// in the order the report lists them.
func ProblemNames() []string {
	var out []string
	for _, sp := range problemSpecs() {
		out = append(out, sp.name)
	}
	return out
}

// suite returns the spec of a problem of package problems, named as c
// is: its builder is c with the seed it is given. The builder is called from
// several goroutines, so it sets the seed on its own copy of c.
func suite(summary string, affine bool, c problems.Config) problemSpec {
	build := func(seed uint64) (*instance, error) {
		cs := c
		cs.Seed = seed
		p, err := problems.New(cs)
		if err != nil {
			return nil, err
		}
		return &instance{oracle: p.Oracle, norm: p.Norm, x0: p.X0, gamma: p.Gamma, fixed: p.FixedPoint, sigma: p.Sigma}, nil
	}
	return problemSpec{name: c.Name, summary: summary, affine: affine, build: build}
}

// Shape of the DEQ cell problem.
const (
	deqExamples = 4
	deqHidden   = 16
	deqInput    = 16
	deqExperts  = 256
)

// expertsInstance builds the DEQ cell problem: an Experts cell with random
// weights from seed and a random N(0, 1) input batch, solved for its hidden
// state in the batched ℓ2 norm (maximum over examples).
func expertsInstance(seed uint64) (*instance, error) {
	cell, err := layers.NewExperts(layers.ExpertsConfig{Hidden: deqHidden, Input: deqInput, Experts: deqExperts, Seed: seed})
	if err != nil {
		return nil, err
	}
	ev, err := cell.Evaluator(deqExamples)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x6d6978))
	x := make([]float64, deqExamples*cell.Shape().InputLen())
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	if err := ev.SetInput(x); err != nil {
		return nil, err
	}
	ex, err := solver.NewLP(2, cell.Shape().HiddenLen())
	if err != nil {
		return nil, err
	}
	norm, err := solver.NewBatched(ex, deqExamples)
	if err != nil {
		return nil, err
	}
	return &instance{oracle: ev, norm: norm, x0: make([]float64, ev.Len()), gamma: cell.Gamma(), terms: ev.Terms()}, nil
}

// scaledOracle is the change of units x ↦ c·x of an oracle:
// τ_c(x; ξ) = c·τ(x/c; ξ). It has the fixed point c·x*, the same Lipschitz
// constants and oracle model, and noise scaled by c.
type scaledOracle struct {
	o   exactOracle
	c   float64
	buf []float64
}

var _ exactOracle = (*scaledOracle)(nil)

func newScaled(o exactOracle, c float64) *scaledOracle {
	return &scaledOracle{o: o, c: c, buf: make([]float64, o.Len())}
}

func (s *scaledOracle) Len() int            { return s.o.Len() }
func (s *scaledOracle) Model() solver.Model { return s.o.Model() }

func (s *scaledOracle) unscale(x []float64) {
	inv := 1 / s.c
	for i, v := range x {
		s.buf[i] = v * inv
	}
}

func (s *scaledOracle) Eval(dst, x []float64, smp solver.Sample) (int, error) {
	s.unscale(x)
	n, err := s.o.Eval(dst, s.buf, smp)
	for i := range dst {
		dst[i] *= s.c
	}
	return n, err
}

func (s *scaledOracle) EvalExact(dst, x []float64) error {
	s.unscale(x)
	err := s.o.EvalExact(dst, s.buf)
	for i := range dst {
		dst[i] *= s.c
	}
	return err
}

// calibration holds what the stochastic section measures once per problem.
type calibration struct {
	spec problemSpec
	// seed builds the instance.
	seed uint64
	// len is the dimension, model the oracle model, norm the norm's name.
	len   int
	model solver.Model
	norm  string
	gamma float64
	terms int
	// kappa is the norm's smoothness constant κ.
	kappa float64
	// xstar is the unscaled fixed point (known or computed).
	xstar []float64
	// xstarKnown reports whether the problem knew it.
	xstarKnown bool
	// sigmaNative is σ̂ = (mean ‖τ(x*; ξ) − T(x*)‖²)^{1/2} over unit samples,
	// unscaled, in the problem's norm; sigmaL2 the problem's own ℓ2 scale.
	sigmaNative, sigmaL2 float64
	// scale is c = NoiseLevel/(σ̂√κ).
	scale float64
	// x0 is the scaled start point c·x* + u, with u a random direction of
	// norm StartDistance.
	x0 []float64
	// r0 and dist0 are ‖T(x0) − x0‖ and ‖x0 − x*‖ after scaling.
	r0, dist0 float64
	// lipschitz is ‖A‖ of an affine T(x) = Ax + b in the problem's norm
	// (NaN when not computed).
	lipschitz float64
}

// sigma returns the scaled σ̂.
func (c *calibration) sigma() float64 { return c.scale * c.sigmaNative }

// floor returns 2σ²κ ln(1/δ)/ε² on the scaled problem.
func (c *calibration) floor(eps, delta float64) float64 {
	s := c.sigma()
	return 2 * s * s * c.kappa * math.Log(1/delta) / (eps * eps)
}

// build returns a fresh scaled instance; its x0 is the calibrated start
// point.
func (c *calibration) build() (*scaledOracle, *instance, error) {
	in, err := c.spec.build(c.seed)
	if err != nil {
		return nil, nil, err
	}
	in.x0 = append([]float64(nil), c.x0...)
	return newScaled(in.oracle, c.scale), in, nil
}

// calibrate builds spec's instance, finds its fixed point, estimates σ̂ from
// draws unit samples at x*, sets the scale so that σ̂√κ = level and draws a
// start point at distance dist from x* (after scaling).
func calibrate(spec problemSpec, seed uint64, draws int, level, dist float64) (*calibration, error) {
	in, err := spec.build(seed)
	if err != nil {
		return nil, fmt.Errorf("bench: problem %s: %w", spec.name, err)
	}
	c := &calibration{
		spec: spec, seed: seed, len: in.oracle.Len(), model: in.oracle.Model(), norm: in.norm.String(),
		gamma: in.gamma, terms: in.terms, kappa: in.norm.Kappa(), sigmaL2: in.sigma,
		xstar: in.fixed, xstarKnown: in.fixed != nil,
	}
	if c.xstar == nil {
		if c.xstar, err = picard(in); err != nil {
			return nil, fmt.Errorf("bench: problem %s: %w", spec.name, err)
		}
	}
	c.sigmaNative, err = estimateSigma(in, c.xstar, draws, seed)
	if err != nil {
		return nil, fmt.Errorf("bench: problem %s: %w", spec.name, err)
	}
	if !(c.sigmaNative > 0) {
		return nil, fmt.Errorf("bench: problem %s: estimated noise σ = %v, want a stochastic oracle", spec.name, c.sigmaNative)
	}
	c.scale = level / (c.sigmaNative * math.Sqrt(c.kappa))
	// x0 = c·x* + u in scaled units, ‖u‖ = dist.
	rng := rand.New(rand.NewPCG(seed, 0x7830))
	u := make([]float64, c.len)
	for i := range u {
		u[i] = rng.NormFloat64()
	}
	nu := in.norm.Norm(u)
	c.x0 = make([]float64, c.len)
	for i := range u {
		c.x0[i] = c.scale*c.xstar[i] + dist*u[i]/nu
	}
	o := newScaled(in.oracle, c.scale)
	tx, diff := make([]float64, c.len), make([]float64, c.len)
	if err := o.EvalExact(tx, c.x0); err != nil {
		return nil, err
	}
	for i := range diff {
		diff[i] = tx[i] - c.x0[i]
	}
	c.r0 = in.norm.Norm(diff)
	for i := range diff {
		diff[i] = c.x0[i] - c.scale*c.xstar[i]
	}
	c.dist0 = in.norm.Norm(diff)
	c.lipschitz = math.NaN()
	if spec.affine {
		if c.lipschitz, err = affineNorm(in); err != nil {
			return nil, fmt.Errorf("bench: problem %s: %w", spec.name, err)
		}
	}
	return c, nil
}

// affineNorm returns ‖A‖ for an affine exact operator T(x) = Ax + b, with
// the columns of A read off as T(e_i) − T(0): the spectral norm for ℓ2, the
// largest absolute row sum for ℓ∞, NaN for other norms.
func affineNorm(in *instance) (float64, error) {
	n := in.oracle.Len()
	t0, ti, e := make([]float64, n), make([]float64, n), make([]float64, n)
	if err := in.oracle.EvalExact(t0, e); err != nil {
		return 0, err
	}
	a := mat.NewDense(n, n, nil)
	for i := range n {
		e[i] = 1
		if err := in.oracle.EvalExact(ti, e); err != nil {
			return 0, err
		}
		e[i] = 0
		for r := range n {
			a.Set(r, i, ti[r]-t0[r])
		}
	}
	switch in.norm.String() {
	case "l2":
		var svd mat.SVD
		if !svd.Factorize(a, mat.SVDNone) {
			return 0, fmt.Errorf("SVD of the operator's matrix failed")
		}
		return svd.Values(nil)[0], nil
	case "linf":
		return mat.Norm(a, math.Inf(1)), nil
	}
	return math.NaN(), nil
}

// picard returns the fixed point of a contraction by Picard iteration on the
// exact operator, to a residual of 1e-13 relative to the point.
func picard(in *instance) ([]float64, error) {
	if !(in.gamma < 1) {
		return nil, fmt.Errorf("no known fixed point and γ = %v: cannot compute one by Picard iteration", in.gamma)
	}
	x := append([]float64(nil), in.x0...)
	tx := make([]float64, len(x))
	diff := make([]float64, len(x))
	for range 100000 {
		if err := in.oracle.EvalExact(tx, x); err != nil {
			return nil, err
		}
		for i := range diff {
			diff[i] = tx[i] - x[i]
		}
		x, tx = tx, x
		if in.norm.Norm(diff) <= 1e-13*(1+in.norm.Norm(x)) {
			return x, nil
		}
	}
	return nil, fmt.Errorf("Picard iteration did not reach a residual of 1e-13")
}

// estimateSigma returns (mean_i ‖τ(x*; ξ_i) − T(x*)‖²)^{1/2} over draws unit
// samples with seeds drawn from seed.
func estimateSigma(in *instance, xstar []float64, draws int, seed uint64) (float64, error) {
	n := len(xstar)
	t, tau, diff := make([]float64, n), make([]float64, n), make([]float64, n)
	if err := in.oracle.EvalExact(t, xstar); err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5167))
	sum := 0.0
	for range draws {
		if _, err := in.oracle.Eval(tau, xstar, solver.Sample{Seed: rng.Uint64(), Size: 1}); err != nil {
			return 0, err
		}
		for i := range diff {
			diff[i] = tau[i] - t[i]
		}
		d := in.norm.Norm(diff)
		sum += d * d
	}
	return math.Sqrt(sum / float64(draws)), nil
}
