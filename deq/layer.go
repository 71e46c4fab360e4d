package deq

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// Layer is a deep equilibrium layer: it maps an input batch x to the fixed
// point z* = f(z*, x; θ) of a cell, found by a forward solver, and
// differentiates through z* with a backward mode.
//
// A Layer keeps per-batch-size state (the cell's evaluator, norms, a
// Lipschitz monitor, and a solver.Workspace that its forward and adjoint
// solves reuse, so that they allocate no vectors in steady state) for the
// last few batch sizes. It is not safe for concurrent use.
type Layer struct {
	cell    layers.Cell
	s       Settings
	batches mru.Cache[int, *batch]
	applied int // number of Apply calls, to name graph nodes
	// evaluation turns dropout off (SetEvaluation).
	evaluation bool
	// forks are Settings.Split forks of the cell, one per part of a
	// split batch; nil without a split.
	forks []layers.Cell
}

// batch is the state of a Layer for one batch size.
type batch struct {
	ev      layers.Evaluator
	norm    solver.Norm // forward norm (Batched)
	adjNorm solver.Norm
	proven  bool
	monitor *layers.LipschitzMonitor
	masked  *maskedOracle // the dropout layer of fwd, nil without dropout
	fwd     solver.Oracle // the forward oracle (possibly the monitor)
	// ref and refFwd are the float64 reference evaluator and the
	// second stage's oracle under Settings.CertifyFloat64 (nil
	// otherwise); refMasked is the dropout layer of refFwd.
	ref       layers.Evaluator
	refFwd    solver.Oracle
	refMasked *maskedOracle
	// work is the scratch memory of the batch's forward and adjoint
	// solves, which run one at a time (a Layer is not safe for concurrent
	// use), so that they allocate no vectors in steady state.
	work solver.Workspace
	// z0 holds the forward solves' starting point (solver.Solve does not
	// keep it).
	z0 []float64
	// parts are the states of the parts of a split batch (Settings.Split),
	// each on its own fork of the cell; nil for one solve.
	parts []part
}

// Solution is the result of one forward pass of a batch, and what Backward
// needs to differentiate through it.
type Solution struct {
	// Z is the fixed point z*, laid out as layers.Shape describes.
	Z []float64
	// X is a copy of the input.
	X []float64
	// Examples is the batch size.
	Examples int
	// Result is the forward solver's result: status, statistics and
	// residual certificate. Result.X is Z.
	Result *solver.Result
	// Sampled reports whether the forward solver saw the stochastic oracle.
	Sampled bool
	// Proven reports whether the cell proves its Lipschitz bound in the
	// forward norm.
	// With Settings.CertifyFloat64 it is layers.Referenced.ReferenceProven
	// when Result is the float64 stage's.
	Proven bool
	// States are the states of the forward trajectory collected for
	// fixed-point correction (Settings.CorrectionStates), oldest first; the
	// last is Z. Nil without collection. At most CorrectionStates of them:
	// fewer when the solve took fewer iterations.
	States []State
	// Dropout reports whether the solve applied a dropout mask
	// (Settings.Dropout, outside evaluation): Z is then the fixed point of
	// the masked map.
	Dropout bool
	// Lipschitz holds the empirical Lipschitz ratios of the forward solve,
	// with a warning if they exceeded the cell's bound; nil when the solve
	// was not monitored (see Settings.Monitor).
	Lipschitz *layers.LipschitzStats
	// TermEvals counts the term evaluations of the forward solve, its
	// certificate included: Result.Stats.Samples plus the certificate's
	// Samples. One term evaluation is one of the cell's Terms() terms
	// evaluated on the whole batch: an exact evaluation counts Terms(), a
	// minibatch its sample size, an evaluation of a deterministic cell 1.
	TermEvals int64
	// Float32 is the first stage's result under Settings.CertifyFloat64:
	// the solve of the cell's float32 map, whose point the float64 stage
	// (Result) started from; it has no Certificate (the float64 stage
	// certifies). Its work is counted in Result.Stats and TermEvals as
	// well. Nil without CertifyFloat64, for a float64 cell (one stage), and
	// when the first
	// stage ended the solve (an error, or Status Canceled, TimeLimit,
	// Diverged or Failure: Result is then the float32 map's, and Proven is
	// the cell's own Proven).
	Float32 *solver.Result
	// Parts are the forward results of the parts of a split batch
	// (Settings.Split), in the order of their examples; nil for one
	// solve. Result (and Float32) merge them: the Status is the most
	// severe of theirs; the Residual, Tol, Stats.Iterations, Calls and
	// Samples are the largest of theirs (the parts evaluate concurrently,
	// so their k-th evaluations make one evaluation of the batch, and
	// TermEvals counts the same way); Stats.Wall is the time the parts
	// took together; and the Certificate bounds the batch's residual by
	// the largest of their bounds, with the sum of their failure
	// probabilities (a union bound).
	Parts []*solver.Result

	mask dropMask // the dropout mask, nil without one
}

