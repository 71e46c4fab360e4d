package layers

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// precCase builds one cell configuration in a given precision and
// activation; the cells of one case share their initial parameters (they
// come from the configuration's seed).
type precCase struct {
	name string
	cell func(p Precision, a Activation) Cell
	n    int
	// terms is N, an upper bound on the number of products summed in any
	// entry of any matrix product the cell computes (inner dimensions,
	// batch rows of the parameter gradients, pixel columns of the
	// convolution's weight gradient).
	terms int
}

func precCases() []precCase {
	dense := func(h, d, rows int) func(Precision, Activation) Cell {
		return func(p Precision, a Activation) Cell {
			return mustCell(NewDense(DenseConfig{Hidden: h, Input: d, Rows: rows, Activation: a, Precision: p, Seed: uint64(h + d + rows)}))
		}
	}
	convCell := func(ch, ht, wd, k int, inputConv bool) func(Precision, Activation) Cell {
		return func(p Precision, a Activation) Cell {
			return mustCell(NewConv(ConvConfig{Channels: ch, Height: ht, Width: wd, Kernels: k, InputConv: inputConv, Activation: a, Precision: p, Seed: uint64(ch + k)}))
		}
	}
	// Conv: 9·M·C products in the transposed convolution, at most
	// Shifted.Ld(n) pixel columns in the weight gradient.
	convTerms := func(ch, ht, wd, k, n int) int { return max(9*k*ch, wd+2+n*(ht+1)*(wd+1)) }
	return []precCase{
		{"dense", dense(6, 4, 1), 5, 6},
		{"dense-rows", dense(20, 30, 3), 4, 30},
		{"conv", convCell(3, 4, 5, 1, false), 3, convTerms(3, 4, 5, 1, 3)},
		{"conv-kernels-inputconv", convCell(2, 3, 3, 3, true), 2, convTerms(2, 3, 3, 3, 2)},
	}
}

// precPair is a case's cell in Float64 and in Float32 and its magnitude
// cell, with the same random parameters, input, point and cotangent.
type precPair struct {
	c64, c32, abs Cell
	e64, e32, ea  Evaluator
	x, z, g       []float64
}

func abs(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Abs(x)
	}
	return out
}

// newPrecPair builds the cells of tc with activation a and random biases.
// The magnitude cell is the Float64 ReLU cell with the absolute values of
// the parameters, at the absolute values of the input (see
// TestFloat32MatchesFloat64).
func newPrecPair(t *testing.T, tc precCase, a Activation, seed uint64) *precPair {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 31))
	p := &precPair{c64: tc.cell(Float64, a), c32: tc.cell(Float32, a), abs: tc.cell(Float64, ReLU)}
	for i, q := range p.c64.Params() {
		if q.Name() == "b" {
			copy(q.Data(), randVec(rng, len(q.Data()), 0.3))
		}
		copy(p.c32.Params()[i].Data(), q.Data())
		copy(p.abs.Params()[i].Data(), abs(q.Data()))
	}
	var err error
	for _, ev := range []struct {
		c Cell
		e *Evaluator
	}{{p.c64, &p.e64}, {p.c32, &p.e32}, {p.abs, &p.ea}} {
		*ev.e, err = ev.c.Evaluator(tc.n)
		require.NoError(t, err)
	}
	sh := p.c64.Shape()
	p.x = randVec(rng, tc.n*sh.InputLen(), 1)
	p.z = randVec(rng, tc.n*sh.HiddenLen(), 1)
	p.g = randVec(rng, tc.n*sh.HiddenLen(), 1)
	p.setInput(t)
	return p
}

func (p *precPair) setInput(t *testing.T) {
	t.Helper()
	require.NoError(t, p.e64.SetInput(p.x))
	require.NoError(t, p.e32.SetInput(p.x))
	require.NoError(t, p.ea.SetInput(abs(p.x)))
}

// vjps returns everything the evaluator computes at (z, g): the exact
// evaluation, the exact VJPHidden, VJP's dz and dx and the parameter
// gradients (added to zero gradients), named.
func vjps(t *testing.T, c Cell, e Evaluator, z, g []float64, nx int) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{"eval": make([]float64, len(z)), "hidden": make([]float64, len(z)), "dz": make([]float64, len(z)), "dx": make([]float64, nx)}
	require.NoError(t, e.EvalExact(out["eval"], z))
	_, err := e.VJPHidden(out["hidden"], z, g, solver.Sample{Seed: 1, Size: e.Terms()})
	require.NoError(t, err)
	ZeroGrads(c.Params())
	require.NoError(t, e.VJP(out["dz"], out["dx"], z, g))
	for _, q := range c.Params() {
		out["∂"+q.Name()] = slices.Clone(q.GradData())
	}
	ZeroGrads(c.Params())
	return out
}

// gamma32 is γ_m = m·u/(1 − m·u) for float32's unit roundoff u = 2⁻²⁴.
func gamma32(m int) float64 { return gammaU(m, 0x1p-24) }

