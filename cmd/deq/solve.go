package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/solver/problems"
)

// solveFlags are the flags of `deq solve`.
type solveFlags struct {
	list       bool
	problem    string
	method     solver.MethodSpec
	norm       normFlag
	dim        int
	gamma      float64
	noise      float64
	eps        float64
	settings   solver.MethodSettings // --delta, --sample-scale
	seed       uint64
	maxSamples int64
	maxIter    int
	timeout    time.Duration
	json       bool
}

func newSolveCmd() *cobra.Command {
	var f solveFlags
	cmd := &cobra.Command{
		Use:   "solve --problem P --solver S [flags]",
		Short: "Solve a fixed-point problem of the suite and report its true residual",
		Long: `Solve builds a problem of the suite (package solver/problems), runs a solver
on it and reports the true residual ‖T(x̂) − x̂‖ from the exact operator, the
distance to the exact fixed point and the solver's residual certificate.
The certificate says what it guarantees, under which declaration of the
problem's oracle: "≤ B (exact)" for exact operators and finite sums,
"≤ B with probability ≥ 1 − δ (rule …)" for the rigorous stochastic rules
(bounded-noise for the MDP's almost-sure noise bound, variance-mom or, in
l2 and schatten:2 where it is cheaper, variance-truncated for a declared
noise variance), and "≈ B (estimate, no guarantee)" otherwise.
Deterministic solvers run on the exact operator, stochastic ones on the
problem's stochastic oracle. --seed seeds both the problem and the solver.
A run that stops on a limit (--max-iter, --max-samples, --timeout) still
succeeds (exit status 0): its status says why it stopped. --timeout bounds
the whole solve, the certificate included: a solve that reaches it reports
its best point so far, with the exact certificate of a deterministic solver
and none for a stochastic one. An interrupted run (SIGINT, SIGTERM) stops
as promptly, prints the report of its best point so far (status Canceled)
and fails with one line and exit status 130. The same flags and --seed give the same
report, apart from the wall-clock fields wall_seconds and solve_seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.list {
				return printList(cmd.OutOrStdout())
			}
			job, err := f.prepare()
			if err != nil {
				return err
			}
			return job.report(cmd.Context(), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.list, "list", false, "list the problems, solvers and norms, and exit")
	fl.StringVar(&f.problem, "problem", "", "problem of the suite (see --list)")
	fl.IntVar(&f.dim, "dim", 0, "problem size: dimension, matrix side or number of states (0: the problem's default)")
	fl.Float64Var(&f.gamma, "gamma", 0, "Lipschitz constant γ of T in (0, 1] (0: the problem's default)")
	fl.Float64Var(&f.noise, "noise", 0, "noise level σ > 0 (0: the problem's default)")
	fl.Float64Var(&f.eps, "eps", 1e-2, "residual target ε > 0: status Success means a residual proven ≤ ε (ToleranceEstimated: only estimated)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the problem and of the solver")
	fl.Int64Var(&f.maxSamples, "max-samples", 0, "budget of unit samples, the certificate's excluded (0: none)")
	fl.IntVar(&f.maxIter, "max-iter", 0, "iteration limit (0: the solver package default)")
	fl.DurationVar(&f.timeout, "timeout", 5*time.Minute, "wall-time limit of the solve (0: none)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of a summary")
	f.bindMethod(fl)
	return cmd
}

// configFlag returns the flag that sets a problems.Config field, or "" for
// fields the command does not expose.
func configFlag(field string) string {
	switch field {
	case "Name":
		return "--problem"
	case "Dim":
		return "--dim"
	case "Norm":
		return "--norm"
	case "Gamma":
		return "--gamma"
	case "Noise":
		return "--noise"
	}
	return ""
}

// configError returns the usage error naming the flag of a
// *problems.ConfigError, and a runtime error for any other error.
func configError(err error) error {
	var ce *problems.ConfigError
	if errors.As(err, &ce) && configFlag(ce.Field) != "" {
		return usagef("%s: %s", configFlag(ce.Field), ce.Reason)
	}
	return runtimeError{err}
}

// solveJob is a validated solve.
type solveJob struct {
	flags   solveFlags
	entry   solver.MethodInfo
	problem *problems.Problem
	method  solver.Method
}

// prepare checks the flags and builds the problem and method. Every error it
// returns is a usage error naming a flag.
func (f solveFlags) prepare() (*solveJob, error) {
	switch {
	case f.problem == "":
		return nil, usagef("--problem is required (one of %s)", strings.Join(problems.Names(), ", "))
	case f.method.IsZero():
		return nil, usagef("--solver is required (one of %s)", strings.Join(solver.MethodNames(), ", "))
	case !(f.eps > 0) || math.IsInf(f.eps, 1):
		return nil, usagef("--eps = %v must be positive and finite", f.eps)
	case !(f.settings.Delta > 0 && f.settings.Delta < 1):
		return nil, usagef("--delta = %v must lie in (0, 1)", f.settings.Delta)
	case !(f.settings.SampleScale > 0) || math.IsInf(f.settings.SampleScale, 1):
		return nil, usagef("--sample-scale = %v must be positive and finite", f.settings.SampleScale)
	case f.maxSamples < 0:
		return nil, usagef("--max-samples = %d must not be negative", f.maxSamples)
	case f.maxIter < 0:
		return nil, usagef("--max-iter = %d must not be negative", f.maxIter)
	case f.timeout < 0:
		return nil, usagef("--timeout = %v must not be negative", f.timeout)
	}
	entry := f.method.Info()
	c := problems.Config{Name: f.problem, Dim: f.dim, Gamma: f.gamma, Noise: f.noise, Seed: f.seed}
	if f.norm.set {
		var err error
		if c.Norm, err = problems.BindNorm(c, f.norm.spec); err != nil {
			return nil, configError(err)
		}
	}
	p, err := problems.New(c)
	if err != nil {
		return nil, configError(err)
	}
	if entry.Stochastic && p.Model < entry.Needs {
		return nil, usagef("--solver %s needs an oracle model %v or stronger; problem %s has %v", entry.Name, entry.Needs, p.Name, p.Model)
	}
	return &solveJob{flags: f, entry: entry, problem: p, method: entry.New(f.methodOptions(p))}, nil
}

// number is a float64 that encodes NaN and ±Inf as JSON null, the bench
// report's Number, so that every JSON the command prints spells a missing
// value the same way.
type number = report.Number

// certReport is the certificate part of a solveReport.
type certReport struct {
	Bound    number `json:"bound"`
	Estimate number `json:"estimate"`
	// Delta is the failure probability of Bound: 0 for an exact rule,
	// null for the rule "estimate", which claims no probability.
	Delta   number `json:"delta"`
	Samples int64  `json:"samples"`
	Calls   int64  `json:"calls"`
	// Rule is the certificate's rule: "exact", "finite-sum-exact",
	// "bounded-noise", "variance-mom", "variance-truncated" or "estimate".
	Rule solver.CertRule `json:"rule"`
	// Guarantee says in words what Bound guarantees:
	// "≤ B (exact, rule R)", "≤ B with probability ≥ 1 − δ (rule R)" or
	// "≈ B (estimate, no guarantee)".
	Guarantee string `json:"guarantee"`
}

// solveReport is what `deq solve --json` prints.
type solveReport struct {
	Problem string `json:"problem"`
	Solver  string `json:"solver"`
	Norm    string `json:"norm"`
	// Oracle is "exact" for deterministic solvers, "stochastic" otherwise.
	Oracle string `json:"oracle"`
	// Model is the oracle model the solver saw.
	Model string `json:"model"`
	Dim   int    `json:"dim"`
	// Len is the number of coordinates of a point.
	Len   int    `json:"len"`
	Gamma number `json:"gamma"`
	Noise number `json:"noise"`
	Sigma number `json:"sigma"`
	Seed  uint64 `json:"seed"`
	Eps   number `json:"eps"`
	Delta number `json:"delta"`
	// Status says why the solver stopped.
	Status      string `json:"status"`
	Iterations  int    `json:"iterations"`
	OracleCalls int64  `json:"oracle_calls"`
	Samples     int64  `json:"samples"`
	// Residual is the true ‖T(x̂) − x̂‖ from the exact operator.
	Residual number `json:"residual"`
	// ResidualEstimate is the solver's own value of the residual.
	ResidualEstimate number `json:"residual_estimate"`
	// FixedPointError is ‖x̂ − x*‖, null when x* is unknown.
	FixedPointError *number     `json:"fixed_point_error"`
	Certificate     *certReport `json:"certificate"`
	// WallSeconds is the time of the whole solve, certificate included;
	// SolveSeconds the method's part of it.
	WallSeconds  float64 `json:"wall_seconds"`
	SolveSeconds float64 `json:"solve_seconds"`
}

// report runs the job and writes its report to w, as JSON with --json.
// An interrupted solve (ctx done) still writes the report of its best point
// so far, and returns an interruptedError.
func (j *solveJob) report(ctx context.Context, w io.Writer) error {
	rep, err := j.run(ctx)
	var it interruptedError
	if err != nil && !errors.As(err, &it) {
		return runtimeError{err}
	}
	if rep != nil {
		var werr error
		if j.flags.json {
			werr = writeJSON(w, rep)
		} else {
			werr = writeSummary(w, rep)
		}
		if werr != nil && err == nil {
			return werr
		}
	}
	return err
}

// run solves and measures the result against the exact operator. When ctx
// is done it returns the report of the best point so far together with an
// interruptedError.
func (j *solveJob) run(ctx context.Context) (*solveReport, error) {
	p, f := j.problem, j.flags
	sp, oracle := p.ExactProblem(), "exact"
	if j.entry.Stochastic {
		sp, oracle = p.OracleProblem(), "stochastic"
	}
	s := &solver.Settings{
		Tol:        f.eps,
		MaxIter:    f.maxIter,
		MaxSamples: f.maxSamples,
		MaxTime:    f.timeout,
		Seed:       f.seed,
		NoTrace:    true,
		Certify:    solver.CertifySettings{Delta: f.settings.Delta},
	}
	start := time.Now()
	res, err := solver.Solve(ctx, sp, p.X0, s, j.method)
	wall := time.Since(start)
	var stop error
	if ctx.Err() != nil {
		// Interrupted (or the caller's deadline passed): report the best
		// point so far, and fail.
		stop = interruptedError{fmt.Errorf("solve interrupted after %d oracle calls: %w; the report is of the best point so far", solveCalls(res), ctx.Err())}
		if res == nil {
			return nil, stop
		}
	} else if err != nil {
		return nil, err
	}
	r, err := p.Residual(res.X)
	if err != nil {
		return nil, err
	}
	rep := &solveReport{
		Problem: p.Name, Solver: j.entry.Name, Norm: p.Norm.String(), Oracle: oracle, Model: sp.Oracle.Model().String(),
		Dim: p.Config.Dim, Len: len(p.X0), Gamma: number(p.Gamma), Noise: number(p.Config.Noise), Sigma: number(p.Sigma),
		Seed: f.seed, Eps: number(f.eps), Delta: number(f.settings.Delta),
		Status: res.Status.String(), Iterations: res.Stats.Iterations, OracleCalls: res.Stats.Calls, Samples: res.Stats.Samples,
		Residual: number(r), ResidualEstimate: number(res.Residual), WallSeconds: wall.Seconds(), SolveSeconds: res.Stats.Wall.Seconds(),
	}
	if e, ok := p.FixedPointError(res.X); ok {
		n := number(e)
		rep.FixedPointError = &n
	}
	if c := res.Certificate; c != nil {
		rep.Certificate = &certReport{Bound: number(c.Bound), Estimate: number(c.Estimate), Delta: number(c.Delta),
			Samples: c.Samples, Calls: c.Calls, Rule: c.Rule, Guarantee: c.Guarantee()}
	}
	return rep, stop
}

// solveCalls returns the oracle calls of res, or 0 for a nil res.
func solveCalls(res *solver.Result) int64 {
	if res == nil {
		return 0
	}
	return res.Stats.Calls
}

func writeJSON(w io.Writer, rep *solveReport) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return runtimeError{err}
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func writeSummary(w io.Writer, r *solveReport) error {
	fpe := "unknown"
	if r.FixedPointError != nil {
		fpe = fmt.Sprintf("%.4g", float64(*r.FixedPointError))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "problem\t%s in %s, dim %d, γ %g, noise %g, seed %d\n", r.Problem, r.Norm, r.Dim, float64(r.Gamma), float64(r.Noise), r.Seed)
	fmt.Fprintf(tw, "solver\t%s on the %s oracle (%s)\n", r.Solver, r.Oracle, r.Model)
	fmt.Fprintf(tw, "status\t%s after %d iterations, %d oracle calls, %d samples, %.3g s\n", r.Status, r.Iterations, r.OracleCalls, r.Samples, r.WallSeconds)
	fmt.Fprintf(tw, "residual\t%.4g (true, exact T; target %g); solver's estimate %.4g\n", float64(r.Residual), float64(r.Eps), float64(r.ResidualEstimate))
	fmt.Fprintf(tw, "‖x − x*‖\t%s\n", fpe)
	if c := r.Certificate; c != nil {
		fmt.Fprintf(tw, "certificate\t‖T(x) − x‖ %s; %d calls, %d samples\n", c.Guarantee, c.Calls, c.Samples)
	} else {
		fmt.Fprintf(tw, "certificate\tnone: the solve stopped (%s) before one could be drawn\n", r.Status)
	}
	return tw.Flush()
}

// printList prints the problems, solvers and norms.
func printList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROBLEM (--problem)\tMODEL\tNORMS\tDIM\tGAMMA\tNOISE\tSUMMARY")
	for _, p := range problems.List() {
		noise := strconv.FormatFloat(p.DefaultNoise, 'g', -1, 64)
		if p.DefaultNoise == 0 {
			noise = "-"
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%d [%d, %d]\t%g\t%s\t%s\n", p.Name, p.Model, strings.Join(p.Norms, " "), p.DefaultDim, p.MinDim, p.MaxDim, p.DefaultGamma, noise, p.Summary)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "SOLVER (--solver)\tORACLE\tNEEDS\tSUMMARY")
	for _, s := range solver.Methods() {
		oracle, needs := "exact", "-"
		if s.Stochastic {
			oracle, needs = "stochastic", s.Needs.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, oracle, needs, s.Summary)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NORM (--norm)\tMEANING")
	fmt.Fprintln(tw, "l2\tEuclidean norm (Frobenius norm of a matrix point)")
	fmt.Fprintln(tw, "lp:P\tℓp norm, 2 < P < ∞")
	fmt.Fprintln(tw, "linf\tmaximum norm ℓ∞")
	fmt.Fprintln(tw, "schatten:P\tSchatten-p norm of a matrix point, 2 ≤ P ≤ ∞ (schatten:inf is the spectral norm)")
	return tw.Flush()
}
