package deqtest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
)

// CheckVJP checks the cell's vector–Jacobian products against central
// finite differences of its forward evaluations.
//
// At each of Options.Points random points (z, x), with a random cotangent
// g, let φ = ⟨g, f(z, x; θ)⟩ computed by EvalExact (after SetInput). VJP's
// (∂f/∂z)ᵀg, (∂f/∂x)ᵀg and the gradient it adds to every parameter must
// match (φ(a + h·e_i) − φ(a − h·e_i))/(2h) for up to Options.MaxCoords
// coordinates i of each argument a, h = Options.Step. VJPHidden is checked
// the same way against ⟨g, Eval(z; s)⟩ for a Sample s of
// Options.SampleSize unit samples held fixed (and for the exact Sample,
// against which it must also agree with VJP's dz).
//
// A coordinate fails when its error exceeds
//
//	RelTol·max_i|D_i| + 64·ε·Σ_j|g_j f_j|/h,
//
// D_i the argument's difference quotients: the first term is the relative
// tolerance (with h = 1e-6 the truncation error of a central difference of
// a smooth map, O(h²), is far below 1e-6 relative), the second the
// float64 rounding of φ (ε the machine epsilon, 64 ulps of the magnitude
// of its terms) amplified by 1/h. A point that fails is redrawn up to
// Options.Retries times, and reported only if every draw fails, so that
// ReLU kinks (see the package documentation) do not cause failures. The
// parameters and their gradients are restored on return.
func CheckVJP(t testing.TB, c layers.Cell, o *Options) {
	t.Helper()
	runCheck(t, "CheckVJP", c, o, 0x3c6ef372fe94f82b, func(k *kit) {
		t.Helper()
		sv := save(c)
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
	})
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
		tol := k.o.RelTol*normInf(fd) + round
		for j, i := range idx {
			if d := math.Abs(got[i] - fd[j]); !(d <= tol) {
				out = append(out, fmt.Sprintf("∂⟨g, f⟩/∂%s[%d]: %s gives %.8g, the central difference (h = %g) %.8g: they differ by %.3g > %.3g (%g of the largest difference quotient %.3g, plus rounding %.2g)",
					what, i, method, got[i], k.o.Step, fd[j], d, tol, k.o.RelTol, normInf(fd), round))
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
	tol := 1e-10 * normInf(dz)
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