// gamma64 is γ_m for float64's unit roundoff u = 2⁻⁵³: the Float64
// reference's own error on a sum of m products, relative to the magnitude.
func gamma64(m int) float64 { return gammaU(m, 0x1p-53) }

func gammaU(m int, u float64) float64 { return float64(m) * u / (1 - float64(m)*u) }

// tanhCurv is sup |tanh″| = 4/(3√3), the Lipschitz constant of tanh′.
var tanhCurv = 4 / (3 * math.Sqrt(3))

// TestFloat32MatchesFloat64 compares every output of Float32 cells with
// the Float64 cells of the same parameters, entry by entry, against a
// bound derived from float32 rounding.
//
// Every product entry is a sum of at most N terms a_i·b_i (N = the case's
// terms); in float32 its operands are rounded (relative error at most
// u = 2⁻²⁴ each) and the terms summed, so it differs from the exact sum by
// at most γ_{N+2}·Σ|a_i||b_i|, γ_m = mu/(1 − mu) (the standard bound for
// inner products in any summation order). Σ|a_i||b_i| is what the
// magnitude cell computes: the Float64 ReLU cell with |θ|, at |x|, |z| and
// |g| (its pre-activations are positive, so σ and σ′ = 1 drop out) — call
// its outputs M (and P = ‖M_eval‖∞).
//
//   - Evaluation: the pre-activation's products (zW and xU, or W∗z) err by
//     at most γ·M_eval, and σ is 1-Lipschitz: |Δf| ≤ γ·M_eval.
//   - VJPs (tanh): the cotangent of the pre-activation is δ = g ⊙ σ′(pre)
//     (over M terms, g/M), with σ′ taken at the float32 pre-activation:
//     |Δσ′| ≤ sup|σ″|·γ·P. A product of δ with a weight or an input then
//     errs by at most γ·M (its own rounding, |σ′| ≤ 1) plus
//     sup|σ″|·γ·P·M (the change in δ); sums of δ (the bias gradient, the
//     injection's cotangent) only by the second. So |Δ| ≤ γ(1 + sup|σ″|·P)·M.
//
// The Float64 reference has its own rounding, at most γ⁽⁶⁴⁾_N·M (γ with
// float64's u = 2⁻⁵³), added to the bound. ReLU's σ′ jumps at zero, so
// no rounding bound holds for its VJPs; ReLU cells are compared on the
// evaluation only.
//
// Everything is compared at a first point and after a change of every
// parameter; the evaluation also after a change of any one entry (see
// checkOneEntry).
func TestFloat32MatchesFloat64(t *testing.T) {
	for _, tc := range precCases() {
		for _, act := range []Activation{Tanh, ReLU} {
			t.Run(tc.name+"-"+act.String(), func(t *testing.T) {
				p := newPrecPair(t, tc, act, 3)
				check := func(stage string) {
					t.Helper()
					nx := len(p.x)
					want := vjps(t, p.c64, p.e64, p.z, p.g, nx)
					got := vjps(t, p.c32, p.e32, p.z, p.g, nx)
					mag := vjps(t, p.abs, p.ea, abs(p.z), abs(p.g), nx)
					gam := gamma32(tc.terms + 2)
					pmax := slices.Max(mag["eval"])
					for name, w := range want {
						bound := gam
						if name != "eval" {
							if act == ReLU {
								continue
							}
							bound *= 1 + tanhCurv*pmax
						}
						bound += gamma64(tc.terms)
						differ := false
						for i, v := range got[name] {
							if d := math.Abs(v - w[i]); d > bound*mag[name][i] {
								t.Fatalf("%s: %s[%d] = %v in float32, %v in float64: |Δ| = %.3g > %.3g", stage, name, i, v, w[i], d, bound*mag[name][i])
							}
							differ = differ || v != w[i]
						}
						require.True(t, differ || name == "dx", "%s: %s is the same in both precisions", stage, name)
					}
				}
				check("initial")
				// The float32 copies of the weights follow changes in
				// place, without a new SetInput.
				rng := rand.New(rand.NewPCG(4, 4))
				for i, q := range p.c64.Params() {
					for j := range q.Data() {
						q.Data()[j] *= 1 + 0.2*rng.NormFloat64()
					}
					copy(p.c32.Params()[i].Data(), q.Data())
					copy(p.abs.Params()[i].Data(), abs(q.Data()))
				}
				// The input's term (xU + b) is cached by SetInput, as the
				// Evaluator contract says: set it again after the change.
				p.setInput(t)
				check("after a change of the parameters")
				checkOneEntry(t, tc, p)
			})
		}
	}
}

