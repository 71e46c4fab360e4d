package layers

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/solver"
)

// convCase is a small Conv cell with its batch size.
type convCase struct {
	name string
	cfg  ConvConfig
	n    int
}

// convCases cover one and several kernels, both injections, both
// activations and GroupNorm, on non-square images.
func convCases() []convCase {
	return []convCase{
		{"tanh", ConvConfig{Channels: 2, Height: 4, Width: 3, Activation: Tanh, Seed: 1}, 2},
		{"relu-inputconv", ConvConfig{Channels: 3, Height: 3, Width: 4, InputConv: true, Seed: 2}, 2},
		{"tanh-kernels", ConvConfig{Channels: 2, Height: 3, Width: 3, Kernels: 3, Activation: Tanh, Seed: 3}, 2},
		{"tanh-inputconv-kernels", ConvConfig{Channels: 2, Height: 2, Width: 3, Kernels: 2, InputConv: true, Activation: Tanh, Seed: 4}, 3},
		{"tanh-groupnorm", ConvConfig{Channels: 4, Height: 3, Width: 3, Kernels: 2, Groups: 2, InputConv: true, Activation: Tanh, Seed: 5}, 2},
		{"relu-groupnorm", ConvConfig{Channels: 2, Height: 4, Width: 4, Groups: 1, Seed: 6}, 2},
		{"tanh-weightnorm-inputconv-kernels", ConvConfig{Channels: 2, Height: 3, Width: 4, Kernels: 2, InputConv: true, Activation: Tanh, Normalization: WeightNorm, Seed: 7}, 2},
		{"tanh-weightnorm-groupnorm", ConvConfig{Channels: 4, Height: 3, Width: 3, Groups: 2, Activation: Tanh, Normalization: WeightNorm, Seed: 8}, 2},
		{"relu-weightnorm", ConvConfig{Channels: 3, Height: 4, Width: 3, Normalization: WeightNorm, Seed: 9}, 3},
	}
}

// convSetup returns the case's cell with random biases, GroupNorm
// parameters and weight-normalisation parameters (so that their gradients
// are tested away from their initial values), an evaluator with a random input, a point and a cotangent.
func convSetup(t *testing.T, tc convCase, seed uint64) (c *Conv, e Evaluator, x, z, g []float64) {
	t.Helper()
	c, err := NewConv(tc.cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 17))
	for _, p := range c.Params() {
		switch p.Name() {
		case "b", "gn.shift":
			copy(p.Data(), randVec(rng, len(p.Data()), 0.3))
		case "V":
			for i := range p.Data() {
				p.Data()[i] += 0.1 * rng.NormFloat64()
			}
		case "gn.scale", "g":
			for i := range p.Data() {
				p.Data()[i] = 1 + 0.3*rng.NormFloat64()
			}
		}
	}
	e, err = c.Evaluator(tc.n)
	require.NoError(t, err)
	x = randVec(rng, tc.n*c.Shape().InputLen(), 1)
	z = randVec(rng, e.Len(), 1)
	g = randVec(rng, e.Len(), 1)
	require.NoError(t, e.SetInput(x))
	return c, e, x, z, g
}

// requireRel requires ‖got − want‖∞ ≤ tol·‖want‖∞.
func requireRel(t *testing.T, want, got []float64, tol float64, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	d := 0.0
	for i := range want {
		d = math.Max(d, math.Abs(got[i]-want[i]))
	}
	scale := floats.Norm(want, math.Inf(1))
	require.Greater(t, scale, 0.0, "%s: reference is zero", msg)
	require.LessOrEqual(t, d, tol*scale, "%s: max error %g relative to %g", msg, d, scale)
}

func TestConvEvalGraphMatchesGonum(t *testing.T) {
	for _, tc := range convCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, e, _, z, _ := convSetup(t, tc, 1)
			a := make([]float64, e.Len())
			b := make([]float64, e.Len())
			require.NoError(t, e.EvalExact(a, z))
			require.NoError(t, e.(GraphEvaluator).EvalGraph(b, z))
			requireRel(t, b, a, 1e-10, "EvalExact vs graph")
			n, err := e.Eval(b, z, solver.Sample{Seed: 3, Size: e.Terms()})
			require.NoError(t, err)
			require.Equal(t, e.Terms(), n)
			require.Equal(t, a, b)
		})
	}
}

