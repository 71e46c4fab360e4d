package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deqgo/deq/cmd/deq/internal/bench"
	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/layers"
)

// benchFlags are the flags of `deq bench`.
type benchFlags struct {
	out         string
	markdown    string
	quick       bool
	seeds       int
	seed        uint64
	only        []string
	problems    []string
	peerModels  []string
	peerThreads int
	// peerSplit is our dense side's train.Config.Split in the peer section.
	peerSplit int
	// peerPrecision is our side's precision in the peer section.
	peerPrecision layers.Precision
	sampleScale   float64
	workers       int
	data          string
}

func newBenchCmd() *cobra.Command {
	var f benchFlags
	cmd := newCommand("bench [flags]",
		"Run the benchmarks and write JSON, PNG plots and a Markdown report",
		`Bench runs the benchmark sections of cmd/deq/internal/bench: samples the stochastic
solvers need to reach a true residual ε (stochastic), VR-GHAL's overhead
against its oracle time (overhead), DEQ cell GFLOP/s against a plain
matrix multiply (throughput), function evaluations of the deterministic
solvers on a trained DEQ (forward; the model is trained once and cached in
--out) and GFLOP/s and memory of training epochs (training). It writes bench.json and the PNG plots into
--out and the Markdown report to --markdown (default: --out/BENCHMARKS.md),
which it replaces; the report's header names the commit, the BLAS, the
machine and its load average.
Sample counts are reproducible from the flags; timings depend on the machine.
--quick is a smoke run that finishes in under a minute.`,
		f.run)
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "bench-results", "directory for bench.json and the plots")
	fl.StringVar(&f.markdown, "markdown", "", "path of the Markdown report (default: --out/BENCHMARKS.md)")
	fl.BoolVar(&f.quick, "quick", false, "smoke run: 3 seeds, ε down to 1e-2, small shapes (under a minute)")
	fl.IntVar(&f.seeds, "seeds", 0, "solver seeds per method and ε (0: 20, or 3 with --quick)")
	fl.Uint64Var(&f.seed, "seed", bench.DefaultSeed, "base seed of problems, σ estimates and solvers")
	fl.StringSliceVar(&f.only, "only", nil, "run only these sections: "+strings.Join(bench.Sections(), ", ")+" (comma-separated or repeated)")
	fl.StringSliceVar(&f.problems, "problems", nil, "stochastic section: only these problems: "+strings.Join(bench.ProblemNames(), ", "))
	fl.StringSliceVar(&f.peerModels, "peer-models", nil, "peer section: only these models: "+strings.Join(bench.PeerModels(), ", "))
	fl.IntVar(&f.peerSplit, "peer-split", bench.DefaultPeerSplit, "peer section: solve each batch of our dense model as N concurrent parts (deq train --split; 1: one solve per batch)")
	fl.IntVar(&f.peerThreads, "peer-threads", bench.DefaultPeerThreads, "peer section: torch threads of the PyTorch peer (ours runs OpenBLAS on one thread)")
	fl.Var(&textValue{&f.peerPrecision}, "peer-precision", "peer section: precision of our cell's matrix products, float64 or float32 (default: deq train's, float32 for the conv model and float64 for the dense one)")
	fl.Float64Var(&f.sampleScale, "sample-scale", bench.DefaultSampleScale, "VR-GHAL's SampleScale: multiplier on the paper's sample sizes (> 0)")
	fl.StringVar(&f.data, "data", "", "data set of the forward and training sections (default: fashion-mnist if installed, else synthetic)")
	fl.IntVar(&f.workers, "workers", 0, "parallel solves (0: GOMAXPROCS); results do not depend on it")
	return cmd
}

// run runs `deq bench` with the flags.
func (f *benchFlags) run(cmd *cobra.Command) error {
	cfg, err := f.config(cmd)
	if err != nil {
		return err
	}
	cfg.Progress = cmd.ErrOrStderr()
	rep, err := bench.Run(cmd.Context(), cfg)
	if err != nil {
		return runtimeError{err}
	}
	files, err := report.Write(rep, f.out, f.markdown)
	if err != nil {
		return runtimeError{err}
	}
	return printBenchSummary(cmd.OutOrStdout(), rep, files)
}

