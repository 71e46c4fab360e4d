package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// workload is one operation the throughput section times, with its
// reference: plain matrix multiplies of the same shapes and FLOPs.
type workload struct {
	name  string
	flops float64
	op    func() error
	ref   string
	refOp func() error
}

// workloadFunc builds a workload for a dense cell shape, seeding its data
// from seed. Adding a workload to the section, such as a training epoch, is
// writing one workloadFunc and listing it in workloadFuncs.
type workloadFunc func(sh report.Shape, seed uint64) (workload, error)

// workloadFuncs lists the workloads of the throughput section.
func workloadFuncs() []workloadFunc {
	return []workloadFunc{denseForward, denseEval, denseVJPHidden, denseVJP}
}

// denseSetup returns a dense cell's evaluator for sh with its input set,
// and random z and g.
func denseSetup(sh report.Shape, seed uint64) (layers.Evaluator, []float64, []float64, []float64, error) {
	cell, err := layers.NewDense(layers.DenseConfig{Hidden: sh.Hidden, Input: sh.Input, Seed: seed})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ev, err := cell.Evaluator(sh.Batch)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x7468))
	x := randn(rng, sh.Batch*sh.Input)
	if err := ev.SetInput(x); err != nil {
		return nil, nil, nil, nil, err
	}
	return ev, x, randn(rng, ev.Len()), randn(rng, ev.Len()), nil
}

func randn(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

// gemms returns a function computing C_i = op(A_i)·op(B_i) with blas64 for
// each product (m, k, n, transA, transB) on random data, and its FLOPs.
func gemms(seed uint64, prods ...[5]int) (func() error, float64) {
	rng := rand.New(rand.NewPCG(seed, 0x6765))
	type prod struct {
		ta, tb blas.Transpose
		a, b   blas64.General
		c      blas64.General
	}
	var ps []prod
	flops := 0.0
	for _, p := range prods {
		m, k, n := p[0], p[1], p[2]
		q := prod{ta: blas.NoTrans, tb: blas.NoTrans}
		ar, ac := m, k
		if p[3] != 0 {
			q.ta, ar, ac = blas.Trans, k, m
		}
		br, bc := k, n
		if p[4] != 0 {
			q.tb, br, bc = blas.Trans, n, k
		}
		q.a = blas64.General{Rows: ar, Cols: ac, Stride: ac, Data: randn(rng, ar*ac)}
		q.b = blas64.General{Rows: br, Cols: bc, Stride: bc, Data: randn(rng, br*bc)}
		q.c = blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)}
		ps = append(ps, q)
		flops += 2 * float64(m) * float64(k) * float64(n)
	}
	return func() error {
		for _, q := range ps {
			blas64.Gemm(q.ta, q.tb, 1, q.a, q.b, 0, q.c)
		}
		return nil
	}, flops
}

// denseWorkload builds the workload name on a dense cell of shape sh: op
// returns the timed operation given the cell's evaluator with its input x
// set and random z and g; the reference ref runs the products prods.
func denseWorkload(sh report.Shape, seed uint64, name, ref string, prods [][5]int, op func(ev layers.Evaluator, x, z, g []float64) func() error) (workload, error) {
	ev, x, z, g, err := denseSetup(sh, seed)
	if err != nil {
		return workload{}, err
	}
	refOp, flops := gemms(seed, prods...)
	return workload{name: name, flops: flops, op: op(ev, x, z, g), ref: ref, refOp: refOp}, nil
}

// denseForward is f(z, x) = σ(zW + xU + b) from scratch: SetInput (xU + b)
// and the evaluation, 2·n·h·(h + in) FLOPs.
func denseForward(sh report.Shape, seed uint64) (workload, error) {
	n, h, in := sh.Batch, sh.Hidden, sh.Input
	return denseWorkload(sh, seed, "dense forward f(z, x) (SetInput + EvalExact)", "z·W + x·U",
		[][5]int{{n, h, h}, {n, in, h}},
		func(ev layers.Evaluator, x, z, _ []float64) func() error {
			dst := make([]float64, ev.Len())
			return func() error {
				if err := ev.SetInput(x); err != nil {
					return err
				}
				return ev.EvalExact(dst, z)
			}
		})
}

// denseEval is the solver's oracle call with the input term cached:
// σ(zW + c), 2·n·h² FLOPs.
func denseEval(sh report.Shape, seed uint64) (workload, error) {
	n, h := sh.Batch, sh.Hidden
	return denseWorkload(sh, seed, "dense oracle Eval (xU + b cached)", "z·W",
		[][5]int{{n, h, h}},
		func(ev layers.Evaluator, _, z, _ []float64) func() error {
			dst := make([]float64, ev.Len())
			return func() error {
				_, err := ev.Eval(dst, z, solver.Sample{Size: 1})
				return err
			}
		})
}

