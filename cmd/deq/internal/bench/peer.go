package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
	"github.com/deqgo/deq/internal/blasimpl"
	"github.com/deqgo/deq/internal/cputime"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/train"
)

// sectionPeer trains the same DEQ classifiers with this library and with
// the PyTorch peer (scripts/torch_peer.py) in one run.
const sectionPeer = "peer"

// PeerScript is the PyTorch peer, relative to the repository root; the
// peer section looks for it in the working directory and its parents.
const PeerScript = "scripts/torch_peer.py"

// DefaultPeerThreads is Config.PeerThreads where that is zero: one torch
// thread, the peer's faster setting on the dense and the (implicit) conv
// model (measured with the peer section of deq bench). Our side likewise
// runs OpenBLAS on one thread (blasimpl.Use).
const DefaultPeerThreads = 1

// DefaultPeerSplit is Config.PeerSplit where that is zero: our side of
// the dense model solves each batch as two concurrent parts
// (train.Config.Split), its faster setting on a machine of two or more
// cores, where the peer's torch likewise keeps two cores busy.
const DefaultPeerSplit = 2

// Models of the peer section.
const (
	peerDense = "dense"
	peerConv  = "conv"
	// peerConvImplicit is the conv model with implicit differentiation on
	// both sides, the like-for-like peer (TorchDEQ-style code with an
	// Anderson adjoint solve).
	peerConvImplicit = "conv-implicit"
)

// PeerModels returns the names of the peer section's models, the values
// of Config.PeerModels.
func PeerModels() []string { return []string{peerDense, peerConv, peerConvImplicit} }

// isConv reports whether the peer model is one of the conv models.
func isConv(model string) bool { return model == peerConv || model == peerConvImplicit }

// peerSetup is one model of the peer section.
type peerSetup struct {
	model                 string // peerDense, peerConv or peerConvImplicit
	data                  string // datasets.Open spec
	trainLimit, testLimit int
	epochs                int
	cfg                   train.Config // zero fields (Epochs: epochs) take train's defaults
}

// peerSetups returns the models of the peer section:
//
//   - dense: Fashion-MNIST, hidden 128, Broyden forward (tol 1e-3, 40
//     iterations) and implicit backward (Broyden, relative 1e-3, 40
//     iterations), batch 128, Adam 2e-3 with a cosine schedule, float64
//     cell products (the dense default), 2 epochs;
//   - conv: mnist-10k (8,000/2,000) at the defaults of `deq train --cell
//     conv` (train.DefaultsFor(train.ConvCell), float32 cell products,
//     train.DefaultConvPrecision, the Jacobian-free backward,
//     train.DefaultConvBackward, which the peer mirrors with TorchDEQ's
//     default one-step gradient) without their random translations
//     (`--shift 0`; the peer does not augment), 3 epochs;
//   - conv-implicit: the same with implicit differentiation on both sides
//     (`--backward implicit`: Anderson adjoint solves).
//
// Config.PeerPrecision, when set, replaces every model's precision, and
// Config.PeerSplit sets the dense model's train.Config.Split. When
// Quick all three run 1 epoch of 256 synthetic training and 128 test images,
// with 16 hidden units and 8 channels. Config.PeerModels, when set, keeps
// only the models it names.
func (s *settings) peerSetups() []peerSetup {
	seed := deriveSeed(s.Seed, 7)
	dense := train.Config{Seed: seed, BatchSize: 128, LR: 2e-3, Model: train.ModelConfig{Cell: train.DenseCell, Hidden: 128}}
	// The peer script does not augment its data: neither does our side.
	conv := train.Config{Seed: seed, Model: train.ModelConfig{Cell: train.ConvCell}, Augment: train.AugmentConfig{Shift: -1}}
	dense.Model.Precision, conv.Model.Precision = s.PeerPrecision, s.PeerPrecision
	dense.Split = s.PeerSplit
	implicit := conv
	implicit.Backward.Mode = deq.Implicit
	var setups []peerSetup
	if s.Quick {
		dense.Model.Hidden, conv.Model.Channels, implicit.Model.Channels = 16, 8, 8
		setups = []peerSetup{
			{model: peerDense, data: datasets.SyntheticName, trainLimit: 256, testLimit: 128, epochs: 1, cfg: dense},
			{model: peerConv, data: datasets.SyntheticName, trainLimit: 256, testLimit: 128, epochs: 1, cfg: conv},
			{model: peerConvImplicit, data: datasets.SyntheticName, trainLimit: 256, testLimit: 128, epochs: 1, cfg: implicit},
		}
	} else {
		setups = []peerSetup{
			{model: peerDense, data: datasets.FashionMNIST, epochs: 2, cfg: dense},
			{model: peerConv, data: datasets.MNIST10k, epochs: 3, cfg: conv},
			{model: peerConvImplicit, data: datasets.MNIST10k, epochs: 3, cfg: implicit},
		}
	}
	if len(s.PeerModels) == 0 {
		return setups
	}
	return slices.DeleteFunc(setups, func(ps peerSetup) bool { return !slices.Contains(s.PeerModels, ps.model) })
}

