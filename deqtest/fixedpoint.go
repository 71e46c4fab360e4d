package deqtest

import (
	"context"
	"math"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// fixedPoint is CheckFixedPoint's body.
func (k *kit) fixedPoint() {
	k.t.Helper()
	gamma := k.c.Gamma()
	if !(gamma < 1) {
		k.t.Logf("deqtest.CheckFixedPoint(%T): Gamma() = %v is not below 1: no residual-to-distance bound to check", k.c, gamma)
		return
	}
	norms := k.provenNorms()
	if len(norms) == 0 {
		return
	}
	if _, _, err := k.point(0); err != nil {
		k.errorf("%v", err)
		return
	}
	ctx := context.Background()
	m := k.o.SolveBatch
	if m == 0 {
		m = sampledBatch(k.ev.Terms())
	}
	per := k.c.Shape().HiddenLen()
	for _, pn := range norms {
		p := solver.Problem{Oracle: layers.ExactOracle(k.ev), Norm: pn.batched}
		z0 := make([]float64, k.ev.Len())
		det := &solver.Settings{Tol: FixedPointTol, MaxIter: 100000}
		ref, err := solver.Solve(ctx, p, z0, det, solver.Anderson{})
		if err == nil && ref.Status != solver.Success {
			ref, err = solver.Solve(ctx, p, ref.X, det, solver.Picard{})
		}
		if err != nil {
			k.errorf("norm %s: deterministic solve: %v", pn.name, err)
			continue
		}
		if ref.Status != solver.Success {
			k.errorf("norm %s: the deterministic solve on the exact map stopped with %v at residual %.3g > %g, though the cell claims to be a %v-contraction",
				pn.name, ref.Status, ref.Residual, FixedPointTol, gamma)
			continue
		}
		rstar := ref.Residual
		p.Oracle = k.ev
		st := &solver.Settings{
			Tol:        k.o.SolveTol,
			MaxIter:    200,
			MaxSamples: k.o.Budget,
			Seed:       k.rng.Uint64(),
			NoTrace:    true,
			Certify:    solver.CertifySettings{Delta: k.o.Delta, Samples: m, Seed: k.rng.Uint64()},
		}
		res, err := solver.Solve(ctx, p, z0, st, solver.MinibatchKM{Batch: m, FixedBatch: true})
		if err != nil {
			k.errorf("norm %s: stochastic solve: %v", pn.name, err)
			continue
		}
		if res.Certificate == nil {
			k.errorf("norm %s: the stochastic solve (status %v) returned no certificate", pn.name, res.Status)
			continue
		}
		worst := 0.0
		for b := range k.o.Batch {
			bound := certBound(res.Certificate, b)
			lim := (bound + rstar) / (1 - gamma) * (1 + 1e-9)
			d := make([]float64, per)
			for i := range d {
				d[i] = res.X[b*per+i] - ref.X[b*per+i]
			}
			dist := pn.example.Norm(d)
			worst = math.Max(worst, dist/lim)
			if !(dist <= lim) {
				k.mismatch("norm %s, example %d: the stochastic solve (minibatch KM, status %v, %d unit samples) ended %.4g from the fixed point, beyond its certificate's (B + r*)/(1 − γ̄) = (%.4g + %.2g)/(1 − %v) = %.4g, by a factor %.3g (certificate rule %q, δ = %g)",
					pn.name, b, res.Status, res.Stats.Samples, dist, bound, rstar, gamma, lim, dist/lim, res.Certificate.Rule, res.Certificate.Delta)
			}
		}
		k.t.Logf("deqtest.CheckFixedPoint(%T): norm %s: minibatch KM %v after %d unit samples, certificate bound %.3g; largest distance %.3g of its limit",
			k.c, pn.name, res.Status, res.Stats.Samples, res.Certificate.Bound, worst)
	}
}

// sampledBatch returns the largest power of two below m, the largest
// minibatch an Evaluator of m terms samples rather than averaging exactly,
// or 1 when m ≤ 2.
func sampledBatch(m int) int {
	b := 1
	for 2*b < m {
		b *= 2
	}
	return b
}

// certBound returns the certificate's bound on example b's residual: its
// per-example bound when it has one, else its overall Bound (which bounds
// every example under the max aggregate the check uses). It is the one
// place the check reads a solver.Certificate.
func certBound(c *solver.Certificate, b int) float64 {
	if b < len(c.PerExample) {
		return c.PerExample[b]
	}
	return c.Bound
}
