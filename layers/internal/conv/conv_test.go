package conv

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/deqgo/deq/internal/f32"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// naive returns the convolution of x by the Out×In×K×K kernel w directly.
func naive(g Geom, out int, w, x []float64) []float64 {
	oh, ow := g.OutH(), g.OutW()
	y := make([]float64, out*oh*ow)
	for o := range out {
		for oy := range oh {
			for ox := range ow {
				s := 0.0
				for c := range g.In {
					for ky := range g.K {
						for kx := range g.K {
							iy, ix := oy*g.Stride+ky-g.Pad, ox*g.Stride+kx-g.Pad
							if iy >= 0 && iy < g.H && ix >= 0 && ix < g.W {
								s += w[((o*g.In+c)*g.K+ky)*g.K+kx] * x[(c*g.H+iy)*g.W+ix]
							}
						}
					}
				}
				y[(o*oh+oy)*ow+ox] = s
			}
		}
	}
	return y
}

func randSlice(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

func geoms() []Geom {
	return []Geom{
		{In: 3, H: 5, W: 4, K: 3, Stride: 1, Pad: 1},
		{In: 2, H: 7, W: 8, K: 3, Stride: 2, Pad: 1},
		{In: 1, H: 28, W: 28, K: 3, Stride: 2, Pad: 1},
		{In: 2, H: 2, W: 3, K: 3, Stride: 1, Pad: 1},
		{In: 2, H: 6, W: 5, K: 5, Stride: 1, Pad: 2},
		{In: 1, H: 4, W: 4, K: 3, Stride: 1, Pad: 0},
		{In: 1, H: 1, W: 1, K: 5, Stride: 1, Pad: 2}, // padding wider than the image
	}
}

func TestIm2ColGemmIsConvolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, g := range geoms() {
		t.Run(fmt.Sprint(g), func(t *testing.T) {
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
			const out = 3
			w := randSlice(rng, out*g.ColRows())
			x := randSlice(rng, g.ImageLen())
			col := randSlice(rng, g.ColRows()*g.ColCols()) // garbage to overwrite
			g.Im2Col(col, x)
			y := randSlice(rng, out*g.ColCols())
			Gemm(false, false, out, g.ColCols(), g.ColRows(), 1, w, g.ColRows(), col, g.ColCols(), 0, y, g.ColCols())
			want := naive(g, out, w, x)
			for i := range want {
				if math.Abs(y[i]-want[i]) > 1e-12 {
					t.Fatalf("y[%d] = %v, want %v", i, y[i], want[i])
				}
			}
		})
	}
}

func TestCol2ImIsAdjoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, g := range geoms() {
		x := randSlice(rng, g.ImageLen())
		c := randSlice(rng, g.ColRows()*g.ColCols())
		col := make([]float64, len(c))
		g.Im2Col(col, x)
		back := make([]float64, len(x))
		g.Col2ImAdd(back, c)
		a, b := 0.0, 0.0
		for i := range c {
			a += col[i] * c[i]
		}
		for i := range x {
			b += x[i] * back[i]
		}
		if math.Abs(a-b) > 1e-10*math.Abs(a) {
			t.Errorf("%v: ⟨im2col x, c⟩ = %v, ⟨x, col2im c⟩ = %v", g, a, b)
		}
	}
}

// countingBLAS is a BLAS other than gonum's own (as OpenBLAS is) that
// counts its matrix products and computes them with gonum's.
type countingBLAS struct {
	gonum.Implementation
	calls *int
}

func (c countingBLAS) Dgemm(ta, tb blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, cm []float64, ldc int) {
	*c.calls++
	c.Implementation.Dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cm, ldc)
}

func (c countingBLAS) Sgemm(ta, tb blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, cm []float32, ldc int) {
	*c.calls++
	c.Implementation.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cm, ldc)
}

// useBLAS installs impl as blas64's and blas32's implementation for the
// rest of the test.
func useBLAS(t *testing.T, impl countingBLAS) {
	old64, old32 := blas64.Implementation(), blas32.Implementation()
	blas64.Use(impl)
	blas32.Use(impl)
	t.Cleanup(func() { blas64.Use(old64); blas32.Use(old32) })
}