// peer runs the peer section.
func peer(ctx context.Context, s *settings) (*report.PeerReport, error) {
	start := time.Now()
	rep := &report.PeerReport{}
	run, note := findPeer(ctx)
	if note != "" {
		rep.Note = note
		s.logf("peer: skipped: %s", note)
	} else {
		rep.Python, rep.Torch, rep.Threads = run.python, run.torch, s.PeerThreads
	}
	for _, ps := range s.peerSetups() {
		m, err := peerModel(ctx, s, ps, run)
		if err != nil {
			return nil, err
		}
		rep.Models = append(rep.Models, *m)
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// peerModel trains one model on both sides.
func peerModel(ctx context.Context, s *settings, ps peerSetup, run *peerRunner) (*report.PeerModel, error) {
	target := report.PeerDenseTarget
	switch {
	case ps.model == peerConvImplicit:
		target = report.PeerConvImplicitTarget
	case isConv(ps.model):
		target = report.PeerConvTarget
	}
	m := &report.PeerModel{Model: ps.model, Data: ps.data, Epochs: ps.epochs, Target: float64(target)}
	cfg := ps.cfg
	cfg.Epochs = ps.epochs
	cfg, err := cfg.Defaults()
	if err != nil {
		return nil, fmt.Errorf("bench: peer section: %w", err)
	}
	m.Summary = peerSummary(cfg)
	ts := trainedSetup{data: ps.data, trainLimit: ps.trainLimit, testLimit: ps.testLimit}
	d, err := ts.open(ctx, s.Seed)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		m.Note = unavailableNote(ps.data, err)
		s.logf("peer: %s: skipped: %s", ps.model, m.Note)
		return m, nil
	}
	m.Data, m.Train, m.Test = d.Train.Name, d.Train.Len(), d.Test.Len()
	var dir string
	if run != nil {
		if dir, err = os.MkdirTemp("", "deq-peer-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if err := writePeerData(dir, d, cfg.Normalize); err != nil {
			return nil, fmt.Errorf("bench: peer section: writing the data: %w", err)
		}
	}
	if m.Ours, err = peerOurs(ctx, s, ps, cfg, d); err != nil {
		return nil, err
	}
	if run == nil {
		return m, nil
	}
	m.Peer, err = run.train(ctx, dir, peerArgs(ps.model, cfg, s.PeerThreads), func(line string) { s.logf("peer: %s: torch %s", ps.model, line) })
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		m.Note = "the PyTorch peer failed: " + err.Error()
		s.logf("peer: %s: %s", ps.model, m.Note)
	case m.Peer.Backward != m.Ours.Backward:
		// Kept, rows and all, but not compared as like for like.
		m.Note = fmt.Sprintf("the peer differentiated %s, ours %s: not the same training", m.Peer.Backward, m.Ours.Backward)
		s.logf("peer: %s: %s", ps.model, m.Note)
	default:
		s.logf("peer: %s: ours %.2f s/epoch, %.4f test; torch %.2f s/epoch, %.4f test; ratio %.2f×",
			ps.model, m.Ours.SecondsPerEpoch, m.Ours.TestAcc, m.Peer.SecondsPerEpoch, m.Peer.TestAcc, float64(m.Ratio()))
	}
	return m, nil
}

