package main

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/train"
)

// trainFlags are the flags of `deq train`. The flags that configure the
// run are bound to the fields of cfg (strings parsed into train's typed
// values as they are set); train.Config.Defaults validates them.
type trainFlags struct {
	cfg   train.Config
	bound []boundFlag
	data  dataFlags
	val   int // --val: validation images held out of the training set

	metrics, checkpoint, plot, cpuProfile string
	resume, json, quiet, progressFlag     bool
}

// boundFlag is a flag that sets fields of the train.Config.
type boundFlag struct {
	name string
	// fields are the Config fields the flag sets, as train.FieldError and
	// train.Config.Diff name them.
	fields []string
}

// flagDefaults returns the configuration the flags start from for a cell
// kind: train's defaults, except for the fields whose defaults derive from
// other flags (left zero so that Defaults derives them: the conv cell's
// precision, for one, depends on the solvers) and Seed 1. The
// help shows the dense cell's; config replaces the values of the flags
// not given by those of the chosen cell.
func flagDefaults(cell train.CellKind) train.Config {
	c, err := train.Config{Seed: 1, Model: train.ModelConfig{Cell: cell}}.Defaults()
	if err != nil {
		panic(err) // the zero Config of every cell is valid
	}
	c.Model.Encoder, c.Model.Units, c.Model.Terms, c.Model.Groups = 0, 0, 0, 0
	c.Model.Precision = layers.DefaultPrecision
	c.Forward.SampleScale = 1
	c.Eval = train.SolverConfig{}
	return c
}

