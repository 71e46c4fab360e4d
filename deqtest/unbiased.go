package deqtest

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// graphTol is the largest difference, relative to ‖f‖∞, that CheckUnbiased
// allows between EvalGraph and EvalExact: two implementations of one map,
// loose enough for a cell whose exact map runs in float32 (its graph runs
// in float64), and orders of magnitude below the error of a wrong graph.
const graphTol = 1e-4

// graph compares the evaluator's graph evaluation at z with exact =
// EvalExact(z), using buf as scratch.
func (k *kit) graph(ge layers.GraphEvaluator, p int, z, exact, buf []float64, scale float64) {
	k.t.Helper()
	if err := ge.EvalGraph(buf, z); err != nil {
		k.errorf("EvalGraph: %v", err)
		return
	}
	per := k.c.Shape().HiddenLen()
	for i := range buf {
		if d := math.Abs(buf[i] - exact[i]); !(d <= graphTol*scale) {
			k.mismatch("point %d: EvalGraph differs from EvalExact at %s by %.3g (limit %.3g = %g·‖f‖∞)",
				p, where(i, per), d, graphTol*scale, graphTol)
		}
	}
}

// unbiased is CheckUnbiased's body.
func (k *kit) unbiased() {
	k.t.Helper()
	ev := k.ev
	n := ev.Len()
	det := ev.Model() == solver.Deterministic
	draws := k.o.Draws
	if det {
		draws = 2
	}
	zcrit := distuv.UnitNormal.Quantile(1 - k.o.Alpha/(2*float64(k.o.Points*n)))
	per := k.c.Shape().HiddenLen()
	exact := make([]float64, n)
	tau := make([]float64, n)
	mean := make([]float64, n)
	m2 := make([]float64, n)
	abs := make([]float64, n)
	varies := false
	for p := range k.o.Points {
		_, z, err := k.point(p)
		if err != nil {
			k.errorf("point %d: %v", p, err)
			return
		}
		if err := ev.EvalExact(exact, z); err != nil {
			k.errorf("EvalExact: %v", err)
			return
		}
		scale := floats.Norm(exact, math.Inf(1))
		if ge, ok := ev.(layers.GraphEvaluator); ok {
			k.graph(ge, p, z, exact, tau, scale)
		}
		if _, err := ev.Eval(tau, z, k.exact()); err != nil {
			k.errorf("Eval: %v", err)
			return
		}
		for i := range tau {
			if d := math.Abs(tau[i] - exact[i]); d > 1e-12*scale {
				k.mismatch("point %d: Eval with Size = Terms() = %d differs from EvalExact at %s by %.3g (limit %.3g = 1e-12·‖f‖∞): the exact average must be exact",
					p, ev.Terms(), where(i, per), d, 1e-12*scale)
			}
		}
		clear(mean)
		clear(m2)
		clear(abs)
		for d := range draws {
			s := solver.Sample{Seed: k.rng.Uint64(), Size: k.o.SampleSize}
			if _, err := ev.Eval(tau, z, s); err != nil {
				k.errorf("Eval(%+v): %v", s, err)
				return
			}
			// Welford's update of the mean and the sum of squared
			// deviations of τ − f.
			for i, v := range tau {
				x := v - exact[i]
				delta := x - mean[i]
				mean[i] += delta / float64(d+1)
				m2[i] += delta * (x - mean[i])
				abs[i] += math.Abs(x)
			}
		}
		kf := float64(draws)
		for i := range mean {
			sd := math.Sqrt(m2[i] / (kf - 1))
			if sd > 0 {
				varies = true
			}
			se := sd / math.Sqrt(kf)
			lim := zcrit*se + eps*abs[i] + 1e-12*scale // eps·abs[i] = K·ε·mean|d|
			if math.Abs(mean[i]) > lim || math.IsNaN(mean[i]) {
				zs := math.Inf(1)
				if se > 0 {
					zs = math.Abs(mean[i]) / se
				}
				k.mismatch("point %d, %s: the mean of %d draws of Eval (Size %d) minus EvalExact is %.4g, %.3g standard errors of %.3g (limit %.4g: %.2f standard errors, Bonferroni over %d coordinates at α = %g); EvalExact = %.6g",
					p, where(i, per), draws, k.o.SampleSize, mean[i], zs, se, lim, zcrit, k.o.Points*n, k.o.Alpha, exact[i])
			}
		}
	}
	if !det && !varies {
		k.t.Logf("deqtest.CheckUnbiased(%T): the oracle's Model is %v but no draw differed from another: the check could not tell a biased oracle from an exact one", k.c, ev.Model())
	}
}

// eps is the float64 machine epsilon, 2⁻⁵².
const eps = 0x1p-52