// peerOurs trains this library's model.
func peerOurs(ctx context.Context, s *settings, ps peerSetup, cfg train.Config, d *datasets.Data) (*report.PeerSide, error) {
	var fwd, bwd, met, batches float64
	opts := &train.Options{OnEpoch: func(e *train.EpochMetrics) {
		n := float64(e.Batches - e.Skipped)
		fwd += e.FwdItersMean * n
		bwd += e.BwdItersMean * n
		met += e.CertMetFrac * float64(e.Forward.Solves)
		batches += n
		s.logf("peer: %s: deq epoch %d: %.2f s, test %.4f, %.1f forward and %.1f backward iterations per batch",
			ps.model, e.Epoch, e.TrainSeconds, e.TestAcc, e.FwdItersMean, e.BwdItersMean)
	}}
	tr, err := train.New(cfg, d.Train, d.Test, opts)
	if err != nil {
		return nil, fmt.Errorf("bench: peer section (%s): %w", ps.model, err)
	}
	res, err := tr.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: peer section (%s): %w", ps.model, err)
	}
	side := &report.PeerSide{BLAS: blasimpl.Name, DType: "float64", Backward: cfg.Backward.Mode.String()}
	if cfg.Model.Precision == layers.Float32 {
		side.DType = "float32 cell products, float64 state"
	}
	var phases, cpu []report.Phases
	for _, e := range res.Epochs {
		side.EpochSeconds = append(side.EpochSeconds, e.TrainSeconds)
		side.EpochTestAcc = append(side.EpochTestAcc, e.TestAcc)
		side.SecondsPerEpoch += e.TrainSeconds / float64(len(res.Epochs))
		side.TestAcc = e.TestAcc
		phases = append(phases, reportPhases(e.Phases))
		cpu = append(cpu, reportPhases(e.PhaseCPU))
	}
	side.Phases = meanPhases(phases)
	if cputime.Supported {
		side.PhaseCPU = meanPhases(cpu)
	}
	if batches > 0 {
		side.FwdIters, side.BwdIters, side.FwdMet = fwd/batches, bwd/batches, met/batches
	}
	return side, nil
}

// peerSummary describes the model and training of cfg (defaults filled
// in) for the report.
func peerSummary(cfg train.Config) string {
	m := cfg.Model
	var arch string
	if m.Cell == train.ConvCell {
		norm := "no normalisation"
		if m.Groups > 0 {
			norm = fmt.Sprintf("GroupNorm (%d groups)", m.Groups)
		}
		enc := "a stride-2 3×3 conv encoder"
		if m.EncoderLayers > 1 {
			enc = fmt.Sprintf("a conv encoder of %d blocks (stride-2 3×3, then %d stride-1 3×3)", m.EncoderLayers, m.EncoderLayers-1)
		}
		arch = fmt.Sprintf("Conv DEQ (`deq train --cell conv` defaults, the backward mode as below): %s to %d×14×14, cell relu(W∗z + u + b), %s, the ℓ2 operator norm of W's convolution projected onto %g by power iteration after every step (ours also enforces a Fourier bound every %d steps), 2×2 average pooling and a linear readout.",
			enc, m.Channels, norm, m.Gamma, m.ExactEvery)
	} else {
		arch = fmt.Sprintf("Dense DEQ: encoder relu(x·We + be) of %d features, cell relu(z·W + e·U + b) of %d hidden units, the spectral norm of W projected onto %g after every step, a linear readout.",
			m.Encoder, m.Hidden, m.Gamma)
	}
	if m.Precision != layers.Float64 {
		arch += fmt.Sprintf(" Ours computes the cell's matrix products in %v.", m.Precision)
	}
	if cfg.Split > 1 {
		arch += fmt.Sprintf(" Ours solves each batch as %d concurrent parts of its examples, each with its own forward and adjoint solves, their certificates merged (`--split %d`).", cfg.Split, cfg.Split)
	}
	backward := fmt.Sprintf("implicit backward %s (tolerance %g relative to the first residual, at most %d iterations)",
		cfg.Backward.Solver.Method, cfg.Backward.Solver.Tol, cfg.Backward.Solver.MaxIter)
	if cfg.Backward.Mode == deq.JacobianFree {
		backward = "Jacobian-free backward (one cell step at z*, no adjoint solve: TorchDEQ's default one-step gradient)"
	}
	return fmt.Sprintf("%s Forward %s (tolerance %g on the largest per-example ℓ2 residual, at most %d iterations), %s; evaluation at tolerance %g, %d iterations. Batch %d, Adam %g with a cosine schedule, gradient clipping at %g.",
		arch, cfg.Forward.Method, cfg.Forward.Tol, cfg.Forward.MaxIter, backward,
		cfg.Eval.Tol, cfg.Eval.MaxIter, cfg.BatchSize, cfg.LR, cfg.ClipNorm)
}

