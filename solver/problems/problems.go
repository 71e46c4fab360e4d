package problems

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/deqgo/deq/solver"
)

// Oracle is a stochastic oracle that also evaluates its operator exactly.
//
// Eval and EvalExact require len(dst) == len(x) == Len() and dst not sharing
// memory with x; they return an error otherwise, and Eval returns an error for
// a Sample with Size < 1. Eval reports Size unit samples, except above the
// cap of a problem whose evaluation would otherwise grow without bound with
// Size: "mdp" and "mdp-large" draw at most MDPMaxSample, and "averaged"
// returns its exact average for a Size of at least its M terms, reporting
// M. No evaluation runs longer for a larger Size beyond these caps.
type Oracle interface {
	solver.Oracle
	solver.Exact
}

// Config selects and sizes a problem. The zero value of every field other than
// Name selects the problem's documented default (see List).
type Config struct {
	// Name selects the problem: one of the names List returns.
	Name string
	// Dim is the size: the dimension d of the vector problems, the side n of
	// the n×n points of "matrix", the number of states S of "mdp" (whose points
	// are Q-functions with S·Actions entries).
	Dim int
	// Norm is the norm of the space, for points of the problem's shape (see
	// Problem.Rows and Cols; ParseNorm makes one from a name). It must be
	// one the problem supports. Nil means the problem's default norm,
	// Info.DefaultNorm: ℓ2 of the problem's dimension for every problem but
	// "matrix" (Schatten-∞) and "mdp" (ℓ∞). New keeps a clone.
	Norm solver.Norm
	// Gamma is the Lipschitz constant γ ∈ (0, 1] of T (γ < 1 for "mdp").
	Gamma float64
	// Noise is the noise level σ > 0: the standard deviation of every
	// coordinate of a unit sample's additive noise, or for "averaged" the
	// spread of the offsets b_i. "mdp" takes its noise from its transition
	// probabilities and rejects a non-zero Noise.
	Noise float64
	// Seed makes the problem: the same Config gives the same problem and the
	// same oracle answers.
	Seed uint64
	// Actions is the number of actions of "mdp" and "mdp-large"; zero
	// means DefaultActions. Other problems reject a non-zero value.
	Actions int
	// Terms is the number of maps of the "averaged" family; zero means
	// DefaultTerms. Other problems reject a non-zero value.
	Terms int
}

// Defaults of the Config fields that apply to one problem only.
const (
	DefaultActions = 4
	DefaultTerms   = 64
)

// Problem is a fixed-point problem of the suite with its known answers. It is
// not safe for concurrent use: its oracle and norm hold scratch space.
type Problem struct {
	// Name is the problem's name, Config.Name.
	Name string
	// Config is the configuration with defaults filled in.
	Config Config
	// Oracle is the stochastic oracle for T; it also evaluates T exactly.
	Oracle Oracle
	// Norm is the norm of the space, Config.Norm.
	Norm solver.Norm
	// Rows and Cols give the shape of a point (Cols = 1 for vectors; for
	// "mdp", Rows = S states and Cols = A actions).
	Rows, Cols int
	// Gamma is a Lipschitz constant of T in Norm (exact, or the documented
	// bound for ℓp); for the samplewise models every τ(·; ξ) is Gamma-Lipschitz
	// too.
	Gamma float64
	// Model is the strongest oracle model that holds.
	Model solver.Model
	// X0 is the start point (zero for every problem).
	X0 []float64
	// FixedPoint is the exact fixed point, computed independently of any
	// fixed-point method; nil when unknown.
	FixedPoint []float64
	// Sigma is the ℓ2 (Frobenius) noise scale of one unit sample,
	// √E‖τ(x; ξ) − T(x)‖₂², which bounds the same quantity in every
	// supported norm (all of them are at most ℓ2). For "averaged" and "mdp"
	// the noise depends on x and Sigma is its value at the fixed point.
	Sigma float64
	// Norms lists the supported norms, as in List.
	Norms []string
}

// Info describes a problem of the suite.
type Info struct {
	// Name is the value of Config.Name.
	Name string
	// Summary is a one-line description.
	Summary string
	// Norms lists the supported norms: "l2", "lp:P" (2 < P < ∞), "linf",
	// "schatten:P" (2 ≤ P ≤ ∞, "inf" allowed).
	Norms []string
	// Model is the strongest oracle model of the problem.
	Model solver.Model
	// DefaultDim, MinDim and MaxDim bound Config.Dim.
	DefaultDim, MinDim, MaxDim int
	// DefaultNorm names the norm used when Config.Norm is nil.
	DefaultNorm string
	// DefaultGamma is used when Config.Gamma is zero.
	DefaultGamma float64
	// DefaultNoise is used when Config.Noise is zero; zero for "mdp".
	DefaultNoise float64
}

