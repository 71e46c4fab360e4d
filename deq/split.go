package deq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/deqgo/deq/internal/numeric"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// part is one part of a split batch (Settings.Split): the examples
// [lo, lo+n) of the batch, solved on b, the state of a fork of the cell.
type part struct {
	lo, n int
	b     *batch
}

// span returns the entries of v that hold the part's examples, each
// example taking per entries.
func (p part) span(v []float64, per int) []float64 {
	if v == nil {
		return nil
	}
	return v[p.lo*per : (p.lo+p.n)*per]
}

// runParts calls f(i) for every part i < k, part 0 on the calling
// goroutine and the others on goroutines of their own, and returns when
// all have returned.
func runParts(k int, f func(i int)) {
	var wg sync.WaitGroup
	for i := 1; i < k; i++ {
		wg.Go(func() { f(i) })
	}
	f(0)
	wg.Wait()
}

// partSeed returns the seed of part i's solves: the batch's seed for the
// first part, a hash of it and i for the others, so that the parts of a
// stochastic cell draw independent samples.
func partSeed(seed uint64, i int) uint64 {
	if i == 0 {
		return seed
	}
	return numeric.Mix(seed, uint64(i))
}

// forwardSplit is Forward for a split batch b: the parts' solves run
// concurrently and their Solutions are merged into one.
func (l *Layer) forwardSplit(ctx context.Context, b *batch, x []float64, mask dropMask) (*Solution, error) {
	sh := l.cell.Shape()
	dz, dx := sh.HiddenLen(), sh.InputLen()
	z0 := make([][]float64, len(b.parts))
	for i, p := range b.parts {
		// The starts run one at a time: SetInput may update a
		// reparameterised weight the forks share (layers.Forker).
		var err error
		if z0[i], err = l.start(p.b, p.span(x, dx), p.n, dropMask(p.span(mask, dz))); err != nil {
			return nil, err
		}
	}
	sols := make([]*Solution, len(b.parts))
	errs := make([]error, len(b.parts))
	// The merged Solution's copy of x, whose spans the parts' Solutions
	// hold (solve keeps the x it is given).
	x = slices.Clone(x)
	t0 := time.Now()
	runParts(len(b.parts), func(i int) {
		p := b.parts[i]
		fs := l.s.ForwardSettings
		fs.Seed = partSeed(fs.Seed, i)
		sols[i], errs[i] = l.solve(ctx, p.b, p.span(x, dx), z0[i], p.n, dropMask(p.span(mask, dz)), fs)
	})
	wall := time.Since(t0)
	err := partErrors(errs)
	if slices.Contains(sols, nil) {
		return nil, err
	}
	return mergeSolutions(sols, x, mask, wall), err
}

// partErrors joins the parts' errors, naming each part; nil when none
// failed.
func partErrors(errs []error) error {
	var all []error
	for i, err := range errs {
		if err != nil {
			all = append(all, fmt.Errorf("part %d of %d: %w", i+1, len(errs), err))
		}
	}
	return errors.Join(all...)
}

// backwardSplit is Backward for a split batch b: the parts' adjoint
// solves run concurrently; the VJPs, which add into the shared parameter
// gradients, add them one part at a time (partVJPs).
func (l *Layer) backwardSplit(ctx context.Context, b *batch, sol *Solution, gz, dx []float64, st *BackwardStats) error {
	sh := l.cell.Shape()
	dzl, dxl := sh.HiddenLen(), sh.InputLen()
	views := make([]*Solution, len(b.parts))
	for i, p := range b.parts {
		views[i] = &Solution{Z: p.span(sol.Z, dzl), X: p.span(sol.X, dxl), Examples: p.n, mask: dropMask(p.span(sol.mask, dzl))}
		if err := p.b.ev.SetInput(views[i].X); err != nil {
			return err
		}
	}
	if l.s.Backward != Implicit {
		// One part's VJPs and term evaluations count as the whole
		// batch's, as its solves' do (mergeResults).
		for i, p := range b.parts {
			var pst BackwardStats
			err := l.direct(p.b, views[i], p.span(gz, dzl), p.span(dx, dxl), &pst)
			st.VJPs, st.TermEvals = max(st.VJPs, pst.VJPs), max(st.TermEvals, pst.TermEvals)
			if err != nil {
				return err
			}
		}
		return nil
	}
	res := make([]*solver.Result, len(b.parts))
	errs := make([]error, len(b.parts))
	t0 := time.Now()
	runParts(len(b.parts), func(i int) {
		p := b.parts[i]
		as := l.s.AdjointSettings
		as.Seed = partSeed(as.Seed, i)
		res[i], errs[i] = l.adjoint(ctx, p.b, views[i], p.span(gz, dzl), as)
	})
	wall := time.Since(t0)
	for _, r := range res {
		st.TermEvals = max(st.TermEvals, termEvals(r))
	}
	if err := partErrors(errs); err != nil {
		if !slices.Contains(res, nil) {
			st.Adjoint = mergeResults(res, concatX(res), wall)
			st.AdjointParts = res
		}
		return err
	}
	st.Adjoint = mergeResults(res, concatX(res), wall)
	st.AdjointParts = res
	if err := l.partVJPs(b, views, res, dx, dxl); err != nil {
		return err
	}
	st.VJPs++
	return nil
}

