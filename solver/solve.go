package solver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Problem is a fixed-point problem x = T(x): an oracle for T and the norm in
// which residuals are measured. Oracle.Len() must equal Norm.Len().
type Problem struct {
	Oracle Oracle
	Norm   Norm
}

// check returns an error naming the field at fault if p has a nil oracle or
// norm, or if their dimensions differ or are not positive. Solve and the
// Validate methods of this package call it, so that a Validate called on its
// own reports a malformed Problem instead of panicking.
func (p Problem) check() error {
	switch {
	case p.Oracle == nil:
		return errors.New("solver: Problem.Oracle is nil")
	case p.Norm == nil:
		return errors.New("solver: Problem.Norm is nil")
	case p.Norm.Len() < 1:
		return fmt.Errorf("solver: Problem.Norm.Len() = %d must be positive", p.Norm.Len())
	case p.Oracle.Len() != p.Norm.Len():
		return fmt.Errorf("solver: Problem.Oracle.Len() = %d does not match Problem.Norm.Len() = %d", p.Oracle.Len(), p.Norm.Len())
	case !p.Oracle.Model().isOracleModel():
		return fmt.Errorf("solver: Problem.Oracle.Model() = %v is not an oracle model", p.Oracle.Model())
	}
	return nil
}

// Method is a fixed-point method. Run drives the iteration through the Env,
// which evaluates the oracle, counts work, enforces the limits of Settings and
// keeps the returned point. Run returns the error of the Env call that told it
// to stop (an error for which StopStatus reports true), or any other error for
// a failure of its own.
//
// A Method value holds only settings; Solve may run it from several
// goroutines at once.
type Method interface {
	fmt.Stringer
	Run(e *Env) error
}

// Validator is implemented by methods that check their own settings against a
// problem before Solve starts them.
type Validator interface {
	Validate(p Problem) error
}

// stopError carries a Status out of a method.
type stopError struct {
	status Status
	cause  error
}

func (s *stopError) Error() string {
	if s.cause != nil {
		return fmt.Sprintf("solver: stopped (%v): %v", s.status, s.cause)
	}
	return fmt.Sprintf("solver: stopped (%v)", s.status)
}

func (s *stopError) Unwrap() error { return s.cause }

// StopStatus reports whether err asks a method to stop, and with which Status.
func StopStatus(err error) (Status, bool) {
	var s *stopError
	if errors.As(err, &s) {
		return s.status, true
	}
	return NotTerminated, false
}

// Env is a method's view of a running solve. Its methods are not safe for
// concurrent use.
type Env struct {
	ctx      context.Context
	oracle   Oracle
	norm     Norm
	settings Settings
	x0       []float64
	rng      *rand.Rand
	start    time.Time

	stats    Stats
	records  int
	best     []float64
	bestRes  float64
	keepLast bool
	tolAbs   float64
	certSize int
	scratch  []float64
	ws       *Workspace
	par      *parallel // ws.par, for the vector passes

	// The last exact evaluation T(exX) = exT (see rememberExact), which the
	// certificate reuses when the returned point is exX.
	exX, exT []float64
	exOK     bool

	own ownCert // a certificate the method paid for (OfferCertificate)
}

// Context returns the solve's context.
func (e *Env) Context() context.Context { return e.ctx }

// Oracle returns the problem's oracle.
func (e *Env) Oracle() Oracle { return e.oracle }

// Norm returns the problem's norm.
func (e *Env) Norm() Norm { return e.norm }

// Settings returns a copy of the solve's settings with defaults filled in.
func (e *Env) Settings() Settings { return e.settings }

// X0 returns the start point. Methods must not modify it.
func (e *Env) X0() []float64 { return e.x0 }

// Len returns the dimension of the problem.
func (e *Env) Len() int { return len(e.x0) }

// Seed returns a fresh seed for an oracle Sample, drawn from the stream
// seeded by Settings.Seed.
func (e *Env) Seed() uint64 { return e.rng.Uint64() }

// Rand returns the solve's random stream, for methods that make random
// choices of their own.
func (e *Env) Rand() *rand.Rand { return e.rng }

// Tol returns the absolute tolerance in force: Settings.Tol, scaled by the
// first recorded residual when Settings.Relative is set (NaN before it).
func (e *Env) Tol() float64 { return e.tolAbs }

// Stats returns the work counted so far.
func (e *Env) Stats() Stats { return e.stats }