// TestGemmAllTransposes checks Gemm against the sum for every transpose,
// with gonum's BLAS (in 64×64×64 tiles, allocating nothing) and with
// another BLAS (in one call).
func TestGemmAllTransposes(t *testing.T) {
	for _, other := range []bool{false, true} {
		name := map[bool]string{false: "gonum tiles", true: "other BLAS, one call"}[other]
		t.Run(name, func(t *testing.T) {
			calls := 0
			if other {
				useBLAS(t, countingBLAS{calls: &calls})
			}
			testGemmAllTransposes(t, other, &calls)
			if other {
				// float32 takes the same path: one Sgemm.
				a, b, c := []float32{1, 2, 3, 4, 5, 6}, []float32{1, 0, 0, 1, 1, 1}, make([]float32, 4)
				calls = 0
				Gemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2)
				if calls != 1 || fmt.Sprint(c) != "[4 5 10 11]" {
					t.Errorf("float32: %d calls, %v, want 1 call, [4 5 10 11]", calls, c)
				}
			}
		})
	}
}

func testGemmAllTransposes(t *testing.T, other bool, calls *int) {
	rng := rand.New(rand.NewPCG(3, 3))
	const m, n, k = 150, 300, 70
	for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
		a := randSlice(rng, m*k)
		b := randSlice(rng, k*n)
		c := randSlice(rng, m*n)
		at := func(i, l int) float64 {
			if tr[0] {
				return a[l*m+i]
			}
			return a[i*k+l]
		}
		bt := func(l, j int) float64 {
			if tr[1] {
				return b[j*k+l]
			}
			return b[l*n+j]
		}
		lda, ldb := k, n
		if tr[0] {
			lda = m
		}
		if tr[1] {
			ldb = k
		}
		want := make([]float64, m*n)
		for i := range m {
			for j := range n {
				s := 0.0
				for l := range k {
					s += at(i, l) * bt(l, j)
				}
				want[i*n+j] = 2*s + 0.5*c[i*n+j]
			}
		}
		*calls = 0
		Gemm(tr[0], tr[1], m, n, k, 2, a, lda, b, ldb, 0.5, c, n)
		for i := range want {
			if math.Abs(c[i]-want[i]) > 1e-11 {
				t.Fatalf("%v: c[%d] = %v, want %v", tr, i, c[i], want[i])
			}
		}
		if other {
			if *calls != 1 {
				t.Errorf("%v: %d calls of the installed Dgemm, want 1", tr, *calls)
			}
			continue
		}
		if allocs := testing.AllocsPerRun(3, func() {
			Gemm(tr[0], tr[1], m, n, k, 1, a, lda, b, ldb, 0, c, n)
		}); allocs != 0 {
			t.Errorf("%v: %v allocations", tr, allocs)
		}
	}
}

