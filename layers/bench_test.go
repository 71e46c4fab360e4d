package layers

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/deqgo/deq/internal/blasimpl"
	"github.com/deqgo/deq/solver"
)

// Benchmark shapes: a batch of 256 examples with 128 hidden and 128 input
// features; the mean-field cell has 256 units and samples 32 of them. The
// experts cell has many small terms: 4096 experts over 16 hidden and 16
// input features, a batch of 64, minibatches of 64 experts.
const (
	benchBatch  = 256
	benchHidden = 128
	benchUnits  = 256
	benchSample = 32

	benchMixBatch  = 64
	benchMixHidden = 16
	benchMixTerms  = 4096
	benchMixSample = 64
)

// benchDensePrec returns the dense benchmark cell in precision p (benchDense:
// Float64). The dense benchmarks install the BLAS that deq's command uses
// (blasimpl.Use), as the conv benchmarks do, so that the two precisions
// compare on the same BLAS.
func benchDensePrec(p Precision) Cell {
	blasimpl.Use()
	return mustCell(NewDense(DenseConfig{Hidden: benchHidden, Input: benchHidden, Precision: p, Seed: 1}))
}

func benchDense() Cell { return benchDensePrec(Float64) }

func benchMeanField() Cell {
	return mustCell(NewMeanField(MeanFieldConfig{Hidden: benchHidden, Input: benchHidden, Units: benchUnits, Seed: 1}))
}

func benchExperts() Cell {
	return mustCell(NewExperts(ExpertsConfig{Hidden: benchMixHidden, Input: benchMixHidden, Experts: benchMixTerms, Seed: 1}))
}

// benchOp times one evaluator operation on a batch of benchBatch examples
// (see benchOpN).
func benchOp(b *testing.B, c Cell, op string, size int) { benchOpN(b, c, benchBatch, op, size) }