// Eval evaluates the oracle at x with Sample s into dst, counting the call
// and its samples. It returns a stop error when the context is done, the time
// limit has passed, the sample budget would be exceeded by s.Size, or dst
// holds NaN or Inf (Status Diverged, wrapping ErrNonFinite), and the
// oracle's own error wrapped otherwise.
func (e *Env) Eval(dst, x []float64, s Sample) error {
	if err := e.checkLimits(int64(max(s.Size, 1))); err != nil {
		return err
	}
	exact := e.oracle.Model() == Deterministic
	if exact {
		e.beginExact(x)
	}
	n, err := e.oracle.Eval(dst, x, s)
	e.stats.Calls++
	e.stats.Samples += int64(n)
	if err != nil {
		return fmt.Errorf("solver: oracle evaluation %d: %w", e.stats.Calls, err)
	}
	var finite bool
	if exact {
		finite = e.endExact(dst)
	} else {
		finite = e.par.allFinite(dst)
	}
	if !finite {
		i := firstNonFinite(dst)
		return nonFiniteStop("oracle returned %v at coordinate %d of evaluation %d", dst[i], i, e.stats.Calls)
	}
	return nil
}

// beginExact starts remembering an exact evaluation at x: it copies x
// before the oracle may overwrite it (dst may alias x). Remembering costs
// two copies of a state per exact evaluation and saves the certificate's
// own evaluation whenever the method returns the last point it evaluated
// exactly (see Certificate.Calls).
func (e *Env) beginExact(x []float64) {
	e.exOK = false
	if e.settings.Certify.Skip {
		return
	}
	if e.exX == nil {
		e.exX, e.exT = e.ws.floats(len(x)), e.ws.floats(len(x))
	}
	e.par.copy(e.exX, x)
}

// endExact completes beginExact with T(x) = tx, which it checks for NaN
// and ±Inf in the same pass over tx: it reports whether tx is finite, and
// remembers it only then.
func (e *Env) endExact(tx []float64) bool {
	if e.settings.Certify.Skip {
		return e.par.allFinite(tx)
	}
	if !e.par.copyFinite(e.exT, tx) {
		return false
	}
	e.exOK = true
	return true
}

// lastExact returns T(x) when the last exact evaluation was at a point
// equal to x coordinate by coordinate, and nil otherwise. An exact
// evaluation is a function of its point (the Deterministic model; the exact
// average of a FiniteSum), so reusing it is the same as evaluating again.
// The slice is the Env's own record, which the caller may overwrite: it
// is called once, by the certificate, after the method has returned.
func (e *Env) lastExact(x []float64) []float64 {
	if !e.exOK || len(x) != len(e.exX) {
		return nil
	}
	for i, v := range x {
		if math.Float64bits(v) != math.Float64bits(e.exX[i]) {
			return nil
		}
	}
	e.exOK = false
	return e.exT
}

// CanDraw reports whether n more unit samples fit in the sample budget.
func (e *Env) CanDraw(n int64) bool {
	return e.settings.MaxSamples == 0 || e.stats.Samples+n <= e.settings.MaxSamples
}

func (e *Env) checkLimits(next int64) error {
	if err := e.ctx.Err(); err != nil {
		return &stopError{status: Canceled, cause: err}
	}
	if e.settings.MaxTime > 0 && time.Since(e.start) > e.settings.MaxTime {
		return &stopError{status: TimeLimit}
	}
	if !e.CanDraw(next) {
		return &stopError{status: SampleLimit}
	}
	return nil
}

// Stop returns the error that stops the method with Status s, for reasons
// the Env cannot see (such as Stagnated). cause may be nil.
func (e *Env) Stop(s Status, cause error) error { return &stopError{status: s, cause: cause} }

// keptWorkspace reports whether the solve's Workspace is the caller's
// (Settings.Workspace), which outlives the solve.
func (e *Env) keptWorkspace() bool { return e.settings.Workspace != nil }

// buffer returns a scratch vector of length n from the solve's Workspace,
// reused by the next solve through the same Workspace; its contents are
// unspecified, so the method writes every element before reading it.
func (e *Env) buffer(n int) []float64 { return e.ws.floats(n) }

// Dist returns ‖a − b‖ in the problem's norm without allocating.
func (e *Env) Dist(a, b []float64) float64 {
	e.par.subInto(e.scratch, a, b)
	return e.norm.Norm(e.scratch)
}

// SuggestCertSamples tells the certificate how many unit samples per call
// match the accuracy the method reached (for VR-GHAL: the bucket size of its
// last median-of-means). CertifySettings.Samples, when set, takes precedence.
func (e *Env) SuggestCertSamples(n int) { e.certSize = n }

// KeepLast makes the Env return the last recorded point instead of the one
// with the lowest recorded residual. Anytime methods whose guarantee is on
// their last iterate (VR-GHAL) call it before recording.
func (e *Env) KeepLast() { e.keepLast = true }