// convGraphVJP differentiates the gorgonia graph of c at (z, x) with
// cotangent g and returns dz, dx and the parameters' gradients (in Params
// order, each kernel's pieces concatenated as in the parameters).
func convGraphVJP(t *testing.T, c *Conv, n int, x, z, g []float64) (dz, dx []float64, grads [][]float64) {
	t.Helper()
	cg, err := c.newGraph(n)
	require.NoError(t, err)
	copy(cg.z, z)
	copy(cg.x, x)
	gr := graph{cg.g}
	var gN *G.Node
	var gData []float64
	wrt := G.Nodes{cg.zN, cg.xN}
	groups := [][]*G.Node{cg.wN}
	if cg.vN != nil {
		groups = [][]*G.Node{cg.vN, cg.gN}
	}
	if cg.uN != nil {
		groups = append(groups, []*G.Node{cg.uN})
	}
	groups = append(groups, cg.bN)
	if cg.scaleN != nil {
		groups = append(groups, []*G.Node{cg.scaleN}, []*G.Node{cg.shiftN})
	}
	for _, ns := range groups {
		wrt = append(wrt, ns...)
	}
	var gradNodes G.Nodes
	require.NoError(t, build("test", func() {
		gN = gr.bound("g", tensorOver(make([]float64, len(g)), cg.out.Shape()...))
		gData = gN.Value().Data().([]float64)
		gradNodes = backprop(cg.out, gN, wrt)
	}))
	copy(gData, g)
	m := newMachine(cg.g, gradNodes...)
	require.NoError(t, m.run())
	dz = slices.Clone(nodeData(gradNodes[0]))
	dx = slices.Clone(nodeData(gradNodes[1]))
	k := 2
	for _, ns := range groups {
		var all []float64
		for range ns {
			all = append(all, nodeData(gradNodes[k])...)
			k++
		}
		grads = append(grads, all)
	}
	return dz, dx, grads
}

func TestConvVJPMatchesGorgonia(t *testing.T) {
	for _, tc := range convCases() {
		t.Run(tc.name, func(t *testing.T) {
			c, e, x, z, g := convSetup(t, tc, 2)
			wantDz, wantDx, wantGrads := convGraphVJP(t, c, tc.n, x, z, g)
			dz := make([]float64, e.Len())
			dx := make([]float64, len(x))
			ZeroGrads(c.Params())
			require.NoError(t, e.VJP(dz, dx, z, g))
			requireRel(t, wantDz, dz, 1e-10, "dz")
			requireRel(t, wantDx, dx, 1e-10, "dx")
			for i, p := range c.Params() {
				requireRel(t, wantGrads[i], p.GradData(), 1e-10, p.Name())
			}
			// The hidden-state VJP of the exact operator is VJP's dz.
			hz := make([]float64, e.Len())
			k, err := e.VJPHidden(hz, z, g, solver.Sample{Seed: 1, Size: e.Terms()})
			require.NoError(t, err)
			require.Equal(t, e.Terms(), k)
			requireRel(t, wantDz, hz, 1e-10, "VJPHidden")
		})
	}
}

func TestConvVJPMatchesFiniteDifferences(t *testing.T) {
	for _, tc := range convCases() {
		if tc.cfg.Activation != Tanh {
			continue // ReLU's kinks make finite differences unreliable
		}
		t.Run(tc.name, func(t *testing.T) {
			c, e, x, z, g := convSetup(t, tc, 3)
			f := make([]float64, e.Len())
			obj := func() float64 {
				require.NoError(t, e.SetInput(x))
				require.NoError(t, e.EvalExact(f, z))
				return dot(g, f)
			}
			dz := make([]float64, e.Len())
			dx := make([]float64, len(x))
			ZeroGrads(c.Params())
			require.NoError(t, e.VJP(dz, dx, z, g))
			zc := z
			require.InDeltaSlice(t, fdGrad(func(v []float64) float64 { z = v; return obj() }, zc), dz, 1e-6, "dz")
			z = zc
			xc := x
			require.InDeltaSlice(t, fdGrad(func(v []float64) float64 { x = v; return obj() }, xc), dx, 1e-6, "dx")
			x = xc
			for _, p := range c.Params() {
				d := p.Data()
				want := fdGrad(func(v []float64) float64 { copy(d, v); return obj() }, slices.Clone(d))
				require.InDeltaSlice(t, want, p.GradData(), 1e-6, p.Name())
			}
		})
	}
}