// benchOpN times one evaluator operation on a batch of n examples: "eval"
// (the oracle with Sample size, size 0 meaning exact), "vjp-hidden"
// (likewise) or "vjp" (the full exact VJP with parameter gradients), the
// VJPs on the default fused path; "vjp-hidden-graph" and "vjp-graph" time
// the same VJPs computed by the gorgonia graphs.
func benchOpN(b *testing.B, c Cell, n int, op string, size int) {
	e, err := c.Evaluator(n)
	if err != nil {
		b.Fatal(err)
	}
	if graph, ok := strings.CutSuffix(op, "-graph"); ok {
		op = graph
		setGraphPath(e, true)
		defer setGraphPath(e, false)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if err := e.SetInput(randVec(rng, n*c.Shape().InputLen(), 1)); err != nil {
		b.Fatal(err)
	}
	z := randVec(rng, e.Len(), 1)
	g := randVec(rng, e.Len(), 1)
	dst := make([]float64, e.Len())
	if size == 0 {
		size = e.Terms()
	}
	s := solver.Sample{Seed: 1, Size: size}
	run := func() error {
		switch op {
		case "eval":
			_, err := e.Eval(dst, z, s)
			return err
		case "vjp-hidden":
			_, err := e.VJPHidden(dst, z, g, s)
			return err
		default:
			return e.VJP(dst, nil, z, g)
		}
	}
	if err := run(); err != nil { // build the graphs outside the timing
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDenseForward(b *testing.B)        { benchOp(b, benchDense(), "eval", 0) }
func BenchmarkDenseVJPHidden(b *testing.B)      { benchOp(b, benchDense(), "vjp-hidden", 0) }
func BenchmarkDenseVJPHiddenGraph(b *testing.B) { benchOp(b, benchDense(), "vjp-hidden-graph", 0) }
func BenchmarkDenseVJP(b *testing.B)            { benchOp(b, benchDense(), "vjp", 0) }
func BenchmarkDenseVJPGraph(b *testing.B)       { benchOp(b, benchDense(), "vjp-graph", 0) }
func BenchmarkDenseForwardFloat32(b *testing.B) {
	benchOp(b, benchDensePrec(Float32), "eval", 0)
}
func BenchmarkDenseVJPHiddenFloat32(b *testing.B) {
	benchOp(b, benchDensePrec(Float32), "vjp-hidden", 0)
}
func BenchmarkDenseVJPFloat32(b *testing.B) { benchOp(b, benchDensePrec(Float32), "vjp", 0) }

// The Float32 dense products split the batch's rows between the cores
// (denseSplitMin); these run the same products on one core, for the
// comparison.
func BenchmarkDenseForwardFloat32OneCore(b *testing.B) {
	oneCore(b)
	benchOp(b, benchDensePrec(Float32), "eval", 0)
}
func BenchmarkDenseVJPHiddenFloat32OneCore(b *testing.B) {
	oneCore(b)
	benchOp(b, benchDensePrec(Float32), "vjp-hidden", 0)
}

// oneCore sets GOMAXPROCS to 1 until b ends.
func oneCore(b *testing.B) {
	prev := runtime.GOMAXPROCS(1)
	b.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

func BenchmarkMeanFieldForward(b *testing.B) { benchOp(b, benchMeanField(), "eval", 0) }
func BenchmarkMeanFieldForwardSampled(b *testing.B) {
	benchOp(b, benchMeanField(), "eval", benchSample)
}
func BenchmarkMeanFieldVJPHidden(b *testing.B) { benchOp(b, benchMeanField(), "vjp-hidden", 0) }
func BenchmarkMeanFieldVJPHiddenGraph(b *testing.B) {
	benchOp(b, benchMeanField(), "vjp-hidden-graph", 0)
}
func BenchmarkMeanFieldVJPHiddenSample(b *testing.B) {
	benchOp(b, benchMeanField(), "vjp-hidden", benchSample)
}
func BenchmarkMeanFieldVJPHiddenSampleGraph(b *testing.B) {
	benchOp(b, benchMeanField(), "vjp-hidden-graph", benchSample)
}
func BenchmarkMeanFieldVJP(b *testing.B)      { benchOp(b, benchMeanField(), "vjp", 0) }
func BenchmarkMeanFieldVJPGraph(b *testing.B) { benchOp(b, benchMeanField(), "vjp-graph", 0) }

// benchMix times an operation of the benchmark experts cell (see benchOpN).
func benchMix(b *testing.B, op string, size int) {
	benchOpN(b, benchExperts(), benchMixBatch, op, size)
}

func BenchmarkExpertsForward(b *testing.B)        { benchMix(b, "eval", 0) }
func BenchmarkExpertsForwardSampled(b *testing.B) { benchMix(b, "eval", benchMixSample) }
func BenchmarkExpertsVJPHidden(b *testing.B)      { benchMix(b, "vjp-hidden", 0) }
func BenchmarkExpertsVJPHiddenGraph(b *testing.B) { benchMix(b, "vjp-hidden-graph", 0) }
func BenchmarkExpertsVJPHiddenSample(b *testing.B) {
	benchMix(b, "vjp-hidden", benchMixSample)
}
func BenchmarkExpertsVJPHiddenSampleGraph(b *testing.B) {
	benchMix(b, "vjp-hidden-graph", benchMixSample)
}
func BenchmarkExpertsVJP(b *testing.B)      { benchMix(b, "vjp", 0) }
func BenchmarkExpertsVJPGraph(b *testing.B) { benchMix(b, "vjp-graph", 0) }

// benchProject times Project of a 128-hidden dense cell whose W is pushed
// off the constraint before every call.
func benchProject(b *testing.B, norm string) {
	c := mustCell(NewDense(DenseConfig{Hidden: benchHidden, Input: 1, Lipschitz: Constraint{P: constraintP(norm)}, Seed: 1}))
	w := c.W().Data()
	b.ReportAllocs()
	for b.Loop() {
		w[0] += 1
		if err := c.Project(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDenseProjectL2(b *testing.B)   { benchProject(b, "l2") }
func BenchmarkDenseProjectLInf(b *testing.B) { benchProject(b, "linf") }