// Record records an iterate x with its residual ‖T(x) − x‖ (exact, or the
// method's estimate). The first call records the start point (iteration 0);
// each later call counts one iteration. It keeps x as the returned point when
// its residual is the lowest so far (or always, after KeepLast), appends to
// the trace, and returns a stop error when the tolerance is met, the
// iteration limit is reached, the residual is NaN (Diverged, wrapping
// ErrNonFinite) or has grown past DivergenceFactor times the best one or
// to +Inf (Diverged), or the Recorder fails.
// A PointRecorder receives x with the trace point.
//
// On a Deterministic oracle the residual is exact and meeting the tolerance
// stops with Success. On a stochastic oracle it is an estimate, and meeting
// the tolerance stops with ToleranceEstimated; Solve turns that into
// Success when the Certificate is rigorous and its Bound meets the
// tolerance. Methods with a rigorous bound of their own use RecordBound.
func (e *Env) Record(x []float64, residual float64) error {
	if e.oracle.Model() == Deterministic {
		return e.RecordBound(x, residual, residual)
	}
	return e.RecordBound(x, residual, math.Inf(1))
}

// RecordBound is Record for a method that may also know a rigorous upper
// bound on the residual of x (holding on the event of probability at least
// 1 − δ that its own guarantee describes). With a finite bound it stops
// with Success when bound meets the tolerance, and not before; with
// bound = +Inf (nothing known) it stops with ToleranceEstimated when
// residual, the estimate, does.
func (e *Env) RecordBound(x []float64, residual, bound float64) error {
	if e.records > 0 {
		e.stats.Iterations++
	}
	e.records++
	p := TracePoint{Iter: e.stats.Iterations, Calls: e.stats.Calls, Samples: e.stats.Samples, Residual: residual, Elapsed: time.Since(e.start)}
	if !e.settings.NoTrace {
		e.stats.Trace = append(e.stats.Trace, p)
	}
	if r := e.settings.Recorder; r != nil {
		var err error
		if pr, ok := r.(PointRecorder); ok {
			err = pr.RecordPoint(p, x)
		} else {
			err = r.Record(p)
		}
		if err != nil {
			return &stopError{status: Failure, cause: fmt.Errorf("recorder: %w", err)}
		}
	}
	if math.IsNaN(residual) || math.IsInf(residual, -1) {
		return nonFiniteStop("residual %v at iteration %d", residual, e.stats.Iterations)
	}
	if math.IsInf(residual, 1) {
		return &stopError{status: Diverged, cause: fmt.Errorf("residual overflows at iteration %d", e.stats.Iterations)}
	}
	if e.records == 1 && e.settings.Relative {
		e.tolAbs = e.settings.Tol * residual
	}
	switch {
	case e.keepLast || residual < e.bestRes:
		if e.best == nil {
			e.best = make([]float64, len(x))
		}
		e.par.copy(e.best, x)
		e.bestRes = residual
	case residual > e.settings.DivergenceFactor*e.bestRes:
		return &stopError{status: Diverged, cause: fmt.Errorf("residual %.3g exceeds %.3g times the best %.3g", residual, e.settings.DivergenceFactor, e.bestRes)}
	}
	if bound <= e.tolAbs {
		return &stopError{status: Success}
	}
	if math.IsInf(bound, 1) && residual <= e.tolAbs {
		return &stopError{status: ToleranceEstimated}
	}
	if e.stats.Iterations >= e.settings.MaxIter {
		return &stopError{status: IterationLimit}
	}
	return nil
}