// spec is a problem's description and constructor.
type spec struct {
	Info
	build func(c Config, norm solver.Norm) (*Problem, error)
	// shape returns the point shape for Config.Dim n.
	shape func(c Config) (rows, cols int)
}

var vectorNorms = []string{"l2", "lp:P", "linf"}

func vectorShape(c Config) (int, int) { return c.Dim, 1 }

// specs returns the suite, in the order List reports it.
func specs() []spec {
	return []spec{
		{Info: Info{Name: "affine", Summary: "T(x) = Ax + b, ‖A‖ = γ in the chosen norm, additive Gaussian noise",
			Norms: vectorNorms, Model: solver.SamplewiseLipschitz, DefaultDim: 32, MinDim: 1, MaxDim: 1000,
			DefaultNorm: "l2", DefaultGamma: 0.9, DefaultNoise: 1},
			build: func(c Config, n solver.Norm) (*Problem, error) { return newAffine(c, n, gaussNoise) }, shape: vectorShape},
		{Info: Info{Name: "affine-t", Summary: "T(x) = Ax + b with heavy-tailed Student-t (2.5 d.o.f.) noise",
			Norms: vectorNorms, Model: solver.SamplewiseLipschitz, DefaultDim: 32, MinDim: 1, MaxDim: 1000,
			DefaultNorm: "l2", DefaultGamma: 0.9, DefaultNoise: 1},
			build: func(c Config, n solver.Norm) (*Problem, error) { return newAffine(c, n, studentNoise) }, shape: vectorShape},
		{Info: Info{Name: "affine-switch", Summary: "T(x) = Ax + b with Gaussian noise whose sign flips across a hyperplane (bounded variance only)",
			Norms: vectorNorms, Model: solver.BoundedVariance, DefaultDim: 32, MinDim: 1, MaxDim: 1000,
			DefaultNorm: "l2", DefaultGamma: 0.9, DefaultNoise: 1},
			build: func(c Config, n solver.Norm) (*Problem, error) { return newAffine(c, n, switchNoise) }, shape: vectorShape},
		{Info: Info{Name: "matrix", Summary: "X ↦ AXB + C on n×n matrices, ‖A‖op‖B‖op = γ, Gaussian noise",
			Norms: []string{"schatten:P", "l2"}, Model: solver.SamplewiseLipschitz, DefaultDim: 8, MinDim: 1, MaxDim: 32,
			DefaultNorm: "schatten:inf", DefaultGamma: 0.9, DefaultNoise: 1},
			build: newMatrix, shape: func(c Config) (int, int) { return c.Dim, c.Dim }},
		{Info: Info{Name: "averaged", Summary: "random averaged maps τ(x; i) = γ S_i x + b_i, S_i signed permutations",
			Norms: vectorNorms, Model: solver.SamplewiseLipschitz, DefaultDim: 32, MinDim: 1, MaxDim: 1000,
			DefaultNorm: "l2", DefaultGamma: 1, DefaultNoise: 1},
			build: newAveraged, shape: vectorShape},
		{Info: Info{Name: "shift", Summary: "nonexpansive T(x) = γRx + b, R the signed cyclic shift (an isometry), Gaussian noise",
			Norms: vectorNorms, Model: solver.SamplewiseLipschitz, DefaultDim: 32, MinDim: 1, MaxDim: 1000,
			DefaultNorm: "l2", DefaultGamma: 1, DefaultNoise: 1},
			build: newShift, shape: vectorShape},
		{Info: Info{Name: "mdp", Summary: "ℓ∞ Bellman optimality operator on Q-functions of a random discounted MDP, generative model",
			Norms: []string{"linf"}, Model: solver.SamplewiseLipschitz, DefaultDim: 20, MinDim: 2, MaxDim: 500,
			DefaultNorm: "linf", DefaultGamma: 0.9},
			build: newMDP, shape: func(c Config) (int, int) { return c.Dim, c.Actions }},
		{Info: Info{Name: "mdp-large", Summary: "the mdp Bellman operator at scale: 50 states × 4 actions (200 state–action pairs), γ = 0.95, generative model on Q-functions",
			Norms: []string{"linf"}, Model: solver.SamplewiseLipschitz, DefaultDim: 50, MinDim: 2, MaxDim: 500,
			DefaultNorm: "linf", DefaultGamma: 0.95},
			build: newMDP, shape: func(c Config) (int, int) { return c.Dim, c.Actions }},
	}
}

// List describes the problems of the suite.
func List() []Info {
	s := specs()
	out := make([]Info, len(s))
	for i := range s {
		out[i] = s[i].Info
		out[i].Norms = append([]string(nil), s[i].Norms...)
	}
	return out
}

// Names returns the problem names in the order of List.
func Names() []string {
	s := specs()
	out := make([]string, len(s))
	for i := range s {
		out[i] = s[i].Name
	}
	return out
}

