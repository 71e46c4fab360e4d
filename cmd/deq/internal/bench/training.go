package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/deqgo/deq/cmd/deq/internal/bench/report"
	"github.com/deqgo/deq/train"
)

// epochCounts are the counted operations of one training epoch.
type epochCounts struct {
	batches, examples                   int
	fwdCalls, adjCalls, certCalls, vjps int64
	heapPeak                            uint64
}

// trainingShapes are the dimensions of a dense DEQ classifier's products:
// n examples per batch, p pixels, d encoder features, h hidden units and c
// classes.
type trainingShapes struct{ n, p, d, h, c int }

// products returns the matrix products of one training batch of a dense
// DEQ classifier with the number of times each runs, for an epoch with
// counts k (per-batch counts are summed over the epoch, so the product
// counts are epoch totals):
//
//	encoder          e = relu(x·We + be)      (n, p, d)          once per batch
//	encoder gradient ∂We = xᵀ·∂e              (p, n, d) Tᵀ       once per batch
//	input term       e·U                      (n, d, h)          once per batch
//	forward call     z·W                      (n, h, h)          per forward call (certificate included)
//	adjoint call     (g ⊙ σ′)·Wᵀ              (n, h, h) ·ᵀ       per adjoint call
//	full VJP         ∂W = zᵀG, ∂U = eᵀG, ∂e = G·Uᵀ                 per VJP
//	readout          z·Wr, ∂Wr = zᵀ·∂l, ∂z = ∂l·Wrᵀ               once per batch
//
// An adjoint call is counted as the single product a minimal
// implementation needs (σ′ at z* cached); the gorgonia graph also
// recomputes z·W and the sibling gradient of W, which are not counted, so
// the GFLOP/s are those of useful arithmetic. Element-wise work
// (activations, Adam, norms) is not counted either.
func (sh trainingShapes) products(k epochCounts) []counted {
	b := int64(k.batches)
	n, p, d, h, c := sh.n, sh.p, sh.d, sh.h, sh.c
	return []counted{
		{[5]int{n, p, d}, b},
		{[5]int{p, n, d, 1, 0}, b},
		{[5]int{n, d, h}, b},
		{[5]int{n, h, h}, k.fwdCalls + k.certCalls},
		{[5]int{n, h, h, 0, 1}, k.adjCalls},
		{[5]int{h, n, h, 1, 0}, k.vjps},
		{[5]int{d, n, h, 1, 0}, k.vjps},
		{[5]int{n, h, d, 0, 1}, k.vjps},
		{[5]int{n, h, c}, b},
		{[5]int{h, n, c, 1, 0}, b},
		{[5]int{n, c, h, 0, 1}, b},
	}
}

// counted is a matrix product (m, k, n, transA, transB) run count times.
type counted struct {
	prod  [5]int
	count int64
}

// training runs the training section.
func training(ctx context.Context, s *settings) (*report.TrainingReport, error) {
	start := time.Now()
	ts := s.trainingSetup()
	d, err := ts.open(ctx, s.Seed)
	if err != nil {
		return nil, err
	}
	var (
		cur    epochCounts
		epochs []epochCounts
		heap   []uint64
		ms     runtime.MemStats
	)
	sample := func() {
		runtime.ReadMemStats(&ms)
		cur.heapPeak = max(cur.heapPeak, ms.HeapInuse)
	}
	opts := &train.Options{
		OnBatch: func(bm *train.BatchMetrics) {
			cur.batches++
			cur.examples += bm.Examples
			if bm.Forward != nil {
				cur.fwdCalls += bm.Forward.Stats.Calls
				if bm.Forward.Certificate != nil {
					cur.certCalls += bm.Forward.Certificate.Calls
				}
			}
			if bm.Backward != nil {
				cur.adjCalls += bm.Backward.Stats.Calls
			}
			cur.vjps += int64(bm.VJPs)
			sample()
		},
		OnEpoch: func(*train.EpochMetrics) {
			epochs = append(epochs, cur)
			cur = epochCounts{}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heap = append(heap, ms.HeapAlloc)
		},
	}
	cfg := ts.config(deriveSeed(s.Seed, 5))
	tr, err := train.New(cfg, d.Train, d.Test, opts)
	if err != nil {
		return nil, fmt.Errorf("bench: training section: %w", err)
	}
	res, err := tr.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: training section: %w", err)
	}
	m := tr.Model()
	sh := trainingShapes{n: ts.batch, p: m.InputDim, d: m.Config.Encoder, h: m.Config.Hidden, c: m.Classes}
	rep := &report.TrainingReport{
		Data: d.Train.Name, Cell: m.Config.Cell.String(), Hidden: sh.h, Encoder: sh.d, Pixels: sh.p, Classes: sh.c,
		BatchSize: sh.n, Forward: tr.Config().Forward.Method.String(), Backward: tr.Config().Backward.Mode.String(),
		HeapAfterEpoch: heap, MaxRSS: maxRSS(),
	}
	// The reference: each distinct product timed alone with blas64.Gemm.
	refTime := map[[5]int]float64{}
	for i, c := range sh.products(epochCounts{batches: 1, fwdCalls: 1, adjCalls: 1, vjps: 1}) {
		op, _ := gemms(deriveSeed(s.Seed, 5, uint64(i)), c.prod)
		t, err := measure(ctx, op, s.TimeTarget/4, report.ThroughputReps)
		if err != nil {
			return nil, err
		}
		refTime[c.prod] = t.secondsPerOp
	}
	for i, k := range epochs {
		em := res.Epochs[i]
		flops, ref := 0.0, 0.0
		for _, c := range sh.products(k) {
			flops += float64(c.count) * 2 * float64(c.prod[0]) * float64(c.prod[1]) * float64(c.prod[2])
			ref += float64(c.count) * refTime[c.prod]
		}
		e := report.EpochResult{
			Epoch: em.Epoch, Batches: k.batches, Examples: k.examples,
			FwdCalls: k.fwdCalls, CertCalls: k.certCalls, AdjCalls: k.adjCalls, VJPs: k.vjps,
			FLOPs: flops, Seconds: em.TrainSeconds, GFLOPS: flops / em.TrainSeconds / 1e9,
			RefSeconds: ref, RefGFLOPS: flops / ref / 1e9, HeapPeak: k.heapPeak, TestAcc: em.TestAcc,
		}
		e.Efficiency = e.GFLOPS / e.RefGFLOPS
		s.logf("training: epoch %d: %.2f GFLOP/s (same-shape matmul %.2f GFLOP/s), %d forward and %d adjoint calls",
			e.Epoch, e.GFLOPS, e.RefGFLOPS, k.fwdCalls, k.adjCalls)
		rep.Epochs = append(rep.Epochs, e)
	}
	rep.HeapGrowth = heapGrowth(heap)
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// heapGrowth returns the relative growth of the live heap from the first
// epoch to the last, (last − first)/first; zero with fewer than two epochs.
func heapGrowth(heap []uint64) float64 {
	if len(heap) < 2 || heap[0] == 0 {
		return 0
	}
	return (float64(heap[len(heap)-1]) - float64(heap[0])) / float64(heap[0])
}