// config checks the flags and returns the bench configuration. Its errors
// are usage errors naming the flag.
func (f benchFlags) config(cmd *cobra.Command) (bench.Config, error) {
	switch {
	case f.out == "":
		return bench.Config{}, usagef("--out must not be empty")
	}
	if err := checkOutputDir("out", f.out); err != nil {
		return bench.Config{}, err
	}
	if f.markdown != "" {
		// The report's directory is created as --out is.
		if st, err := os.Stat(f.markdown); err == nil && st.IsDir() {
			return bench.Config{}, usagef("--markdown %s is a directory, not a file", f.markdown)
		}
		if err := checkOutputDir("markdown", filepath.Dir(f.markdown)); err != nil {
			return bench.Config{}, err
		}
	}
	switch {
	case f.seeds < 0:
		return bench.Config{}, usagef("--seeds = %d must not be negative", f.seeds)
	case f.seed == 0:
		return bench.Config{}, usagef("--seed must not be 0")
	case !(f.sampleScale > 0) || f.sampleScale > 1e6:
		return bench.Config{}, usagef("--sample-scale = %v must lie in (0, 1e6]", f.sampleScale)
	case f.workers < 0:
		return bench.Config{}, usagef("--workers = %d must not be negative", f.workers)
	case f.peerThreads < 1:
		return bench.Config{}, usagef("--peer-threads = %d must be positive", f.peerThreads)
	case f.peerSplit < 1:
		return bench.Config{}, usagef("--peer-split = %d must be positive", f.peerSplit)
	}
	for _, s := range f.only {
		if !slices.Contains(bench.Sections(), s) {
			return bench.Config{}, usagef("--only: unknown section %q (want %s)", s, strings.Join(bench.Sections(), ", "))
		}
	}
	for _, p := range f.problems {
		if !slices.Contains(bench.ProblemNames(), p) {
			return bench.Config{}, usagef("--problems: unknown problem %q (want %s)", p, strings.Join(bench.ProblemNames(), ", "))
		}
	}
	for _, m := range f.peerModels {
		if !slices.Contains(bench.PeerModels(), m) {
			return bench.Config{}, usagef("--peer-models: unknown model %q (want %s)", m, strings.Join(bench.PeerModels(), ", "))
		}
	}
	return bench.Config{
		Quick: f.quick, Sections: f.only, Problems: f.problems, PeerModels: f.peerModels, PeerThreads: f.peerThreads, PeerSplit: f.peerSplit, PeerPrecision: f.peerPrecision, Seeds: f.seeds, Seed: f.seed,
		SampleScale: f.sampleScale, Workers: f.workers, Command: reproduceCommand(cmd),
		Data: f.data, CacheDir: f.out,
	}, nil
}

// reproduceCommand returns the command line that reproduces the run: the
// flags that change results, not --out, --markdown or --workers.
func reproduceCommand(cmd *cobra.Command) string {
	parts := []string{"deq bench"}
	for _, name := range []string{"quick", "seeds", "seed", "only", "problems", "peer-models", "peer-threads", "peer-split", "peer-precision", "sample-scale", "data"} {
		fl := cmd.Flags().Lookup(name)
		if fl == nil || !fl.Changed {
			continue
		}
		switch name {
		case "quick":
			parts = append(parts, "--quick")
		case "only", "problems", "peer-models":
			parts = append(parts, "--"+name+" "+strings.Trim(fl.Value.String(), "[]"))
		default:
			parts = append(parts, "--"+name+" "+fl.Value.String())
		}
	}
	return strings.Join(parts, " ")
}

// printBenchSummary prints the targets and the files written.
func printBenchSummary(w io.Writer, rep *report.Report, files []string) error {
	for _, t := range rep.Targets {
		verdict := "MISSED"
		if t.Met {
			verdict = "met"
		}
		ge := ""
		if t.LowerBound {
			ge = "≥ "
		}
		fmt.Fprintf(w, "target %s: %s%.3g (threshold %g): %s\n", t.Name, ge, float64(t.Value), t.Threshold, verdict)
	}
	fmt.Fprintf(w, "%.1f s; wrote %s\n", rep.Seconds, strings.Join(files, ", "))
	return nil
}