// Lookup returns the description of the named problem.
func Lookup(name string) (Info, error) {
	sp, err := lookup(name)
	if err != nil {
		return Info{}, err
	}
	return sp.Info, nil
}

func lookup(name string) (spec, error) {
	for _, s := range specs() {
		if s.Name == name {
			return s, nil
		}
	}
	return spec{}, configErr("Name", "unknown problem %q (want %s)", name, strings.Join(Names(), ", "))
}

// ConfigError reports an invalid Config field.
type ConfigError struct {
	// Field is the name of the Config field at fault, such as "Norm".
	Field string
	// Reason says what is wrong, starting with the offending value.
	Reason string
}

// Error implements error.
func (e *ConfigError) Error() string { return "problems: Config." + e.Field + ": " + e.Reason }

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// New builds the problem c describes. For an unknown name, a size out of
// range, a norm the problem does not support or of the wrong dimension, γ
// outside (0, 1], a negative noise level or a field the problem does not use
// it returns a *ConfigError naming the field at fault.
func New(c Config) (*Problem, error) {
	c, sp, err := resolve(c)
	if err != nil {
		return nil, err
	}
	rows, cols := sp.shape(c)
	if c.Norm == nil {
		if c.Norm, err = ParseNorm(c, sp.DefaultNorm); err != nil {
			return nil, err
		}
	} else {
		c.Norm = c.Norm.Clone()
	}
	if err := checkNorm(sp, c.Norm, rows, cols); err != nil {
		return nil, err
	}
	p, err := sp.build(c, c.Norm)
	if err != nil {
		return nil, err
	}
	p.Name, p.Config, p.Norm, p.Rows, p.Cols = c.Name, c, c.Norm, rows, cols
	p.Gamma, p.Model = c.Gamma, sp.Model
	p.Norms = append([]string(nil), sp.Norms...)
	if p.X0 == nil {
		p.X0 = make([]float64, rows*cols)
	}
	return p, nil
}

// ParseNorm parses a norm name in the syntax of solver.ParseNorm ("l2",
// "lp:4", "linf", "schatten:inf", ...) for the points of the problem c
// describes, for Config.Norm: BindNorm of solver.ParseNormSpec(name). Its
// errors are *ConfigError values naming the field at fault ("Norm" for the
// name).
func ParseNorm(c Config, name string) (solver.Norm, error) {
	if _, _, err := resolve(c); err != nil {
		return nil, err
	}
	s, err := solver.ParseNormSpec(name)
	if err != nil {
		var ne *solver.NormError
		if errors.As(err, &ne) {
			return nil, configErr("Norm", "norm %q: %s", ne.Name, ne.Reason)
		}
		return nil, err
	}
	return BindNorm(c, s)
}

// BindNorm returns the norm s names on the points of the problem c
// describes, for Config.Norm. It checks c as New does, and that the problem
// supports the norm; its errors are *ConfigError values naming the field at
// fault ("Norm" for the norm).
func BindNorm(c Config, s solver.NormSpec) (solver.Norm, error) {
	c, sp, err := resolve(c)
	if err != nil {
		return nil, err
	}
	rows, cols := sp.shape(c)
	n, err := s.Norm(rows, cols)
	if err != nil {
		var ne *solver.NormError
		if errors.As(err, &ne) {
			return nil, configErr("Norm", "norm %q: %s", s.String(), ne.Reason)
		}
		return nil, err
	}
	if err := checkNorm(sp, n, rows, cols); err != nil {
		return nil, err
	}
	return n, nil
}

// checkNorm returns a *ConfigError if sp does not support n or n does not
// measure points of shape rows×cols.
func checkNorm(sp spec, n solver.Norm, rows, cols int) error {
	if !supports(sp.Norms, n) {
		return configErr("Norm", "%q not supported by %s (supports %s)", n.String(), sp.Name, strings.Join(sp.Norms, ", "))
	}
	if s, ok := n.(*solver.Schatten); ok {
		if r, c := s.Dims(); r != rows || c != cols {
			return configErr("Norm", "%v on %d×%d matrices, want %d×%d for %s", n, r, c, rows, cols, sp.Name)
		}
	}
	if n.Len() != rows*cols {
		return configErr("Norm", "%v of dimension %d, want %d for %s", n, n.Len(), rows*cols, sp.Name)
	}
	return nil
}