func TestConvSampledVJPHiddenMatchesFiniteDifferences(t *testing.T) {
	for _, tc := range convCases() {
		if tc.cfg.Kernels < 2 || tc.cfg.Activation != Tanh {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			_, e, _, z, g := convSetup(t, tc, 4)
			s := solver.Sample{Seed: 12, Size: 1}
			f := make([]float64, e.Len())
			got := make([]float64, e.Len())
			k, err := e.VJPHidden(got, z, g, s)
			require.NoError(t, err)
			require.Equal(t, 1, k)
			want := fdGrad(func(v []float64) float64 {
				_, err := e.Eval(f, v, s)
				require.NoError(t, err)
				return dot(g, f)
			}, z)
			require.InDeltaSlice(t, want, got, 1e-6)
			// A single sampled kernel is not the exact operator.
			exact := make([]float64, e.Len())
			_, err = e.VJPHidden(exact, z, g, solver.Sample{Size: e.Terms()})
			require.NoError(t, err)
			require.Greater(t, floats.Distance(exact, got, math.Inf(1)), 1e-3)
		})
	}
}

func TestConvOracleUnbiased(t *testing.T) {
	// Over K seeds, each coordinate's mean of τ(z; ξ) must lie within 5
	// standard errors (estimated from the draws) of T(z); the standard
	// errors must be small enough for a 5% bias to fail.
	const K = 20000
	for _, tc := range convCases() {
		if tc.cfg.Kernels < 2 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			_, e, _, z, _ := convSetup(t, tc, 5)
			requireUnbiased(t, e, z, K, 1)
		})
	}
}

func TestConvConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  ConvConfig
		want string
	}{
		{ConvConfig{Height: 2, Width: 2}, "Channels"},
		{ConvConfig{Channels: 1, Width: 2}, "Height"},
		{ConvConfig{Channels: 1, Height: 2}, "Width"},
		{ConvConfig{Channels: 1, Height: 2, Width: 2, Kernels: -1}, "Kernels"},
		{ConvConfig{Channels: 3, Height: 2, Width: 2, Groups: 2}, "Groups"},
		{ConvConfig{Channels: 1, Height: 2, Width: 2, Gamma: math.NaN()}, "Gamma"},
		{ConvConfig{Channels: 1, Height: 2, Width: 2, PowerIters: -1}, "PowerIters"},
		{ConvConfig{Channels: 1, Height: 2, Width: 2, CertifyEvery: -1}, "CertifyEvery"},
		{ConvConfig{Channels: 1, Height: 2, Width: 2, Activation: 7}, "Activation"},
	} {
		_, err := NewConv(tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
	c := mustCell(NewConv(ConvConfig{Channels: 1, Height: 2, Width: 2}))
	_, err := c.Evaluator(0)
	require.ErrorContains(t, err, "batch size")
	e, err := c.Evaluator(1)
	require.NoError(t, err)
	require.ErrorContains(t, e.EvalExact(make([]float64, 4), make([]float64, 4)), "SetInput")
}

func TestConvDEQSolve(t *testing.T) {
	// On a projected cell (γ̄ = 0.9, certified) Broyden and Anderson on the
	// exact oracle reach 1e-10 from z = 0.
	c := mustCell(NewConv(ConvConfig{Channels: 4, Height: 6, Width: 6, Kernels: 2, Gamma: 0.9, CertifyEvery: 1, Seed: 10}))
	floats.Scale(10, c.W().Data())
	require.NoError(t, c.Project())
	require.LessOrEqual(t, c.Bound(), 0.9*(1+1e-12))
	const n = 3
	e, err := c.Evaluator(n)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(10, 10))
	require.NoError(t, e.SetInput(randVec(rng, n*c.Shape().InputLen(), 1)))
	ex, err := solver.NewLP(2, c.Shape().HiddenLen())
	require.NoError(t, err)
	norm, err := solver.NewBatched(ex, n)
	require.NoError(t, err)
	for _, m := range []solver.Method{solver.Broyden{}, solver.Anderson{}} {
		t.Run(fmt.Sprintf("%T", m), func(t *testing.T) {
			res, err := solver.Solve(t.Context(), solver.Problem{Oracle: ExactOracle(e), Norm: norm},
				make([]float64, e.Len()), &solver.Settings{Tol: 1e-10, MaxIter: 200, Certify: solver.CertifySettings{Skip: true}}, m)
			require.NoError(t, err)
			require.Equal(t, solver.Success, res.Status)
			f := make([]float64, e.Len())
			require.NoError(t, e.EvalExact(f, res.X))
			floats.Sub(f, res.X)
			require.LessOrEqual(t, norm.Norm(f), 1e-10)
		})
	}
}