// denseVJPHidden is (∂f/∂z)ᵀg by the fused path: the forward zW (for σ′,
// kept between calls at the same z and W) and the product (g ⊙ σ')Wᵀ,
// 4·n·h² FLOPs counted.
func denseVJPHidden(sh report.Shape, seed uint64) (workload, error) {
	n, h := sh.Batch, sh.Hidden
	return denseWorkload(sh, seed, "dense VJPHidden (∂f/∂z)ᵀg (fused)", "z·W, g·Wᵀ",
		[][5]int{{n, h, h}, {n, h, h, 0, 1}},
		func(ev layers.Evaluator, _, z, g []float64) func() error {
			dst := make([]float64, ev.Len())
			return func() error {
				_, err := ev.VJPHidden(dst, z, g, solver.Sample{Size: 1})
				return err
			}
		})
}

// denseVJP is the full VJP with parameter gradients: the forward zW + xU and
// the products for ∂z, ∂x, ∂W and ∂U, 6·n·h·(h + in) FLOPs.
func denseVJP(sh report.Shape, seed uint64) (workload, error) {
	n, h, in := sh.Batch, sh.Hidden, sh.Input
	return denseWorkload(sh, seed, "dense VJP ∂z, ∂x, ∂θ (fused)", "the 6 products of forward and backward",
		[][5]int{
			{n, h, h}, {n, in, h}, // forward
			{n, h, h, 0, 1}, {n, h, in, 0, 1}, // ∂z = G·Wᵀ, ∂x = G·Uᵀ
			{h, n, h, 1, 0}, {in, n, h, 1, 0}, // ∂W = Zᵀ·G, ∂U = Xᵀ·G
		},
		func(ev layers.Evaluator, _, z, g []float64) func() error {
			dz, dx := make([]float64, ev.Len()), make([]float64, n*in)
			return func() error { return ev.VJP(dz, dx, z, g) }
		})
}

// timing is the measured cost of an operation.
type timing struct {
	secondsPerOp, bytesPerOp, allocsPerOp float64
}

// measure times op: one warm-up call, then reps repetitions of at least
// target each; it returns the fastest repetition's time per call and the
// allocations per call of the first.
func measure(ctx context.Context, op func() error, target time.Duration, reps int) (timing, error) {
	if err := op(); err != nil {
		return timing{}, err
	}
	t := timing{secondsPerOp: math.Inf(1)}
	for r := range reps {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		var before, after runtime.MemStats
		if r == 0 {
			runtime.ReadMemStats(&before)
		}
		n := 0
		start := time.Now()
		for time.Since(start) < target || n == 0 {
			if err := op(); err != nil {
				return t, err
			}
			n++
		}
		el := time.Since(start)
		if r == 0 {
			runtime.ReadMemStats(&after)
			t.bytesPerOp = float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
			t.allocsPerOp = float64(after.Mallocs-before.Mallocs) / float64(n)
		}
		t.secondsPerOp = math.Min(t.secondsPerOp, el.Seconds()/float64(n))
	}
	return t, nil
}

// throughput runs the throughput section.
func throughput(ctx context.Context, s *settings) (*report.ThroughputReport, error) {
	rep := &report.ThroughputReport{Shape: s.Shape}
	for i, wf := range workloadFuncs() {
		w, err := wf(s.Shape, deriveSeed(s.Seed, 4, uint64(i)))
		if err != nil {
			return nil, err
		}
		cell, err := measure(ctx, w.op, s.TimeTarget, report.ThroughputReps)
		if err != nil {
			return nil, fmt.Errorf("bench: throughput of %s: %w", w.name, err)
		}
		ref, err := measure(ctx, w.refOp, s.TimeTarget, report.ThroughputReps)
		if err != nil {
			return nil, fmt.Errorf("bench: throughput of the reference of %s: %w", w.name, err)
		}
		r := report.WorkloadResult{
			Name: w.name, FLOPs: w.flops, SecondsPerOp: cell.secondsPerOp,
			GFLOPS: w.flops / cell.secondsPerOp / 1e9, BytesPerOp: cell.bytesPerOp, AllocsPerOp: cell.allocsPerOp,
			Reference: w.ref, RefGFLOPS: w.flops / ref.secondsPerOp / 1e9,
		}
		r.Efficiency = r.GFLOPS / r.RefGFLOPS
		s.logf("throughput: %s: %.2f GFLOP/s (reference %.2f GFLOP/s)", w.name, r.GFLOPS, r.RefGFLOPS)
		rep.Workloads = append(rep.Workloads, r)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rep.Memory = report.Memory{HeapSys: ms.HeapSys, TotalAlloc: ms.TotalAlloc, MaxRSS: maxRSS()}
	return rep, nil
}