// checkOneEntry compares the evaluations of p's Float32 and Float64 cells,
// entry by entry against the bound of TestFloat32MatchesFloat64, after a
// change by ±h, h = 1e-2, of any one entry of z, of x or of a parameter
// (one at a time, SetInput called again after each), so that the float32
// copies of the weights and the input must follow a change of one entry.
//
// With the bound on the VJPs at the unchanged point, these bounds imply
// that the Float32 VJPs agree with central differences of their own map
// φ(v) = ⟨g, f(z, x; θ)⟩ at step h to within the sum of the bounds
// (Σ_k |g_k|·(bound on f_k at v + he_i and at v − he_i)/(2h), and the
// VJPs' bound) and the Float64 map's own finite-difference error.
func checkOneEntry(t *testing.T, tc precCase, p *precPair) {
	t.Helper()
	const h = 1e-2
	bound := gamma32(tc.terms+2) + gamma64(tc.terms)
	n := len(p.z)
	f64, f32, mag := make([]float64, n), make([]float64, n), make([]float64, n)
	// Each variable's values in c64 and c32 (the same slice for z and x)
	// and, for a parameter, in the magnitude cell.
	type variable struct {
		name          string
		v64, v32, abs []float64
	}
	vars := []variable{{"z", p.z, p.z, nil}, {"x", p.x, p.x, nil}}
	for j, q := range p.c64.Params() {
		vars = append(vars, variable{q.Name(), q.Data(), p.c32.Params()[j].Data(), p.abs.Params()[j].Data()})
	}
	set := func(v variable, i int, val float64) {
		v.v64[i], v.v32[i] = val, val
		if v.abs != nil {
			v.abs[i] = math.Abs(val)
		}
	}
	for _, v := range vars {
		for i, v0 := range v.v64 {
			for _, step := range []float64{h, -h} {
				set(v, i, v0+step)
				p.setInput(t)
				require.NoError(t, p.e64.EvalExact(f64, p.z))
				require.NoError(t, p.e32.EvalExact(f32, p.z))
				require.NoError(t, p.ea.EvalExact(mag, abs(p.z)))
				for k, w := range f64 {
					if d := math.Abs(f32[k] - w); d > bound*mag[k] {
						t.Fatalf("%s[%d] changed by %+g: eval[%d] = %v in float32, %v in float64: |Δ| = %.3g > %.3g", v.name, i, step, k, f32[k], w, d, bound*mag[k])
					}
				}
			}
			set(v, i, v0)
		}
	}
	p.setInput(t)
}

// TestFloat32DoesNotAllocate: after the first call, the Float32 cells'
// evaluations, VJPs and SetInput allocate nothing (the float32 copies and
// scratch are kept).
func TestFloat32DoesNotAllocate(t *testing.T) {
	for _, tc := range precCases() {
		t.Run(tc.name, func(t *testing.T) {
			p := newPrecPair(t, tc, Tanh, 7)
			e, z, g := p.e32, p.z, p.g
			z2 := slices.Clone(z)
			z2[0]++
			dst, dx := make([]float64, len(z)), make([]float64, len(p.x))
			s := solver.Sample{Seed: 2, Size: e.Terms()}
			ops := []struct {
				name string
				op   func()
			}{
				{"SetInput", func() { _ = e.SetInput(p.x) }},
				{"Eval", func() { _, _ = e.Eval(dst, z, s) }},
				{"EvalExact", func() { _ = e.EvalExact(dst, z) }},
				{"VJPHidden", func() { _, _ = e.VJPHidden(dst, z, g, s) }},
				{"VJPHidden at two points", func() { _, _ = e.VJPHidden(dst, z, g, s); _, _ = e.VJPHidden(dst, z2, g, s) }},
				{"VJP", func() { _ = e.VJP(dst, dx, z2, g) }},
				{"VJP without dz, dx", func() { _ = e.VJP(nil, nil, z, g) }},
			}
			for _, o := range ops {
				o.op()
				require.Zero(t, testing.AllocsPerRun(5, o.op), o.name)
			}
			ZeroGrads(p.c32.Params())
		})
	}
}

func TestPrecisionNames(t *testing.T) {
	require.Equal(t, []Precision{Float64, Float32}, Precisions())
	for _, p := range []Precision{DefaultPrecision, Float64, Float32} {
		b, err := p.MarshalText()
		require.NoError(t, err)
		var q Precision
		require.NoError(t, q.UnmarshalText(b))
		require.Equal(t, p, q)
	}
	var q Precision
	require.ErrorIs(t, q.UnmarshalText([]byte("float16")), errUnknown)
	_, err := NewDense(DenseConfig{Hidden: 2, Input: 2, Precision: 3})
	require.ErrorContains(t, err, "DenseConfig.Precision")
	// The zero value is Float64.
	d, err := NewDense(DenseConfig{Hidden: 2, Input: 2})
	require.NoError(t, err)
	require.Equal(t, Float64, d.Precision())
	_, err = NewConv(ConvConfig{Channels: 1, Height: 2, Width: 2, Precision: -1})
	require.ErrorContains(t, err, "ConvConfig.Precision")
}