// peerArgs returns the peer's command-line arguments mirroring cfg
// (defaults filled in).
func peerArgs(model string, cfg train.Config, threads int) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i := strconv.Itoa
	args := []string{
		"--epochs", i(cfg.Epochs), "--batch", i(cfg.BatchSize), "--eval-batch", i(cfg.EvalBatchSize),
		"--lr", f(cfg.LR), "--clip", f(cfg.ClipNorm), "--gamma", f(cfg.Model.Gamma),
		"--tol", f(cfg.Forward.Tol), "--max-iter", i(cfg.Forward.MaxIter),
		"--backward-tol", f(cfg.Backward.Solver.Tol), "--backward-iter", i(cfg.Backward.Solver.MaxIter),
		"--threads", i(threads), "--seed", strconv.FormatUint(cfg.Seed&math.MaxUint32, 10), // numpy takes 32-bit seeds
	}
	if cfg.Backward.Mode == deq.JacobianFree {
		args = append(args, "--backward", "jacobian-free")
	}
	if isConv(model) {
		return append(args, "--model", "conv", "--conv-style", "deq", "--channels", i(cfg.Model.Channels), "--groups", i(cfg.Model.Groups),
			"--encoder-layers", i(max(cfg.Model.EncoderLayers, 1)))
	}
	return append(args, "--model", model, "--hidden", i(cfg.Model.Hidden), "--encoder", i(cfg.Model.Encoder))
}

// peerMeta is the meta.json of a peer data directory.
type peerMeta struct {
	Rows    int `json:"rows"`
	Cols    int `json:"cols"`
	Train   int `json:"train"`
	Test    int `json:"test"`
	Classes int `json:"classes"`
}

// writePeerData writes d to dir as the peer reads it: meta.json,
// train-x.f32 and test-x.f32 (little-endian float32 images, standardised
// with the statistics of mode fitted on the training set, as train.New
// standardises them) and train-y.u8 and test-y.u8 (labels).
func writePeerData(dir string, d *datasets.Data, mode datasets.Normalization) error {
	norm, err := datasets.FitNormalizer(d.Train, mode)
	if err != nil {
		return err
	}
	meta := peerMeta{Rows: d.Train.Rows, Cols: d.Train.Cols, Train: d.Train.Len(), Test: d.Test.Len(), Classes: d.Train.Classes}
	js, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), js, 0o644); err != nil {
		return err
	}
	for _, set := range []struct {
		name string
		ds   *datasets.Dataset
	}{{"train", d.Train}, {"test", d.Test}} {
		c := *set.ds
		c.X = append([]float64(nil), c.X...)
		if err := norm.Apply(&c); err != nil {
			return err
		}
		x := make([]byte, 4*len(c.X))
		for i, v := range c.X {
			binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(float32(v)))
		}
		y := make([]byte, len(c.Y))
		for i, v := range c.Y {
			if v < 0 || v > 255 {
				return fmt.Errorf("%s: label %d does not fit a byte", c.Name, v)
			}
			y[i] = byte(v)
		}
		if err := os.WriteFile(filepath.Join(dir, set.name+"-x.f32"), x, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, set.name+"-y.u8"), y, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// peerRunner runs the peer script with a Python interpreter that has
// torch.
type peerRunner struct {
	python, script, torch string
}

// peerPythons are the interpreters tried, in order: python3 on PATH, then
// the system's (Debian's python3-torch installs for it, while PATH may
// lead to another Python).
func peerPythons() []string {
	var out []string
	if p, err := exec.LookPath("python3"); err == nil {
		out = append(out, p)
	}
	return append(out, "/usr/bin/python3")
}

// findPeer returns the peer runner, or a one-line note saying why the peer
// cannot run.
func findPeer(ctx context.Context) (*peerRunner, string) {
	script, err := findPeerScript()
	if err != nil {
		return nil, err.Error()
	}
	var tried []string
	for _, py := range peerPythons() {
		if _, err := os.Stat(py); err != nil {
			continue
		}
		tried = append(tried, py)
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		out, err := exec.CommandContext(pctx, py, "-c", "import numpy, torch; print(torch.__version__)").Output()
		cancel()
		if err == nil {
			return &peerRunner{python: py, script: script, torch: strings.TrimSpace(string(out))}, ""
		}
	}
	if len(tried) == 0 {
		return nil, "no python3 found (on PATH or /usr/bin/python3)"
	}
	return nil, fmt.Sprintf("no python3 with torch and numpy (tried %s; Debian's python3-torch provides them)", strings.Join(tried, ", "))
}

// findPeerScript returns the path of PeerScript in the working directory
// or the nearest parent that has it.
func findPeerScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, filepath.FromSlash(PeerScript))
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("%s not found in the working directory or its parents (run from the repository)", PeerScript)
		}
		dir = up
	}
}

