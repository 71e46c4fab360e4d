package deqtest

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// vjp is CheckVJP's body.
func (k *kit) vjp() {
	k.t.Helper()
	sv := save(k.c)
	defer sv.restore()
	for p := range k.o.Points {
		var first []string
		failed := 0
		for attempt := 0; attempt <= k.o.Retries; attempt++ {
			x, z, err := k.point(p + attempt*k.o.Points)
			if err != nil {
				k.errorf("point %d: %v", p, err)
				return
			}
			ms, err := k.vjpAt(sv, x, z)
			if err != nil {
				k.errorf("point %d: %v", p, err)
				return
			}
			if len(ms) == 0 {
				break
			}
			failed++
			if first == nil {
				first = ms
			}
		}
		if failed <= k.o.Retries {
			continue
		}
		for _, m := range first {
			k.mismatch("point %d: %s (and %d further points failed too)", p, m, k.o.Retries)
		}
	}
}

// vjpAt compares the VJPs at (z, x) with finite differences and returns a
// description of every mismatch. It leaves the parameters as sv holds them.
func (k *kit) vjpAt(sv saved, x, z []float64) ([]string, error) {
	ev := k.ev
	n := ev.Len()
	g := k.normal(n, 1)
	ps := k.c.Params()
	sv.restore()
	layers.ZeroGrads(ps)
	dz := make([]float64, n)
	dx := make([]float64, len(x))
	if err := ev.SetInput(x); err != nil {
		return nil, fmt.Errorf("SetInput: %w", err)
	}
	if err := ev.VJP(dz, dx, z, g); err != nil {
		return nil, fmt.Errorf("VJP: %w", err)
	}
	grads := make([][]float64, len(ps))
	for i, p := range ps {
		grads[i] = slices.Clone(p.GradData())
	}
	f := make([]float64, n)
	var evalErr error
	phi := func() float64 {
		if err := ev.SetInput(x); err != nil {
			evalErr = err
		}
		if err := ev.EvalExact(f, z); err != nil {
			evalErr = err
		}
		return dot(g, f)
	}
	phi()
	round := 64 * eps * absDot(g, f) / k.o.Step
	var out []string
	compare := func(what, method string, arg, got []float64, eval func() float64) {
		idx := k.coords(len(arg))
		fd := make([]float64, len(idx))
		for j, i := range idx {
			fd[j] = k.central(arg, i, eval)
		}
		tol := k.o.RelTol*floats.Norm(fd, math.Inf(1)) + round
		for j, i := range idx {
			if d := math.Abs(got[i] - fd[j]); !(d <= tol) {
				out = append(out, fmt.Sprintf("∂⟨g, f⟩/∂%s[%d]: %s gives %.8g, the central difference (h = %g) %.8g: they differ by %.3g > %.3g (%g of the largest difference quotient %.3g, plus rounding %.2g)",
					what, i, method, got[i], k.o.Step, fd[j], d, tol, k.o.RelTol, floats.Norm(fd, math.Inf(1)), round))
			}
		}
	}
	compare("z", "VJP", z, dz, phi)
	compare("x", "VJP", x, dx, phi)
	for i, p := range ps {
		compare(p.Name(), "VJP", p.Data(), grads[i], phi)
	}
	if evalErr != nil {
		return nil, evalErr
	}
	if err := ev.SetInput(x); err != nil {
		return nil, err
	}
	samples := []solver.Sample{k.exact()}
	if ev.Model() != solver.Deterministic {
		samples = append(samples, solver.Sample{Seed: k.rng.Uint64(), Size: k.o.SampleSize})
	}
	dh := make([]float64, n)
	for _, s := range samples {
		if _, err := ev.VJPHidden(dh, z, g, s); err != nil {
			return nil, fmt.Errorf("VJPHidden(%+v): %w", s, err)
		}
		tau := func() float64 {
			if _, err := ev.Eval(f, z, s); err != nil {
				evalErr = err
			}
			return dot(g, f)
		}
		tau()
		round = 64 * eps * absDot(g, f) / k.o.Step
		compare("z", fmt.Sprintf("VJPHidden with Sample %+v", s), z, dh, tau)
		if evalErr != nil {
			return nil, evalErr
		}
	}
	// With the exact Sample, VJPHidden is VJP's dz.
	if _, err := ev.VJPHidden(dh, z, g, k.exact()); err != nil {
		return nil, err
	}
	tol := 1e-10 * floats.Norm(dz, math.Inf(1))
	for i := range dh {
		if d := math.Abs(dh[i] - dz[i]); !(d <= tol) {
			out = append(out, fmt.Sprintf("VJPHidden with the exact Sample (Size %d) and VJP's dz differ at %s: %.8g against %.8g, by %.3g > %.3g (1e-10·‖dz‖∞)",
				k.exact().Size, where(i, k.c.Shape().HiddenLen()), dh[i], dz[i], d, tol))
			break
		}
	}
	return out, nil
}

// coords returns the coordinates of an argument of length n to perturb:
// all of them, or Options.MaxCoords drawn without replacement.
func (k *kit) coords(n int) []int {
	if n <= k.o.MaxCoords {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := k.rng.Perm(n)[:k.o.MaxCoords]
	slices.Sort(idx)
	return idx
}

// central returns the central difference of eval in coordinate i of arg,
// which it restores.
func (k *kit) central(arg []float64, i int, eval func() float64) float64 {
	h := k.o.Step
	v := arg[i]
	arg[i] = v + h
	up := eval()
	arg[i] = v - h
	down := eval()
	arg[i] = v
	return (up - down) / (2 * h)
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func absDot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += math.Abs(v * b[i])
	}
	return s
}
