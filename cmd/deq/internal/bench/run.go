package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/internal/blasimpl"
)

// Run runs the sections of cfg and returns their report. It honours ctx
// between and within runs. Sample counts depend only on cfg (not on
// Workers or the machine) unless a run hits Config.MaxRunTime, which the
// report counts; timings depend on the machine.
func Run(ctx context.Context, cfg Config) (*report.Report, error) {
	s, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &report.Report{
		Version: report.ReportVersion, Command: s.Command, Started: start.UTC().Truncate(time.Second),
		Machine: machine(), Config: s.public(),
	}
	// The sections run one after the other, in this order; the first error
	// stops the run.
	for _, section := range []func() error{
		func() error { return runSection(ctx, s, sectionStochastic, stochastic, &rep.Stochastic) },
		func() error { return runSection(ctx, s, sectionOverhead, overhead, &rep.Overhead) },
		func() error { return runSection(ctx, s, sectionThroughput, throughput, &rep.Throughput) },
		func() error { return runSection(ctx, s, sectionForward, forward, &rep.Forward) },
		func() error { return runSection(ctx, s, sectionTraining, training, &rep.Training) },
		func() error { return runSection(ctx, s, sectionRegime, regime, &rep.Regime) },
		func() error { return runSection(ctx, s, sectionPeer, peer, &rep.Peer) },
	} {
		if err := section(); err != nil {
			return nil, err
		}
	}
	rep.Targets = report.Targets(rep)
	rep.Machine.LoadEnd = loadAverage()
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// runSection stores in dst what run measures when section is one of the
// sections s runs.
func runSection[R any](ctx context.Context, s *settings, section string, run func(context.Context, *settings) (*R, error), dst **R) error {
	if !s.run[section] {
		return nil
	}
	r, err := run(ctx, s)
	*dst = r
	return err
}

// public returns the settings for the report.
func (s *settings) public() report.Settings {
	return report.Settings{
		Quick: s.Quick, Sections: s.Sections, Problems: s.Problems, Seeds: s.Seeds, Seed: s.Seed, Eps: s.Eps,
		SampleScale: s.SampleScale, NoiseLevel: s.NoiseLevel, StartDist: s.StartDistance, Delta: s.Delta,
		BudgetFactor: s.BudgetFactor, Budget: s.budget(), MaxRunTime: s.MaxRunTime.String(),
		SigmaDraws: s.SigmaDraws, OverheadRuns: s.OverheadRuns, TimeTarget: s.TimeTarget.String(),
		Shape: s.Shape, Workers: s.Workers, Data: s.dataName(),
	}
}

// machine describes the running machine.
func machine() report.Machine {
	m := report.Machine{
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPU: cpuModel(), NumCPU: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(), BLAS: blasimpl.Name,
		Blas64: fmt.Sprintf("%T", blas64.Implementation()), Gorgonia: fmt.Sprintf("%T", G.WhichBLAS()),
		LoadStart: loadAverage(),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		m.Revision = vcsRevision(bi.Settings)
	}
	if m.Revision == "" {
		m.Revision = gitDescribe()
	}
	return m
}

// cpuModel returns the CPU's model name from /proc/cpuinfo, or "" where
// unknown.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