// bindConfig registers the flags that set f.cfg.
func (f *trainFlags) bindConfig(fl *pflag.FlagSet) {
	c := &f.cfg
	*c = flagDefaults(train.DenseCell)
	bind := func(name string, nonzero bool, fields ...string) {
		if nonzero {
			v := fl.Lookup(name)
			v.Value = &nonZero{v.Value}
		}
		f.bound = append(f.bound, boundFlag{name, fields})
	}
	text := func(v textVar, name, usage string, fields ...string) {
		fl.Var(&textValue{v}, name, usage)
		bind(name, false, fields...)
	}
	ints := func(p *int, name, usage string, nonzero bool, fields ...string) {
		fl.IntVar(p, name, *p, usage)
		bind(name, nonzero, fields...)
	}
	floats := func(p *float64, name, usage string, nonzero bool, fields ...string) {
		fl.Float64Var(p, name, *p, usage)
		bind(name, nonzero, fields...)
	}
	methods := names(train.Methods())
	text(&c.Normalize, "normalize", "pixel standardisation: "+names(datasets.Normalizations()), "Normalize")
	text(&c.Model.Cell, "cell", "DEQ cell: "+names(train.CellKinds())+" (meanfield and experts are stochastic: the injection of the encoder's features plus an average of M terms, which VR-GHAL samples; the retired wide and mixture are refused)", "Model.Cell")
	ints(&c.Model.Hidden, "hidden", "hidden state size", true, "Model.Hidden")
	ints(&c.Model.Encoder, "encoder", "encoder features (0: --hidden)", false, "Model.Encoder")
	ints(&c.Model.Units, "units", fmt.Sprintf("meanfield: hidden units M the cell averages (0: %d·--hidden)", train.DefaultUnitsPerDim), false, "Model.Units")
	ints(&c.Model.Terms, "terms", fmt.Sprintf("experts: dense experts M the cell averages, its terms (0: %d)", train.DefaultTerms), false, "Model.Terms")
	ints(&c.Model.Channels, "channels", fmt.Sprintf("conv: channels C of the encoder and the cell (0: %d)", train.DefaultConvChannels), false, "Model.Channels")
	ints(&c.Model.Groups, "groups", fmt.Sprintf("conv: GroupNorm groups of the encoder and the cell, dividing --channels (0: gcd(--channels, %d); -1: none, the only setting whose Lipschitz bound is proven)", train.DefaultConvGroups), false, "Model.Groups")
	ints(&c.Model.Kernels, "kernels", "conv: kernels M the cell averages (0 or 1: deterministic; M > 1: sampled by the stochastic solver)", false, "Model.Kernels")
	ints(&c.Model.EncoderLayers, "encoder-layers", fmt.Sprintf("conv: convolution blocks of the encoder: the stride-2 one, then 3×3 stride-1 ones at the downsampled size (0: %d)", train.DefaultConvEncoderLayers), false, "Model.EncoderLayers")
	ints(&c.Model.ReadoutHidden, "readout-hidden", "hidden ReLU units of the readout between the fixed point's features and the logits (0: none, a linear readout)", false, "Model.ReadoutHidden")
	text(&c.Model.Activation, "activation", "cell activation: relu or tanh", "Model.Activation")
	floats(&c.Model.Gamma, "gamma", "Lipschitz bound γ̄ ∈ (0, 1) of the cell in z", true, "Model.Gamma")
	ints(&c.Model.ExactEvery, "exact-every", fmt.Sprintf("l2 constraint: exact spectral norm every N projections (power iteration in between); --cell conv: Fourier bound every N, %d when not given", train.DefaultConvCertifyEvery), true, "Model.ExactEvery")
	text(&c.Model.Norm, "norm", "norm of the hidden state: l2, lp:P, linf or schatten:P", "Model.Norm")
	text(&c.Forward.Method, "solver", "forward solver: "+methods, "Forward.Method")
	floats(&c.Forward.Tol, "tol", "forward residual tolerance, absolute unless --tol-relative: a solve succeeds when its certified residual bound is at most tol", true, "Forward.Tol")
	fl.BoolVar(&c.Forward.Relative, "tol-relative", false, "make --tol (and --eval-tol) relative to the residual of each solve's start point; the default is absolute, because start points differ between batches (and a warm start's residual is already small), so a relative tolerance asks them for different accuracies")
	bind("tol-relative", false, "Forward.Relative")
	ints(&c.Forward.MaxIter, "max-iter", "forward iteration limit (epochs for VR-GHAL)", true, "Forward.MaxIter")
	floats(&c.Forward.Delta, "delta", "failure probability δ ∈ (0, 1) of the certificates and of VR-GHAL", true, "Forward.Delta", "Backward.Solver.Delta", "Eval.Delta")
	floats(&c.Forward.CertDelta, "cert-delta", "certify the forward and adjoint solves of the meanfield and experts cells from a sample of their terms, with probability ≥ 1 − δ, where that is cheaper than the exact pass (0: exact certificates)", false, "Forward.CertDelta", "Backward.Solver.CertDelta", "Eval.CertDelta")
	floats(&c.Forward.SampleScale, "sample-scale", "VR-GHAL: multiplier on the paper's sample sizes", true, "Forward.SampleScale", "Eval.SampleScale")
	ints(&c.Forward.Memory, "memory", "Anderson's or Broyden's memory (0: the solver's default)", false, "Forward.Memory", "Backward.Solver.Memory", "Eval.Memory")
	text(&c.Backward.Mode, "backward", fmt.Sprintf("backward mode: %s; default %v for --cell conv (the one-step gradient, TorchDEQ's default: no adjoint solve), implicit for the others", names(deq.Backwards()), train.DefaultConvBackward), "Backward.Mode")
	text(&c.Backward.Solver.Method, "backward-solver", "adjoint solver of implicit mode: "+methods, "Backward.Solver.Method")
	floats(&c.Backward.Solver.Tol, "backward-tol", "adjoint tolerance, relative to the first residual", true, "Backward.Solver.Tol")
	ints(&c.Backward.Solver.MaxIter, "backward-max-iter", "adjoint iteration limit", true, "Backward.Solver.MaxIter")
	ints(&c.Backward.PhantomSteps, "phantom-steps", "phantom: unrolled steps", false, "Backward.PhantomSteps")
	text(&c.Eval.Method, "eval-solver", "evaluation solver (default: --solver)", "Eval.Method")
	floats(&c.Eval.Tol, "eval-tol", "evaluation tolerance (0: --tol/10)", false, "Eval.Tol")
	ints(&c.Eval.MaxIter, "eval-max-iter", "evaluation iteration limit (0: 2·--max-iter)", false, "Eval.MaxIter")
	ints(&c.Epochs, "epochs", "training epochs (with --resume, a number above the checkpoint's extends the run: the learning-rate schedule is re-planned over the new total from the checkpoint's position on)", true, "Epochs")
	ints(&c.BatchSize, "batch", "training batch size", true, "BatchSize")
	ints(&c.EvalBatchSize, "eval-batch", "evaluation batch size", true, "EvalBatchSize")
	floats(&c.LR, "lr", "peak learning rate of Adam", true, "LR")
	text(&c.Schedule, "schedule", "learning-rate schedule: "+names(train.Schedules()), "Schedule")
	floats(&c.WeightDecay, "weight-decay", "decoupled weight decay (AdamW) of the weight matrices", false, "WeightDecay")
	fl.Var(&clipValue{&c.ClipNorm}, "clip-norm", "clip the global gradient norm at this value (0: no clipping)")
	bind("clip-norm", false, "ClipNorm")
	fl.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the initialisation, shuffles and solver draws")
	bind("seed", false, "Seed")
	floats(&c.Aids.JacWeight, "jac-weight", "Jacobian regularisation (Bai, Koltun, Kolter 2021): weight w of the Hutchinson estimate of ‖∂f/∂z‖_F² at z* added to the loss (0: off; dense cell only)", false, "Aids.JacWeight")
	ints(&c.Aids.JacFreq, "jac-freq", "apply the Jacobian regularisation at every F-th step (0: 1 when --jac-weight > 0)", false, "Aids.JacFreq")
	ints(&c.Aids.CorrectionStates, "correction-states", "fixed-point correction (Bai, Geng, Savani, Kolter 2022): loss on f(z_k) at K states of the forward trajectory, one-step gradients (0: off)", false, "Aids.CorrectionStates")
	floats(&c.Aids.CorrectionGamma, "correction-gamma", fmt.Sprintf("decay γ ∈ (0, 1] of the correction weights γ^(K−1−k), normalised to sum to one (0: %g when --correction-states > 0)", train.DefaultCorrectionGamma), false, "Aids.CorrectionGamma")
	floats(&c.Aids.Dropout, "dropout", "DEQ dropout probability p ∈ [0, 1): one mask per batch, fixed across solver iterations, off at evaluation (0: off)", false, "Aids.Dropout")
	ints(&c.Augment.Shift, "shift", fmt.Sprintf("data augmentation: translate every training image by a random offset of at most N pixels in each direction, zero fill, never the test images (0: none; default %d for --cell conv, none for the others)", train.DefaultConvShift), false, "Augment.Shift")
	floats(&c.Augment.Rotate, "rotate", "data augmentation: rotate every training image about its centre by a random angle of at most `DEG` degrees either way, bilinear interpolation, zero fill, before any --shift, never the test images (0: none, the default for every cell; below 180)", false, "Augment.Rotate")
	floats(&c.Augment.Scale, "scale", "data augmentation: scale every training image about its centre by a random factor in [1 − `FRAC`, 1 + FRAC], with --rotate's interpolation (0: none, the default for every cell; below 1)", false, "Augment.Scale")
	fl.BoolVar(&c.Augment.Flip, "flip", false, "data augmentation: mirror every training image left to right with probability one half, never the test images, for classes symmetric under the reflection such as clothing, not digits (default on for --cell conv with --data fashion-mnist, off otherwise)")
	bind("flip", false, "Augment.Flip")
	ints(&c.Split, "split", "dense cell: solve each batch as N parts of its examples, each on its own goroutine with its own solves, whose certificates merge into the batch's (0 or 1: one solve per batch)", false, "Split")
	text(&c.Model.Normalization, "normalization", "dense and conv cells: keep the recurrent weight in check by project (the Lipschitz projection, proven γ̄), weight (weight normalisation, no bound) or spectral (exact spectral normalisation, proven γ̄ in l2; dense cell only)", "Model.Normalization")
	text(&c.Model.Precision, "precision", fmt.Sprintf("dense and conv cells: precision of the cell's matrix products (and of the dense model's encoder and readout, or of the conv encoder's blocks after the first), float64 or float32 (single precision: a different map, within float32 rounding; where the cell proves its bound for its float64 map — --groups -1 for --cell conv, --normalization project, --norm l2 or schatten:2 — the forward and evaluation solves iterate in float32 and are certified on the float64 map, so --solver and --eval-solver %[2]s keep their guarantees); default %[1]v for --cell conv, except float64 when --backward-solver (implicit) is %[2]s, which need a proven bound that the adjoint solve, on the float32 map, lacks; float64 for the other cells", train.DefaultConvPrecision, orList(provenMethods())), "Model.Precision")
}