// Solve finds a fixed point of p from x0 with method m; it does not modify
// x0. It validates its
// arguments, runs the method, and certifies the residual of the returned
// point (see Certificate). A nil settings means the defaults.
//
// Solve returns an error for invalid arguments and for oracle failures; in
// the latter case the Result still holds the best point found, with Status
// Failure. Reaching a limit is not an error: Result.Status says why the
// method stopped.
//
// Solve observes ctx and Settings.MaxTime throughout, the certificate
// included: the method stops at its next oracle call (Env.Eval) once
// either is done, and a stochastic certificate checks them before each
// of its oracle calls, which it splits into chunks (of 2¹⁶ unit samples,
// then doubling). MaxTime bounds the wall time of the whole solve. A solve
// stopped this way returns promptly with Status Canceled (ctx) or
// TimeLimit (MaxTime), a nil error, the best point recorded so far in
// Result.X (x0 if none) and only the certificate it can honestly give: the
// exact certificate of a Deterministic oracle (one more evaluation), or
// none (Result.Certificate nil). A certificate that the caller's ctx or
// MaxTime interrupts after a method that stopped for another reason is
// dropped too, leaving Result.Status as the method set it. No
// certificate ever claims more than the samples it drew. An oracle call
// in progress is not interrupted: Solve returns after it.
//
// Non-finite values are errors wrapping ErrNonFinite: a NaN or ±Inf in x0
// (with a nil Result), and one returned by the oracle or met in a residual
// estimate during the solve. In the second case the Result holds Status
// Diverged and the best finite point recorded (x0 when none was), with
// its residual, and the error is the one that stopped the method, naming
// the evaluation and coordinate. A residual that merely overflows to +Inf
// from finite evaluations is a divergence like any other (Status
// Diverged, no error). Whatever the status, a certificate whose
// evaluations are not finite is not reported: Result.Certificate is then
// nil and the error wraps ErrNonFinite.
func Solve(ctx context.Context, p Problem, x0 []float64, settings *Settings, m Method) (*Result, error) {
	switch {
	case ctx == nil:
		return nil, errors.New("solver: nil context")
	case m == nil:
		return nil, errors.New("solver: nil method")
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	if len(x0) != p.Norm.Len() {
		return nil, fmt.Errorf("solver: x0 has length %d, want Problem.Norm.Len() = %d", len(x0), p.Norm.Len())
	}
	if err := checkFinite("solver: x0", x0); err != nil {
		return nil, err
	}
	s, err := settings.withDefaults()
	if err != nil {
		return nil, err
	}
	if v, ok := m.(Validator); ok {
		if err := v.Validate(p); err != nil {
			return nil, err
		}
	}
	runCtx := ctx
	if s.MaxTime > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, s.MaxTime, ErrTimeLimit)
		defer cancel()
	}
	e := newEnv(runCtx, p, x0, s)
	defer e.par.stop()
	runErr := m.Run(e)
	res := &Result{Status: NotTerminated, Residual: e.bestRes, Tol: e.tolAbs}
	var failure error
	if st, ok := StopStatus(runErr); ok {
		res.Status = st
		if st == Canceled && ctx.Err() == nil && s.MaxTime > 0 {
			res.Status = TimeLimit
		}
		if errors.Is(runErr, ErrNonFinite) {
			failure = runErr
		}
	} else if runErr != nil {
		res.Status = Failure
		failure = runErr
	} else {
		res.Status = IterationLimit
	}
	if e.best == nil {
		res.X = append([]float64(nil), x0...)
	} else {
		res.X = e.best
	}
	res.Stats = e.stats
	res.Stats.Wall = time.Since(e.start)
	// A stopped solve still gets the exact certificate of a deterministic
	// oracle (one evaluation). Every other certificate draws under runCtx,
	// which the caller's cancellation and Settings.MaxTime end: none is
	// drawn once it is done, and one it interrupts is dropped.
	certCtx := runCtx
	if p.Oracle.Model() == Deterministic {
		certCtx = context.WithoutCancel(ctx)
	}
	if !s.Certify.Skip && certCtx.Err() == nil {
		cert, err := e.ownCertificate(res.X), error(nil)
		if cert == nil {
			cert, err = certify(certCtx, p, res, &s, e.certSize, e.lastExact)
		}
		if err != nil && certCtx.Err() != nil {
			cert, err = nil, nil
		}
		if err != nil {
			cert = nil
			if failure == nil {
				failure = fmt.Errorf("solver: certificate: %w", err)
			}
		}
		res.Certificate = cert
		if res.Status == ToleranceEstimated && cert != nil && cert.Rigorous() && cert.Bound <= e.tolAbs {
			res.Status = Success
		}
	}
	return res, failure
}

// newEnv returns the Env of a solve of p from x0 under settings s (defaults
// filled in), starting its clock.
func newEnv(ctx context.Context, p Problem, x0 []float64, s Settings) *Env {
	e := &Env{
		ctx:      ctx,
		oracle:   p.Oracle,
		norm:     p.Norm,
		settings: s,
		x0:       x0,
		rng:      rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15)),
		start:    time.Now(),
		bestRes:  math.Inf(1),
		tolAbs:   s.Tol,
		ws:       s.Workspace,
	}
	if e.ws == nil {
		e.ws = new(Workspace)
	}
	e.ws.reset()
	e.settings.Workers = workersFor(s.Workers, len(x0))
	e.par = &e.ws.par
	e.par.workers = e.settings.Workers
	e.scratch = e.ws.floats(len(x0))
	if s.Relative {
		e.tolAbs = math.NaN()
	}
	return e
}