// peerEpoch is one epoch line of the peer's output; peerFinal its summary
// line.
type peerEpoch struct {
	Epoch        int     `json:"epoch"`
	TrainSeconds float64 `json:"train_seconds"`
	TestAcc      float64 `json:"test_acc"`
	FwdIters     float64 `json:"fwd_iters_mean"`
	BwdIters     float64 `json:"bwd_iters_mean"`
	FwdMet       float64 `json:"fwd_met_frac"`
	// Phases is the epoch's seconds by phase; nil from a script that
	// does not time them.
	Phases *report.Phases `json:"phases"`
	// PhaseCPU is the epoch's processor seconds by phase; nil from a
	// script that does not report them.
	PhaseCPU *report.Phases `json:"phase_cpu"`
}

type peerFinal struct {
	Final           bool    `json:"final"`
	BLAS            string  `json:"blas"`
	DType           string  `json:"dtype"`
	Backward        string  `json:"backward"`
	SecondsPerEpoch float64 `json:"seconds_per_epoch"`
	TestAcc         float64 `json:"test_acc"`
}

// train runs the peer on the data in dir with args, passing each output
// line to progress, and returns its results.
func (r *peerRunner) train(ctx context.Context, dir string, args []string, progress func(string)) (*report.PeerSide, error) {
	cmd := exec.CommandContext(ctx, r.python, append([]string{r.script, "--data", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	side, perr := parsePeer(out, progress)
	werr := cmd.Wait()
	if werr != nil {
		return nil, fmt.Errorf("%v: %s", werr, lastLine(stderr.String()))
	}
	return side, perr
}

// parsePeer reads the peer's output: one JSON object per epoch, then the
// summary with "final": true.
func parsePeer(r interface{ Read([]byte) (int, error) }, progress func(string)) (*report.PeerSide, error) {
	side := &report.PeerSide{}
	var fin *peerFinal
	var phases, cpu []report.Phases
	timed, cpuTimed := true, true // every epoch line has its phases, its processor times
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		if progress != nil {
			progress(line)
		}
		var f peerFinal
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			return nil, fmt.Errorf("peer output %q: %w", line, err)
		}
		if f.Final {
			fin = &f
			continue
		}
		var e peerEpoch
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("peer output %q: %w", line, err)
		}
		side.EpochSeconds = append(side.EpochSeconds, e.TrainSeconds)
		side.EpochTestAcc = append(side.EpochTestAcc, e.TestAcc)
		side.FwdIters += e.FwdIters
		side.BwdIters += e.BwdIters
		side.FwdMet += e.FwdMet
		if e.Phases == nil {
			timed = false
		} else {
			phases = append(phases, *e.Phases)
		}
		if e.PhaseCPU == nil {
			cpuTimed = false
		} else {
			cpu = append(cpu, *e.PhaseCPU)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	n := len(side.EpochSeconds)
	if fin == nil || n == 0 {
		return nil, errors.New("the peer printed no epoch or no summary")
	}
	side.FwdIters /= float64(n)
	side.BwdIters /= float64(n)
	side.FwdMet /= float64(n)
	side.SecondsPerEpoch, side.TestAcc, side.BLAS, side.DType = fin.SecondsPerEpoch, fin.TestAcc, fin.BLAS, fin.DType
	side.Backward = cmp.Or(fin.Backward, "implicit") // scripts before the option differentiated implicitly
	if timed {
		side.Phases = meanPhases(phases)
		if cpuTimed {
			side.PhaseCPU = meanPhases(cpu)
		}
	}
	return side, nil
}

// reportPhases converts train's phases to the report's.
func reportPhases(p train.PhaseSeconds) report.Phases {
	return report.Phases{Encode: p.Encode, Solve: p.Solve, Readout: p.Readout, Backward: p.Backward, Step: p.Step, Eval: p.Eval}
}

// meanPhases returns the mean of the epochs' phases, nil for none.
func meanPhases(ps []report.Phases) *report.Phases {
	if len(ps) == 0 {
		return nil
	}
	var m report.Phases
	n := float64(len(ps))
	for _, p := range ps {
		m.Encode += p.Encode / n
		m.Solve += p.Solve / n
		m.Readout += p.Readout / n
		m.Backward += p.Backward / n
		m.Step += p.Step / n
		m.Eval += p.Eval / n
	}
	return &m
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// unavailableNote is the report's note for a model whose data set could
// not be opened: a data set that is not installed names the command that
// fetches it (the command's flag, not the library's field).
func unavailableNote(name string, err error) string {
	var ni *datasets.NotInstalledError
	if errors.As(err, &ni) {
		return fmt.Sprintf("data set %s is not installed (searched %s); fetch it once with deq train --data %s --download", ni.Name, strings.Join(ni.Dirs, ", "), ni.Name)
	}
	return fmt.Sprintf("data set %s unavailable (%v)", name, err)
}