func TestConvDoesNotAllocate(t *testing.T) {
	for _, tc := range convCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, e, x, z, g := convSetup(t, tc, 6)
			dst := make([]float64, e.Len())
			dx := make([]float64, len(x))
			s := solver.Sample{Seed: 2, Size: 1}
			ops := map[string]func(){
				"Eval":      func() { _, _ = e.Eval(dst, z, s) },
				"EvalExact": func() { _ = e.EvalExact(dst, z) },
				"VJPHidden": func() { _, _ = e.VJPHidden(dst, z, g, s) },
				"VJP":       func() { _ = e.VJP(dst, dx, z, g) },
				"SetInput":  func() { _ = e.SetInput(x) },
			}
			for name, op := range ops {
				op()
				require.Zero(t, testing.AllocsPerRun(5, op), name)
			}
		})
	}
}

func ExampleConv() {
	// A 4-channel 6×6 convolutional cell, γ̄ = 0.5 certified by the Fourier
	// bound, on a batch of two examples.
	cell, err := NewConv(ConvConfig{Channels: 4, Height: 6, Width: 6, Gamma: 0.5, CertifyEvery: 1, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := cell.Evaluator(2)
	if err != nil {
		fmt.Println(err)
		return
	}
	x := make([]float64, 2*cell.Shape().InputLen())
	for i := range x {
		x[i] = math.Sin(float64(i))
	}
	if err := e.SetInput(x); err != nil {
		fmt.Println(err)
		return
	}
	ex, _ := solver.NewLP(2, cell.Shape().HiddenLen())
	norm, _ := solver.NewBatched(ex, 2)
	res, err := solver.Solve(context.Background(), solver.Problem{Oracle: ExactOracle(e), Norm: norm},
		make([]float64, e.Len()), &solver.Settings{Tol: 1e-10, Certify: solver.CertifySettings{Skip: true}}, solver.Anderson{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("bound ≤ 0.5: %v, status %v, residual below 1e-10: %v\n", cell.Bound() <= 0.5+1e-12, res.Status, res.Residual <= 1e-10)
	// Output:
	// bound ≤ 0.5: true, status Success, residual below 1e-10: true
}

// TestConvVJPReusesForwardOnlyWhenValid checks that a VJP at the point,
// terms and parameters of the previous VJP (which reuses its forward pass)
// gives what a VJP after an Eval (which forgets it) does, after changes of
// each of them.
func TestConvVJPReusesForwardOnlyWhenValid(t *testing.T) {
	for _, tc := range convCases() {
		t.Run(tc.name, func(t *testing.T) {
			c, e, x, z, g := convSetup(t, tc, 11)
			tmp := make([]float64, e.Len())
			full := solver.Sample{Seed: 1, Size: e.Terms()}
			check := func(msg string, z []float64, s solver.Sample) {
				t.Helper()
				got := make([]float64, e.Len())
				_, err := e.VJPHidden(got, z, g, s)
				require.NoError(t, err)
				dz, dx := make([]float64, e.Len()), make([]float64, len(x))
				ZeroGrads(c.Params())
				require.NoError(t, e.VJP(dz, dx, z, g))
				grads := make([][]float64, 0)
				for _, p := range c.Params() {
					grads = append(grads, slices.Clone(p.GradData()))
				}
				require.NoError(t, e.EvalExact(tmp, z)) // forgets the forward pass
				want := make([]float64, e.Len())
				_, err = e.VJPHidden(want, z, g, s)
				require.NoError(t, err)
				requireRel(t, want, got, 1e-12, msg+": VJPHidden")
				require.NoError(t, e.EvalExact(tmp, z))
				ZeroGrads(c.Params())
				wantDz, wantDx := make([]float64, e.Len()), make([]float64, len(x))
				require.NoError(t, e.VJP(wantDz, wantDx, z, g))
				requireRel(t, wantDz, dz, 1e-12, msg+": VJP dz")
				requireRel(t, wantDx, dx, 1e-12, msg+": VJP dx")
				for i, p := range c.Params() {
					requireRel(t, p.GradData(), grads[i], 1e-12, msg+": "+p.Name())
				}
			}
			check("first", z, full)
			check("again", z, full)
			rng := rand.New(rand.NewPCG(12, 13))
			for _, p := range c.Params() {
				for i := range p.Data() {
					p.Data()[i] += 0.05 * rng.NormFloat64()
				}
				require.NoError(t, c.Project())
				check("after "+p.Name(), z, full)
			}
			if e.Terms() > 1 {
				check("sample 1", z, solver.Sample{Seed: 1, Size: 1})
				check("sample 2", z, solver.Sample{Seed: 2, Size: 1})
			}
			z2 := slices.Clone(z)
			z2[len(z2)-1] += 0.5
			check("new point", z2, full)
			x[0] += 0.5
			require.NoError(t, e.SetInput(x))
			check("new input", z2, full)
		})
	}
}