// partVJPs adds the parameter gradients of the parts of b at their
// adjoint solutions res and writes their input cotangents into dx (dxl
// entries per example): in part order, as l.adjointVJP one part after the
// other would, with the products of evaluators that are layers.SplitVJPer
// computed concurrently first (VJPPrepare) and only their additions into
// the shared gradients in order (VJPCommit).
func (l *Layer) partVJPs(b *batch, views []*Solution, res []*solver.Result, dx []float64, dxl int) error {
	prepared := make([]bool, len(b.parts))
	errs := make([]error, len(b.parts))
	runParts(len(b.parts), func(i int) {
		p := b.parts[i]
		s, ok := p.b.ev.(layers.SplitVJPer)
		if !ok {
			return
		}
		g := res[i].X
		if views[i].mask != nil {
			g = slices.Clone(g)
			views[i].mask.apply(g)
		}
		prepared[i], errs[i] = s.VJPPrepare(nil, p.span(dx, dxl), views[i].Z, g)
	})
	var pst BackwardStats
	for i, p := range b.parts {
		if errs[i] != nil {
			return errs[i]
		}
		if prepared[i] {
			p.b.ev.(layers.SplitVJPer).VJPCommit()
			continue
		}
		if err := l.adjointVJP(p.b, views[i], res[i].X, p.span(dx, dxl), &pst); err != nil {
			return err
		}
	}
	return nil
}

// concatX returns the results' points, one after the other.
func concatX(rs []*solver.Result) []float64 {
	n := 0
	for _, r := range rs {
		n += len(r.X)
	}
	x := make([]float64, 0, n)
	for _, r := range rs {
		x = append(x, r.X...)
	}
	return x
}

// mergeSolutions merges the Solutions of a split batch's parts, in order,
// into the Solution of the batch x (kept, not copied) with mask mask; wall
// is the time the parts' solves took together.
func mergeSolutions(sols []*Solution, x []float64, mask dropMask, wall time.Duration) *Solution {
	res := make([]*solver.Result, len(sols))
	var firsts []*solver.Result
	var lip []*layers.LipschitzStats
	sol := &Solution{X: x, Proven: true, Dropout: mask != nil, mask: mask}
	for i, s := range sols {
		res[i] = s.Result
		sol.Examples += s.Examples
		sol.Sampled = sol.Sampled || s.Sampled
		sol.Proven = sol.Proven && s.Proven
		sol.TermEvals = max(sol.TermEvals, s.TermEvals)
		if s.Float32 != nil {
			firsts = append(firsts, s.Float32)
		}
		if s.Lipschitz != nil {
			lip = append(lip, s.Lipschitz)
		}
	}
	sol.Result = mergeResults(res, concatX(res), wall)
	sol.Z = sol.Result.X
	sol.Parts = res
	if len(firsts) == len(sols) {
		var w time.Duration
		for _, f := range firsts {
			w = max(w, f.Stats.Wall)
		}
		sol.Float32 = mergeResults(firsts, concatX(firsts), w)
	}
	if len(lip) == len(sols) {
		sol.Lipschitz = mergeLipschitz(lip)
	}
	return sol
}

// mergeLipschitz merges the Lipschitz ratios of the parts' monitors.
func mergeLipschitz(parts []*layers.LipschitzStats) *layers.LipschitzStats {
	m := &layers.LipschitzStats{Gamma: parts[0].Gamma}
	for _, p := range parts {
		m.Pairs += p.Pairs
		m.Max = max(m.Max, p.Max)
		m.Exceeded += p.Exceeded
	}
	if m.Exceeded > 0 {
		m.Warning = fmt.Sprintf("empirical Lipschitz ratio %.4g exceeds γ̄ = %.4g (%d of %d pairs, over %d parts of the batch)",
			m.Max, m.Gamma, m.Exceeded, m.Pairs, len(parts))
	}
	return m
}