// resolve checks c and fills in its defaults, all but the norm's, and
// returns it with the problem's spec.
func resolve(c Config) (Config, spec, error) {
	sp, err := lookup(c.Name)
	if err != nil {
		return c, sp, err
	}
	if c.Dim == 0 {
		c.Dim = sp.DefaultDim
	}
	if c.Dim < sp.MinDim || c.Dim > sp.MaxDim {
		return c, sp, configErr("Dim", "%d outside [%d, %d] for %s", c.Dim, sp.MinDim, sp.MaxDim, c.Name)
	}
	c.Gamma = cmp.Or(c.Gamma, sp.DefaultGamma)
	if !(c.Gamma > 0 && c.Gamma <= 1) {
		return c, sp, configErr("Gamma", "%v outside (0, 1]", c.Gamma)
	}
	if c.Noise < 0 || math.IsNaN(c.Noise) || math.IsInf(c.Noise, 0) {
		return c, sp, configErr("Noise", "%v must be positive and finite", c.Noise)
	}
	c.Noise = cmp.Or(c.Noise, sp.DefaultNoise)
	if c.Name == "mdp" || c.Name == "mdp-large" {
		c.Actions = cmp.Or(c.Actions, DefaultActions)
		if c.Actions < 1 || c.Actions > 64 {
			return c, sp, configErr("Actions", "%d outside [1, 64]", c.Actions)
		}
	} else if c.Actions != 0 {
		return c, sp, configErr("Actions", "%d: applies only to mdp, not %s", c.Actions, c.Name)
	}
	if c.Name == "averaged" {
		c.Terms = cmp.Or(c.Terms, DefaultTerms)
		if c.Terms < 1 || c.Terms > 1<<16 {
			return c, sp, configErr("Terms", "%d outside [1, 65536]", c.Terms)
		}
	} else if c.Terms != 0 {
		return c, sp, configErr("Terms", "%d: applies only to averaged, not %s", c.Terms, c.Name)
	}
	return c, sp, nil
}

// normKind names the family of n as in Info.Norms.
func normKind(n solver.Norm) string {
	switch v := n.(type) {
	case solver.LP:
		if v.P() == 2 {
			return "l2"
		}
		return "lp:P"
	case solver.LInf:
		return "linf"
	case *solver.Schatten:
		return "schatten:P"
	}
	return n.String()
}

func supports(list []string, n solver.Norm) bool {
	k := normKind(n)
	for _, s := range list {
		if s == k {
			return true
		}
	}
	return false
}

// Exact returns a deterministic oracle that evaluates T exactly through
// p.Oracle.EvalExact, counting one sample per call. Deterministic methods run
// on it.
func (p *Problem) Exact() solver.Oracle { return exactOracle{p.Oracle} }

// OracleProblem returns the stochastic problem {p.Oracle, p.Norm}.
func (p *Problem) OracleProblem() solver.Problem {
	return solver.Problem{Oracle: p.Oracle, Norm: p.Norm}
}

// ExactProblem returns the deterministic problem {p.Exact(), p.Norm}.
func (p *Problem) ExactProblem() solver.Problem {
	return solver.Problem{Oracle: p.Exact(), Norm: p.Norm}
}

// Residual returns the true residual ‖T(x) − x‖ in p.Norm, from the exact
// operator.
func (p *Problem) Residual(x []float64) (float64, error) {
	tx := make([]float64, len(x))
	if err := p.Oracle.EvalExact(tx, x); err != nil {
		return math.NaN(), err
	}
	for i := range tx {
		tx[i] -= x[i]
	}
	return p.Norm.Norm(tx), nil
}

// FixedPointError returns ‖x − x*‖ in p.Norm and true, or NaN and false when
// the fixed point is unknown. It panics if len(x) differs from the dimension.
func (p *Problem) FixedPointError(x []float64) (float64, bool) {
	if p.FixedPoint == nil {
		return math.NaN(), false
	}
	d := make([]float64, len(x))
	for i := range d {
		d[i] = x[i] - p.FixedPoint[i]
	}
	return p.Norm.Norm(d), true
}

// exactOracle is the deterministic view of an Oracle.
type exactOracle struct{ o Oracle }

var _ solver.Oracle = exactOracle{}

func (e exactOracle) Len() int { return e.o.Len() }

func (e exactOracle) Eval(dst, x []float64, _ solver.Sample) (int, error) {
	return 1, e.o.EvalExact(dst, x)
}

func (e exactOracle) Model() solver.Model { return solver.Deterministic }

// checkEval validates the arguments of Eval (withSample) or EvalExact.
func checkEval(n int, dst, x []float64, s solver.Sample, withSample bool) error {
	switch {
	case len(x) != n:
		return fmt.Errorf("problems: point has length %d, want %d", len(x), n)
	case len(dst) != n:
		return fmt.Errorf("problems: destination has length %d, want %d", len(dst), n)
	case n > 0 && &dst[0] == &x[0]:
		return fmt.Errorf("problems: destination and point share memory")
	case withSample && s.Size < 1:
		return fmt.Errorf("problems: Sample.Size = %d must be positive", s.Size)
	}
	return nil
}