// TestShifted checks Forward against the direct convolution on every image
// of a batch, Adjoint and WeightGrad against Forward by the adjoint
// identities, and that calls on two halves of the batch give the whole.
func TestShifted(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, sz := range [][3]int{{3, 5, 4}, {2, 1, 1}, {2, 2, 3}, {4, 14, 14}} {
		t.Run(fmt.Sprint(sz), func(t *testing.T) {
			s := Shifted[float64]{In: sz[0], H: sz[1], W: sz[2]}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			g := Geom{In: s.In, H: s.H, W: s.W, K: 3, Stride: 1, Pad: 1}
			const out, n = 3, 3
			ld, img, oimg := s.Ld(n), g.ImageLen(), out*s.H*s.W
			w := randSlice(rng, out*g.ColRows())
			wr := make([]float64, len(w))
			s.Repack(wr, w, out)
			xs := randSlice(rng, n*img)
			xp := make([]float64, s.In*ld)
			for b := range n {
				s.Pack(xp, ld, s.In, xs[b*img:(b+1)*img], b)
			}
			yp := make([]float64, out*ld)
			s.Forward(yp, out, wr, xp, ld, 0, 1)
			s.Forward(yp, out, wr, xp, ld, 1, n)
			y := make([]float64, oimg)
			for b := range n {
				s.Unpack(y, yp, ld, out, b)
				want := naive(g, out, w, xs[b*img:(b+1)*img])
				for i := range want {
					if math.Abs(y[i]-want[i]) > 1e-12 {
						t.Fatalf("image %d: y[%d] = %v, want %v", b, i, y[i], want[i])
					}
				}
			}
			// ⟨d, W∗x⟩ = ⟨Wᵀ∗d, x⟩ = ⟨dW, W⟩ (the map is linear in W).
			ds := randSlice(rng, n*oimg)
			dp := make([]float64, out*ld)
			for b := range n {
				s.Pack(dp, ld, out, ds[b*oimg:(b+1)*oimg], b)
			}
			dxp := make([]float64, s.In*ld)
			s.Adjoint(dxp, out, wr, dp, ld, 0, n)
			dwr := make([]float64, len(w))
			s.WeightGrad(dwr, out, dp, xp, ld, 0, 2)
			s.WeightGrad(dwr, out, dp, xp, ld, 2, n)
			dw := make([]float64, len(w))
			s.UnrepackAdd(dw, dwr, out)
			a, bx, bw := 0.0, 0.0, 0.0
			dx := make([]float64, img)
			for b := range n {
				s.Unpack(y, yp, ld, out, b)
				s.Unpack(dx, dxp, ld, s.In, b)
				for i, v := range y {
					a += v * ds[b*oimg+i]
				}
				for i, v := range dx {
					bx += v * xs[b*img+i]
				}
			}
			for i, v := range dw {
				bw += v * w[i]
			}
			if math.Abs(a-bx) > 1e-10*math.Abs(a) || math.Abs(a-bw) > 1e-10*math.Abs(a) {
				t.Errorf("⟨d, W∗x⟩ = %v, ⟨Wᵀ∗d, x⟩ = %v, ⟨dW, W⟩ = %v", a, bx, bw)
			}
			if allocs := testing.AllocsPerRun(3, func() {
				s.Forward(yp, out, wr, xp, ld, 0, n)
				s.Adjoint(dxp, out, wr, dp, ld, 0, n)
				s.WeightGrad(dwr, out, dp, xp, ld, 0, n)
			}); allocs != 0 {
				t.Errorf("%v allocations", allocs)
			}
		})
	}
}

// TestShiftedCheck checks that Check refuses a non-positive size and names
// the fields.
func TestShiftedCheck(t *testing.T) {
	for _, s := range []Shifted[float64]{{In: 0, H: 2, W: 2}, {In: 1, H: 0, W: 2}, {In: 1, H: 2, W: -1}} {
		err := s.Check()
		if err == nil || !strings.Contains(err.Error(), "Shifted.In, H, W") {
			t.Errorf("%+v: Check() = %v, want an error naming Shifted's fields", s, err)
		}
	}
}

// shiftedRun runs Forward, Adjoint and WeightGrad of s on the CHW images
// xs and cotangents ds (n of each) with the OIHW weights w (out rows) and
// returns their results: the convolutions and transposed convolutions as
// CHW images, the weight gradient in OIHW order.
func shiftedRun[T Float](s Shifted[T], out, n int, w, xs, ds []float64) (y, dx, dw []float64) {
	ld, img, oimg := s.Ld(n), s.In*s.H*s.W, out*s.H*s.W
	wr := make([]T, len(w))
	s.Repack(wr, w, out)
	xp, dp := make([]T, s.In*ld), make([]T, out*ld)
	for b := range n {
		s.Pack(xp, ld, s.In, xs[b*img:(b+1)*img], b)
		s.Pack(dp, ld, out, ds[b*oimg:(b+1)*oimg], b)
	}
	yp, dxp, dwr := make([]T, out*ld), make([]T, s.In*ld), make([]T, len(w))
	s.Forward(yp, out, wr, xp, ld, 0, n)
	s.Adjoint(dxp, out, wr, dp, ld, 0, n)
	s.WeightGrad(dwr, out, dp, xp, ld, 0, n)
	y, dx, dw = make([]float64, n*oimg), make([]float64, n*img), make([]float64, len(w))
	for b := range n {
		s.Unpack(y[b*oimg:(b+1)*oimg], yp, ld, out, b)
		s.Unpack(dx[b*img:(b+1)*img], dxp, ld, s.In, b)
	}
	s.UnrepackAdd(dw, dwr, out)
	return y, dx, dw
}