// BackwardStats describe one backward pass.
type BackwardStats struct {
	// Mode is the backward mode used.
	Mode Backward
	// Adjoint is the adjoint solve's result (Implicit only): its residual
	// certificate bounds ‖J_f(z*)ᵀg + ∂L/∂z* − g‖ in Settings.AdjointNorm.
	// For a split batch it merges AdjointParts as Solution.Result merges
	// Solution.Parts.
	Adjoint *solver.Result
	// AdjointParts are the adjoint results of the parts of a split batch
	// (Settings.Split, Implicit only), in order; nil for one solve.
	AdjointParts []*solver.Result
	// VJPs counts the full vector–Jacobian products (with parameter
	// gradients) computed.
	VJPs int
	// TermEvals counts the term evaluations of the backward pass, as
	// Solution.TermEvals does for the forward: the adjoint solve's
	// Stats.Samples and its certificate's Samples (an exact VJP counts
	// Terms(), a sampled VJP its sample size), Phantom's exact evaluations
	// of the cell (Terms() each), and Terms() for each of the VJPs
	// (CorrectionBackward's included).
	TermEvals int64
}

// termEvals returns the term evaluations of a solve: its own and its
// certificate's.
func termEvals(r *solver.Result) int64 {
	if r == nil {
		return 0
	}
	n := r.Stats.Samples
	if r.Certificate != nil && !r.Certificate.Own { // an own certificate's are in Stats
		n += r.Certificate.Samples
	}
	return n
}

// New returns a Layer for cell. A nil s means the default Settings.
//
// A forward or adjoint method that takes a contraction constant
// (solver.GHAL, solver.VRGHAL and solver.GrowingBatch, whose Gamma is a
// Lipschitz bound γ̄ of the map they solve) is checked against the cell's
// bound cell.Gamma() when the cell proves it in the solve's norm
// (layers.Cell.Proven): a Gamma below it is refused, since the method's
// schedule (and VR-GHAL's guarantee) would rest on a contraction the cell
// does not prove, and a zero Gamma is set to cell.Gamma() (see
// Settings.Forward and Settings.Adjoint for the exceptions). Settings
// returns the methods as the Layer uses them.
func New(cell layers.Cell, s *Settings) (*Layer, error) {
	if cell == nil {
		return nil, errors.New("deq: New: nil cell")
	}
	c, err := s.withDefaults(cell.Shape())
	if err != nil {
		return nil, err
	}
	if _, ok := cell.(layers.Referenced); c.CertifyFloat64 && !ok {
		return nil, fmt.Errorf("deq: Settings.CertifyFloat64: the cell %T does not evaluate a float64 reference map (layers.Referenced)", cell)
	}
	if err := c.checkContractions(cell); err != nil {
		return nil, err
	}
	l := &Layer{cell: cell, s: c, batches: mru.Cache[int, *batch]{Max: layers.MaxCachedBatches}}
	if c.Split > 1 {
		f, ok := cell.(layers.Forker)
		if !ok {
			return nil, fmt.Errorf("deq: Settings.Split = %d: the cell %T cannot be forked (layers.Forker)", c.Split, cell)
		}
		l.forks = make([]layers.Cell, c.Split)
		for i := range l.forks {
			l.forks[i] = f.Fork()
		}
	}
	return l, nil
}

// Cell returns the layer's cell.
func (l *Layer) Cell() layers.Cell { return l.cell }

// Params returns the cell's parameters.
func (l *Layer) Params() []*layers.Param { return l.cell.Params() }

// Settings returns the layer's settings with defaults filled in (the
// norms are clones of the layer's own).
func (l *Layer) Settings() Settings {
	s := l.s
	s.Norm, s.AdjointNorm = s.Norm.Clone(), s.AdjointNorm.Clone()
	return s
}

// SetSeeds sets the seeds of the solves that follow:
// Settings.ForwardSettings.Seed and Settings.AdjointSettings.Seed. A
// training loop calls it before every batch so that each batch's solver
// draws (minibatches and certificate samples) are fresh, and reproducible
// from the batch's position in the run.
func (l *Layer) SetSeeds(forward, adjoint uint64) {
	l.s.ForwardSettings.Seed = forward
	l.s.AdjointSettings.Seed = adjoint
}