// config returns the validated train.Config of the flags; errors name the
// flag. changed reports whether a flag was given: the flags that were not
// take the defaults of the chosen cell.
func (f *trainFlags) config(changed func(string) bool) (train.Config, error) {
	c := f.cfg
	if c.Model.Cell != train.DenseCell {
		f.cellDefaults(&c, changed)
	}
	c.Backward.Solver.Delta, c.Backward.Solver.Memory = c.Forward.Delta, c.Forward.Memory
	c.Backward.Solver.CertDelta = c.Forward.CertDelta
	if changed("shift") && c.Augment.Shift <= 0 {
		if c.Augment.Shift < 0 {
			return c, usagef("--shift = %d must not be negative (0: none)", c.Augment.Shift)
		}
		c.Augment.Shift = -1 // none, which the Config spells as negative
	}
	for _, a := range []struct {
		name string
		v    float64
	}{{"rotate", c.Augment.Rotate}, {"scale", c.Augment.Scale}} {
		if !(a.v >= 0) {
			return c, usagef("--%s = %g must be a number ≥ 0 (0: none)", a.name, a.v)
		}
	}
	stochastic := func(m solver.MethodSpec) bool { return !m.IsZero() && m.Info().Stochastic }
	conv := c.Model.Cell == train.ConvCell
	switch {
	case c.Model.Terms != 0 && c.Model.Cell != train.ExpertsCell:
		return c, usagef("--terms applies to --cell experts only")
	case c.Model.Units != 0 && c.Model.Cell != train.MeanFieldCell:
		return c, usagef("--units applies to --cell meanfield only")
	case !conv && c.Model.Channels != 0:
		return c, usagef("--channels applies to --cell conv only")
	case !conv && c.Model.Groups != 0:
		return c, usagef("--groups applies to --cell conv only")
	case !conv && c.Model.Kernels != 0:
		return c, usagef("--kernels applies to --cell conv only")
	case !conv && c.Model.EncoderLayers != 0:
		return c, usagef("--encoder-layers applies to --cell conv only")
	case c.Model.Normalization == layers.WeightNorm && c.Model.Cell != train.DenseCell && !conv:
		return c, usagef("--normalization weight applies to --cell dense and conv only (the %v cell keeps its bound by projection)", c.Model.Cell)
	case c.Model.Normalization == layers.SpectralNorm && c.Model.Cell != train.DenseCell:
		return c, usagef("--normalization spectral applies to --cell dense only (the %v cell keeps its bound by projection)", c.Model.Cell)
	case c.Forward.SampleScale != 1 && !stochastic(c.Forward.Method) && !stochastic(c.Backward.Solver.Method) && !stochastic(c.Eval.Method):
		return c, usagef("--sample-scale applies to the stochastic solvers only")
	}
	d, err := c.Defaults()
	if err == nil && !f.resume {
		// A resumed run is checked against its checkpoint's mode (run).
		return d, checkModeFlags(d.Backward.Mode, "this run's", changed)
	}
	var fe *train.FieldError
	if errors.As(err, &fe) {
		if name := f.flagOf(fe.Field); name != "" {
			return d, f.fieldUsage(fe)
		}
	}
	if err != nil {
		return d, usagef("%v", err)
	}
	return d, nil
}