func absAll(x []float64) []float64 {
	a := make([]float64, len(x))
	for i, v := range x {
		a[i] = math.Abs(v)
	}
	return a
}

// TestShiftedFloat32 checks the single-precision Shifted against the
// double-precision one entry by entry. Each entry of a result is a sum of N
// products a_i·b_i of float64 values: Forward and Adjoint sum N = 9·In and
// 9·Out terms, WeightGrad one per pixel column of the batch. In float32 the
// factors are first rounded (relative error at most u = 2⁻²⁴ each) and the
// N products summed in some order, so by the standard error analysis of
// inner products the float32 result differs from the exact sum by at most
// γ_{N+2}·Σ|a_i||b_i|, γ_m = mu/(1 − mu); the float64 reference is within
// γ_N (with float64's u = 2⁻⁵³) of the exact sum, added to the bound. Σ|a_i||b_i| is the
// same product computed in float64 on the absolute values.
func TestShiftedFloat32(t *testing.T) {
	const u = 0x1p-24
	gamma := func(m int) float64 { return float64(m) * u / (1 - float64(m)*u) }
	rng := rand.New(rand.NewPCG(5, 5))
	for _, sz := range [][3]int{{3, 5, 4}, {2, 1, 1}, {16, 14, 14}} {
		const out, n = 5, 3
		s64 := Shifted[float64]{In: sz[0], H: sz[1], W: sz[2]}
		s32 := Shifted[float32](s64)
		w := randSlice(rng, out*9*s64.In)
		xs := randSlice(rng, n*s64.In*s64.H*s64.W)
		ds := randSlice(rng, n*out*s64.H*s64.W)
		y, dx, dw := shiftedRun(s64, out, n, w, xs, ds)
		ya, dxa, dwa := shiftedRun(s64, out, n, absAll(w), absAll(xs), absAll(ds))
		y32, dx32, dw32 := shiftedRun(s32, out, n, w, xs, ds)
		for _, r := range []struct {
			name          string
			got, want, ab []float64
			terms         int
		}{
			{"Forward", y32, y, ya, 9 * s64.In},
			{"Adjoint", dx32, dx, dxa, 9 * out},
			{"WeightGrad", dw32, dw, dwa, s64.Ld(n)},
		} {
			bound := gamma(r.terms+2) + float64(r.terms)*0x1p-53/(1-float64(r.terms)*0x1p-53)
			for i, v := range r.got {
				if math.Abs(v-r.want[i]) > bound*r.ab[i] {
					t.Fatalf("%v %s: entry %d = %v, float64 %v: error %.3g above γ_%d·Σ|a||b| = %.3g",
						sz, r.name, i, v, r.want[i], math.Abs(v-r.want[i]), r.terms+2, bound*r.ab[i])
				}
			}
		}
	}
}

// TestGemmFloat32 checks Gemm in float32 against float64 within the
// inner-product bound of TestShiftedFloat32 and that it allocates nothing.
func TestGemmFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	const m, n, k = 70, 130, 150
	a, b := randSlice(rng, m*k), randSlice(rng, k*n)
	a32, b32 := make([]float32, m*k), make([]float32, k*n)
	f32.Convert(a32, a)
	f32.Convert(b32, b)
	c, ca := make([]float64, m*n), make([]float64, m*n)
	Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
	Gemm(false, false, m, n, k, 1, absAll(a), k, absAll(b), n, 0, ca, n)
	c32 := make([]float32, m*n)
	Gemm(false, false, m, n, k, 1, a32, k, b32, n, 0, c32, n)
	bound := float64(k+2) * 0x1p-24 / (1 - float64(k+2)*0x1p-24)
	for i, v := range c32 {
		if d := math.Abs(float64(v) - c[i]); d > bound*ca[i] {
			t.Fatalf("c[%d] = %v, float64 %v: error %.3g above %.3g", i, v, c[i], d, bound*ca[i])
		}
	}
	if allocs := testing.AllocsPerRun(3, func() {
		Gemm(true, false, k, n, m, 1, a32, k, c32, n, 0, b32, n)
	}); allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}