// batch returns the state for n examples, building it on first use.
func (l *Layer) batch(n int) (*batch, error) {
	return l.batches.Get(n, func() (*batch, error) { return l.newBatch(n) })
}

// newBatch builds the state for n examples, and for the parts of a split
// batch.
func (l *Layer) newBatch(n int) (*batch, error) {
	b, err := l.newBatchOf(l.cell, n)
	if err != nil || len(l.forks) < 2 || n < 2 {
		return b, err
	}
	b.parts = make([]part, min(len(l.forks), n))
	lo := 0
	for i := range b.parts {
		p := &b.parts[i]
		p.lo = lo
		p.n = n / len(b.parts)
		if i < n%len(b.parts) {
			p.n++
		}
		lo += p.n
		if p.b, err = l.newBatchOf(l.forks[i], p.n); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// newBatchOf builds the state for n examples on cell (the layer's cell or
// one of its forks).
func (l *Layer) newBatchOf(cell layers.Cell, n int) (*batch, error) {
	ev, err := cell.Evaluator(n)
	if err != nil {
		return nil, err
	}
	b := &batch{ev: ev}
	if b.norm, err = solver.NewBatched(l.s.Norm.Clone(), n); err != nil {
		return nil, err
	}
	if b.adjNorm, err = solver.NewBatched(l.s.AdjointNorm.Clone(), n); err != nil {
		return nil, err
	}
	b.proven = l.s.forwardProven(l.cell, b.norm)
	b.fwd = chooseOracle(l.s.ForwardOracle, l.s.Forward, ev, layers.ExactOracle(ev), b.norm)
	if l.s.CertifyFloat64 {
		r, ok := cell.(layers.Referenced)
		if !ok {
			return nil, fmt.Errorf("deq: Settings.CertifyFloat64: a fork of the cell is a %T, which does not evaluate a float64 reference map (layers.Referenced)", cell)
		}
		ref, err := r.ReferenceEvaluator(n)
		if err != nil {
			return nil, err
		}
		if ref != ev { // a Float64 cell's reference is its own map: one stage
			b.ref = ref
			b.refFwd = chooseOracle(l.s.ForwardOracle, l.s.Forward, ref, layers.ExactOracle(ref), b.norm)
		}
	}
	gamma := l.cell.Gamma()
	if l.s.Dropout > 0 {
		b.masked = &maskedOracle{o: b.fwd}
		b.fwd = b.masked
		if b.refFwd != nil {
			b.refMasked = &maskedOracle{o: b.refFwd}
			b.refFwd = b.refMasked
		}
		gamma /= 1 - l.s.Dropout
	}
	if l.s.Monitor == MonitorAlways || (l.s.Monitor == MonitorUnproven && !b.proven) {
		if b.monitor, err = layers.NewLipschitzMonitor(b.fwd, b.norm, gamma); err != nil {
			return nil, err
		}
		b.fwd = b.monitor
		if fs, ok := b.monitor.Wrapped().(solver.FiniteSum); ok {
			b.fwd = finiteSumMonitor{b.monitor, fs.Terms()}
		}
	}
	return b, nil
}

// finiteSumMonitor is a Lipschitz monitor of a finite-sum oracle that still
// declares the finite sum, so that a monitored forward solve keeps its exact
// certificate (the monitor's EvalExact is the wrapped oracle's).
type finiteSumMonitor struct {
	*layers.LipschitzMonitor
	terms int
}

var _ solver.FiniteSum = finiteSumMonitor{}

// Terms implements solver.FiniteSum.
func (m finiteSumMonitor) Terms() int { return m.terms }

// chooseOracle returns the oracle a method sees under mode.
func chooseOracle(mode OracleMode, m solver.Method, sampled, exact solver.Oracle, norm solver.Norm) solver.Oracle {
	if sampled.Model() == solver.Deterministic {
		return sampled
	}
	switch mode {
	case Exact:
		return exact
	case Sampled:
		return sampled
	}
	if v, ok := m.(solver.Validator); ok && v.Validate(solver.Problem{Oracle: sampled, Norm: norm}) == nil {
		return sampled
	}
	return exact
}

// examples returns the batch size of an input of length nx.
func (l *Layer) examples(nx int) (int, error) {
	d := l.cell.Shape().InputLen()
	if nx == 0 || nx%d != 0 {
		return 0, fmt.Errorf("deq: input length %d is not a positive multiple of the cell's input length %d", nx, d)
	}
	return nx / d, nil
}

// Forward solves z* = f(z*, x) for a batch x (length a multiple of the
// cell's Shape().InputLen()) from z = 0, or, for a cell whose evaluator is
// a layers.Injector (MeanField, Experts), from its injection xU + b: the
// point every forward solver, sampled or exact, then starts from, and the
// fixed point of the cell's average being zero. A solve that stops short of its
// tolerance is not an error: Solution.Result.Status says why it stopped.
// Forward returns an error for invalid input and for failures of the
// solver or the cell; the Solution is then nil unless the solver returned a
// result.
//
// Non-finite values are errors wrapping solver.ErrNonFinite: a NaN or ±Inf
// in x, naming the coordinate and its example (with a nil Solution); a
// non-finite injection of the cell (nil Solution); and a cell that returns
// a NaN or ±Inf during the solve, in which case the Solution holds the
// solver's Result with Status Diverged and the last finite point it
// recorded (see solver.Solve), and its Certificate, when not nil, a finite
// bound.
func (l *Layer) Forward(ctx context.Context, x []float64) (*Solution, error) {
	n, err := l.examples(len(x))
	if err != nil {
		return nil, err
	}
	if err := checkFinite("Forward: x", x, n); err != nil {
		return nil, err
	}
	b, err := l.batch(n)
	if err != nil {
		return nil, err
	}
	var mask dropMask
	if b.masked != nil && !l.evaluation {
		mask = make(dropMask, b.ev.Len())
		mask.draw(l.s.Dropout, l.s.ForwardSettings.Seed)
	}
	if b.parts != nil {
		return l.forwardSplit(ctx, b, x, mask)
	}
	z0, err := l.start(b, x, n, mask)
	if err != nil {
		return nil, err
	}
	return l.solve(ctx, b, slices.Clone(x), z0, n, mask, l.s.ForwardSettings)
}

// start prepares b's forward solve of the n examples x with dropout mask
// mask (nil: none): it sets the evaluators' input, resets the monitor,
// sets the mask and returns the starting point.
func (l *Layer) start(b *batch, x []float64, n int, mask dropMask) ([]float64, error) {
	if err := b.ev.SetInput(x); err != nil {
		return nil, err
	}
	if b.ref != nil {
		if err := b.ref.SetInput(x); err != nil {
			return nil, err
		}
	}
	if b.monitor != nil {
		b.monitor.Reset()
	}
	if b.masked != nil {
		b.masked.mask = mask
		if b.refMasked != nil {
			b.refMasked.mask = mask
		}
	}
	if len(b.z0) != b.ev.Len() {
		b.z0 = make([]float64, b.ev.Len())
	}
	z0 := b.z0
	clear(z0)
	if inj, ok := b.ev.(layers.Injector); ok {
		// A cell with an injection outside its average (MeanField,
		// Experts) starts every solver, sampled or exact, there.
		if err := inj.Injection(z0); err != nil {
			return nil, err
		}
		if err := checkFinite("Forward: the cell's injection", z0, n); err != nil {
			return nil, err
		}
	}
	return z0, nil
}

// solve runs b's forward solve from z0, after start, with settings fs,
// and returns its Solution for the n examples x, which keeps x (the
// caller passes a copy of the user's input).
func (l *Layer) solve(ctx context.Context, b *batch, x, z0 []float64, n int, mask dropMask, fs solver.Settings) (*Solution, error) {
	fs.Workspace = &b.work
	var traj *trajectory
	if l.s.CorrectionStates > 0 {
		traj = newTrajectory(l.s.CorrectionStates, fs.Recorder)
		fs.Recorder = traj
	}
	first32 := fs
	if b.refFwd != nil {
		// The float64 stage certifies; the float32 map's certificate
		// would be work without a use.
		first32.Certify.Skip = true
	}
	res, err := solver.Solve(ctx, solver.Problem{Oracle: b.fwd, Norm: b.norm}, z0, &first32, l.s.Forward)
	if res == nil {
		return nil, fmt.Errorf("deq: forward solve: %w", err)
	}
	var first *solver.Result
	proven := b.proven
	if b.refFwd != nil {
		if err == nil && finishes(res.Status) {
			first = res
			res, err = l.float64Stage(ctx, b, first, fs)
			if res == nil {
				return nil, fmt.Errorf("deq: forward solve, float64 stage: %w", err)
			}
		} else {
			proven = l.cell.Proven(b.norm) // the result is the float32 map's
		}
	}
	if traj != nil && traj.seen == 0 && err == nil {
		return nil, fmt.Errorf("deq: Settings.CorrectionStates = %d: the forward method %v: %w", l.s.CorrectionStates, l.s.Forward, ErrNoIterates)
	}
	sol := &Solution{
		Z:         res.X,
		X:         x,
		Examples:  n,
		Result:    res,
		Sampled:   b.fwd.Model() != solver.Deterministic,
		Proven:    proven,
		Dropout:   mask != nil,
		mask:      mask,
		TermEvals: termEvals(res),
		Float32:   first,
	}

	if traj != nil && traj.seen > 0 {
		sol.States = traj.collected(res.X)
	}
	if b.monitor != nil {
		st := b.monitor.Stats()
		sol.Lipschitz = &st
	}
	if err != nil {
		return sol, fmt.Errorf("deq: forward solve: %w", err)
	}
	return sol, nil
}

// Backward differentiates a loss L through the fixed point of sol: given
// gz = ∂L/∂z* it writes ∂L/∂x into dx (which may be nil) and adds ∂L/∂θ to
// the gradients of the cell's parameters (layers.Param.GradData), according
// to the layer's backward mode. Memory does not grow with the number of
// solver iterations: no graph is unrolled over the forward solve. An
// adjoint solve that stops short of its tolerance is not an error: its
// Result in BackwardStats says why it stopped, and the gradient is computed
// from the point it returned.
//
// Non-finite values are errors wrapping solver.ErrNonFinite: a NaN or ±Inf
// in gz or in sol's Z or X, naming the coordinate (with nil
// BackwardStats); a cell that returns one during the adjoint solve
// (BackwardStats.Adjoint then has Status Diverged, see solver.Solve) or
// during Phantom's steps. No gradient is written then.
func (l *Layer) Backward(ctx context.Context, sol *Solution, gz, dx []float64) (*BackwardStats, error) {
	b, err := l.checkSolution("Backward", sol, stateArg("gz", gz, false), inputArg("dx", dx))
	if err != nil {
		return nil, err
	}
	if err := checkFinite("Backward: gz", gz, sol.Examples); err != nil {
		return nil, err
	}
	st := &BackwardStats{Mode: l.s.Backward}
	terms := int64(b.ev.Terms())
	defer func() { st.TermEvals += int64(st.VJPs) * terms }()
	if b.parts != nil {
		return st, l.backwardSplit(ctx, b, sol, gz, dx, st)
	}
	if err := b.ev.SetInput(sol.X); err != nil {
		return nil, err
	}
	if l.s.Backward != Implicit {
		return st, l.direct(b, sol, gz, dx, st)
	}
	res, err := l.adjoint(ctx, b, sol, gz, l.s.AdjointSettings)
	st.Adjoint = res
	st.TermEvals = termEvals(res)
	if err != nil {
		return st, err
	}
	return st, l.adjointVJP(b, sol, res.X, dx, st)
}

// direct runs the backward modes without an adjoint solve (JacobianFree
// and Phantom) on b, whose evaluator holds sol's input.
func (l *Layer) direct(b *batch, sol *Solution, gz, dx []float64, st *BackwardStats) error {
	if l.s.Backward == Phantom {
		return l.phantom(b, sol, gz, dx, st)
	}
	st.VJPs++
	g := slices.Clone(gz)
	sol.mask.apply(g)
	return b.ev.VJP(nil, dx, sol.Z, g)
}

// adjoint solves g = J_f(z*)ᵀ(m ⊙ g) + gz on b, whose evaluator holds
// sol's input, with settings as.
func (l *Layer) adjoint(ctx context.Context, b *batch, sol *Solution, gz []float64, as solver.Settings) (*solver.Result, error) {
	adj := &adjointOracle{ev: b.ev, z: sol.Z, rhs: gz, mask: sol.mask}
	exact := &adjointOracle{ev: b.ev, z: sol.Z, rhs: gz, mask: sol.mask, exact: true}
	o := chooseOracle(l.s.AdjointOracle, l.s.Adjoint, adj, exact, b.adjNorm)
	as.Workspace = &b.work
	res, err := solver.Solve(ctx, solver.Problem{Oracle: o, Norm: b.adjNorm}, gz, &as, l.s.Adjoint)
	if err != nil {
		return res, fmt.Errorf("deq: adjoint solve: %w", err)
	}
	return res, nil
}

// adjointVJP adds the parameter gradients (∂f/∂θ)ᵀ(m ⊙ g) at sol's point
// and writes (∂f/∂x)ᵀ(m ⊙ g) into dx, for the adjoint solution g.
func (l *Layer) adjointVJP(b *batch, sol *Solution, g, dx []float64, st *BackwardStats) error {
	st.VJPs++
	if sol.mask != nil {
		g = slices.Clone(g)
		sol.mask.apply(g)
	}
	return b.ev.VJP(nil, dx, sol.Z, g)
}

// phantom backpropagates through k damped steps from z*.
func (l *Layer) phantom(b *batch, sol *Solution, gz, dx []float64, st *BackwardStats) error {
	k, lam := l.s.PhantomSteps, l.s.PhantomDamping
	n := len(sol.Z)
	hs := make([][]float64, k)
	hs[0] = sol.Z
	f := make([]float64, n)
	for t := 1; t < k; t++ {
		if err := b.ev.EvalExact(f, hs[t-1]); err != nil {
			return err
		}
		st.TermEvals += int64(b.ev.Terms())
		if !numeric.AllFinite(f) {
			return checkFinite(fmt.Sprintf("Backward: phantom step %d: f", t), f, sol.Examples)
		}
		sol.mask.apply(f)
		h := make([]float64, n)
		for i := range h {
			h[i] = (1-lam)*hs[t-1][i] + lam*f[i]
		}
		hs[t] = h
	}
	g := slices.Clone(gz)
	lg := make([]float64, n)
	dz := make([]float64, n)
	var dxt []float64
	if dx != nil {
		clear(dx)
		dxt = make([]float64, len(dx))
	}
	for t := k - 1; t >= 0; t-- {
		for i := range lg {
			lg[i] = lam * g[i]
		}
		sol.mask.apply(lg)
		if err := b.ev.VJP(dz, dxt, hs[t], lg); err != nil {
			return err
		}
		st.VJPs++
		for i := range g {
			g[i] = (1-lam)*g[i] + dz[i]
		}
		for i := range dxt {
			dx[i] += dxt[i]
		}
	}
	return nil
}

// adjointOracle is g ↦ (∂τ/∂z)(z*)ᵀ(m ⊙ g) + rhs, with τ the cell's
// minibatch oracle (or its exact operator) and m the dropout mask (nil:
// none), the adjoint of the masked map m ⊙ τ.
//
// It declares the finite sum of the cell: the adjoint operator is the
// average of the VJPs of the cell's Terms() terms, and EvalExact is the
// exact VJP, so that every adjoint solve, sampled or not, gets an exact
// certificate (solver.RuleFiniteSum, or solver.RuleExact for the exact
// operator), counted as Terms() unit samples. A sampled evaluation counts
// the terms it drew.
type adjointOracle struct {
	ev    layers.Evaluator
	z     []float64
	rhs   []float64
	mask  dropMask
	exact bool
	mg    []float64 // scratch for m ⊙ g
}

var (
	_ solver.Oracle    = (*adjointOracle)(nil)
	_ solver.Exact     = (*adjointOracle)(nil)
	_ solver.FiniteSum = (*adjointOracle)(nil)
)

// Terms implements solver.FiniteSum: the number of the cell's terms.
func (a *adjointOracle) Terms() int { return a.ev.Terms() }

// Len implements solver.Oracle.
func (a *adjointOracle) Len() int { return a.ev.Len() }

// Model implements solver.Oracle: Deterministic for the exact operator,
// the cell's model otherwise.
func (a *adjointOracle) Model() solver.Model {
	if a.exact {
		return solver.Deterministic
	}
	return a.ev.Model()
}

// Eval implements solver.Oracle with the VJPs of the terms s draws (all of
// them for the exact operator).
func (a *adjointOracle) Eval(dst, g []float64, s solver.Sample) (int, error) {
	if a.exact {
		s = solver.Sample{Size: a.ev.Terms()}
	}
	if a.mask != nil {
		a.mg = append(a.mg[:0], g...)
		a.mask.apply(a.mg)
		g = a.mg
	}
	k, err := a.ev.VJPHidden(dst, a.z, g, s)
	if err != nil {
		return k, err
	}
	for i, v := range a.rhs {
		dst[i] += v
	}
	return k, nil
}

// EvalExact implements solver.FiniteSum with the exact VJP.
func (a *adjointOracle) EvalExact(dst, g []float64) error {
	_, err := a.Eval(dst, g, solver.Sample{Size: a.ev.Terms()})
	return err
}