// checkModeFlags refuses, rather than ignores, the settings of a backward
// mode other than mode, the run's (whose names it), given on the command
// line: the conv cell's default mode makes no adjoint solve.
func checkModeFlags(mode deq.Backward, whose string, changed func(string) bool) error {
	for _, a := range []struct {
		flag string
		mode deq.Backward
	}{{"backward-solver", deq.Implicit}, {"backward-tol", deq.Implicit}, {"backward-max-iter", deq.Implicit}, {"phantom-steps", deq.Phantom}} {
		if changed(a.flag) && mode != a.mode {
			return usagef("--%s applies to --backward %v only (%s mode is %v)", a.flag, a.mode, whose, mode)
		}
	}
	return nil
}

// cellDefaults sets the fields of the flags not given to the defaults of
// c's cell (flagDefaults(c.Model.Cell)).
func (f *trainFlags) cellDefaults(c *train.Config, changed func(string) bool) {
	base := flagDefaults(c.Model.Cell)
	dst, src := reflect.ValueOf(c).Elem(), reflect.ValueOf(base)
	for _, b := range f.bound {
		if changed(b.name) {
			continue
		}
		for _, path := range b.fields {
			d, s := dst, src
			for _, name := range strings.Split(path, ".") {
				d, s = d.FieldByName(name), s.FieldByName(name)
			}
			d.Set(s)
		}
	}
}

// fieldUsage returns the usage error of a train.FieldError whose field
// has a flag: the flag, the value and the reason, in which every Config
// field path of the flag table (the reason may name another field, such as
// Forward.Method) is spelt as its flag.
func (f *trainFlags) fieldUsage(fe *train.FieldError) error {
	var paths []string
	flags := map[string]string{}
	for _, b := range f.bound {
		for _, x := range b.fields {
			paths = append(paths, regexp.QuoteMeta(x))
			flags[x] = "--" + b.name
		}
	}
	// Longest first, so that Model.Normalization is not read as Model.Norm.
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	re := regexp.MustCompile(`\b(` + strings.Join(paths, "|") + `)\b`)
	reason := re.ReplaceAllStringFunc(fe.Reason, func(x string) string { return flags[x] })
	return usagef("--%s = %v %s", f.flagOf(fe.Field), fe.Value, reason)
}

// flagOf returns the name of the flag that sets the Config field, or "".
func (f *trainFlags) flagOf(field string) string {
	for _, b := range f.bound {
		for _, x := range b.fields {
			if x == field {
				return b.name
			}
		}
	}
	return ""
}

// checkResume refuses flags set on the command line that contradict the
// configuration stored in a checkpoint, except an --epochs above the
// stored number, which extends the run; changed reports whether a flag
// was set.
func (f *trainFlags) checkResume(cfg, stored train.Config, changed func(string) bool) error {
	for _, d := range cfg.Diff(stored) {
		if d.Field == "Epochs" && changed("epochs") {
			if cfg.Epochs < stored.Epochs {
				return usagef("--epochs = %d is below the checkpoint's %d (--resume can extend a run to more epochs, not shorten it)", cfg.Epochs, stored.Epochs)
			}
			continue // an extension
		}
		if name := f.flagOf(d.Field); name != "" && changed(name) {
			return usagef("--%s = %v contradicts the checkpoint's %v (--resume continues the saved run)", name, flagValue(d.Field, d.A), flagValue(d.Field, d.B))
		}
	}
	return nil
}

// flagValue returns the Config field's value v as its flag spells it:
// Augment.Shift spells "no translations" as −1 where the flag says 0.
func flagValue(field string, v any) any {
	if s, ok := v.(int); ok && field == "Augment.Shift" && s < 0 {
		return 0
	}
	return v
}

// textVar is a typed value with a text form, such as train.CellKind.
type textVar interface {
	encoding.TextUnmarshaler
	fmt.Stringer
}

// textValue is a flag that parses its argument into a textVar.
type textValue struct{ v textVar }

func (t *textValue) Set(s string) error { return t.v.UnmarshalText([]byte(s)) }
func (t *textValue) Type() string       { return "string" }
func (t *textValue) String() string {
	if t.v == nil {
		return ""
	}
	return t.v.String()
}

// nonZero refuses an explicit 0 for a flag whose Config field reads zero
// as its default: the run would silently use the default instead.
type nonZero struct{ pflag.Value }

func (n *nonZero) Set(s string) error {
	if err := n.Value.Set(s); err != nil {
		return err
	}
	if v, err := strconv.ParseFloat(n.Value.String(), 64); err == nil && v == 0 {
		return errors.New("must not be zero (omit the flag for the default)")
	}
	return nil
}

// clipValue is --clip-norm: a non-negative bound, 0 meaning no clipping,
// which train.Config spells as a negative ClipNorm.
type clipValue struct{ p *float64 }

func (c *clipValue) Type() string { return "float64" }
func (c *clipValue) String() string {
	if c.p == nil || *c.p < 0 {
		return "0"
	}
	return strconv.FormatFloat(*c.p, 'g', -1, 64)
}
func (c *clipValue) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return err
	case v < 0:
		return errors.New("must not be negative (0: no clipping)")
	case v == 0:
		v = -1
	}
	*c.p = v
	return nil
}

// provenMethods returns the methods that need a proven Lipschitz bound
// (train.NeedsProvenBound), which make float64 the conv cell's
// default precision.
func provenMethods() []solver.MethodSpec {
	var out []solver.MethodSpec
	for _, m := range train.Methods() {
		if train.NeedsProvenBound(m) {
			out = append(out, m)
		}
	}
	return out
}

// orList joins the names of xs with commas and "or" before the last.
func orList[T fmt.Stringer](xs []T) string {
	s := names(xs)
	if i := strings.LastIndex(s, ", "); i >= 0 {
		s = s[:i] + " or " + s[i+2:]
	}
	return s
}

// names joins the names of xs with commas.
func names[T fmt.Stringer](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, ", ")
}
