package solver

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// lpLogSumExp computes ‖x‖_p = exp((1/p) log Σ|x_i|^p) through a
// log-sum-exp in log space, a computation path independent of the
// implementation's rescaling, and exact to a few ulps of the logarithm.
func lpLogSumExp(x []float64, p float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		if v != 0 {
			m = math.Max(m, p*math.Log(math.Abs(v)))
		}
	}
	if math.IsInf(m, -1) {
		return 0
	}
	s := 0.0
	for _, v := range x {
		if v != 0 {
			s += math.Exp(p*math.Log(math.Abs(v)) - m)
		}
	}
	return math.Exp((m + math.Log(s)) / p)
}

func TestLPNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 0))
	random := randVec(rng, 100)
	cases := []struct {
		name string
		x    []float64
	}{
		{"pythagoras", []float64{3, -4}},
		{"zero", []float64{0, 0, 0}},
		{"single", []float64{-2.5}},
		{"huge", []float64{1e300, -1e300, 1e300}},
		{"huge-mixed", []float64{1e308, 1, -1e-300}},
		{"tiny", []float64{1e-300, -2e-300, 5e-324}},
		{"wide-range", []float64{1e200, -1e-200, 1, 3e150}},
		{"random", random},
	}
	for _, p := range []float64{2, 3, 4, 7.5, 100} {
		for _, c := range cases {
			n, err := NewLP(p, len(c.x))
			require.NoError(t, err)
			got := n.Norm(c.x)
			want := lpLogSumExp(c.x, p)
			if want == 0 {
				require.Zero(t, got, "%s p=%v", c.name, p)
				continue
			}
			require.InEpsilon(t, want, got, 1e-12, "%s p=%v", c.name, p)
		}
		// The direct formula agrees where it neither overflows nor underflows.
		direct := 0.0
		for _, v := range random {
			direct += math.Pow(math.Abs(v), p)
		}
		n, _ := NewLP(p, len(random))
		require.InEpsilon(t, math.Pow(direct, 1/p), n.Norm(random), 1e-13, "direct p=%v", p)
	}
	n, _ := NewLP(3, 3)
	// A single nonzero entry, even the smallest subnormal, is its own norm.
	require.Equal(t, 5e-324, n.Norm([]float64{0, -5e-324, 0}))
	require.Equal(t, math.MaxFloat64, n.Norm([]float64{0, math.MaxFloat64, 0}))
	require.True(t, math.IsNaN(n.Norm([]float64{1, math.NaN(), 1e300})))
	require.True(t, math.IsInf(n.Norm([]float64{1, math.Inf(-1), 2}), 1))
	require.Panics(t, func() { n.Norm([]float64{1, 2}) })
}

func TestLInfNorm(t *testing.T) {
	n, err := NewLInf(4)
	require.NoError(t, err)
	require.Equal(t, 7.0, n.Norm([]float64{1, -7, 3, 0}))
	require.Equal(t, 1e308, n.Norm([]float64{1e308, -1e-300, 0, 5}))
	require.Zero(t, n.Norm(make([]float64, 4)))
	require.True(t, math.IsNaN(n.Norm([]float64{1e300, math.NaN(), 1, 2})))
	require.True(t, math.IsNaN(n.Norm([]float64{math.NaN(), 1, 2, 3})))
	require.True(t, math.IsInf(n.Norm([]float64{math.Inf(-1), 1, 2, 3}), 1))
	require.Equal(t, "linf", n.String())
}

// schattenReference returns (Σ σ_i^p)^{1/p} of a from gonum's singular
// values, or σ_max for p = ∞.
func schattenReference(a *mat.Dense, p float64) float64 {
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDNone) {
		panic("SVD failed")
	}
	sv := svd.Values(nil)
	if math.IsInf(p, 1) {
		return sv[0]
	}
	s := 0.0
	for _, v := range sv {
		s += math.Pow(v, p)
	}
	return math.Pow(s, 1/p)
}

func TestSchattenNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(52, 0))
	shapes := [][2]int{{1, 1}, {1, 5}, {5, 1}, {4, 4}, {7, 3}, {3, 7}, {20, 20}}
	for _, sh := range shapes {
		r, c := sh[0], sh[1]
		a := randDense(rng, r, c)
		x := a.RawMatrix().Data
		for _, p := range []float64{2, 3, 4, 7.5, math.Inf(1)} {
			n, err := NewSchatten(p, r, c)
			require.NoError(t, err)
			require.InEpsilon(t, schattenReference(a, p), n.Norm(x), 1e-12, "%d×%d p=%v", r, c, p)
			// Scale invariance far from 1 (the SVD rescales internally).
			for _, f := range []float64{1e200, 1e-200} {
				y := make([]float64, len(x))
				for i, v := range x {
					y[i] = f * v
				}
				require.InEpsilon(t, f*schattenReference(a, p), n.Norm(y), 1e-12, "%d×%d p=%v scale %g", r, c, p, f)
			}
			// Clone computes the same value with its own scratch.
			require.Equal(t, n.Norm(x), n.Clone().Norm(x))
		}
		// p = 2 is the Frobenius norm.
		frob := 0.0
		for _, v := range x {
			frob += v * v
		}
		n2, _ := NewSchatten(2, r, c)
		require.InEpsilon(t, math.Sqrt(frob), n2.Norm(x), 1e-14)
		// p = ∞ is the spectral norm, the square root of the largest
		// eigenvalue of AᵀA.
		var ata mat.SymDense
		ata.SymOuterK(1, a.T())
		var eig mat.EigenSym
		require.True(t, eig.Factorize(&ata, false))
		lmax := 0.0
		for _, v := range eig.Values(nil) {
			lmax = math.Max(lmax, v)
		}
		nInf, _ := NewSchatten(math.Inf(1), r, c)
		require.InEpsilon(t, math.Sqrt(lmax), nInf.Norm(x), 1e-12)
	}
	// Closed forms: a rank-one matrix u vᵀ has the single singular value
	// ‖u‖₂‖v‖₂, and a diagonal matrix has singular values |d_i|.
	u, v := []float64{1, -2, 2}, []float64{3, 4}
	outer := make([]float64, 6)
	for i := range u {
		for j := range v {
			outer[i*2+j] = u[i] * v[j]
		}
	}
	diag := []float64{3, 0, 0, 0, -4, 0, 0, 0, 12}
	for _, p := range []float64{2, 3, 4, math.Inf(1)} {
		n, _ := NewSchatten(p, 3, 2)
		require.InEpsilon(t, 15, n.Norm(outer), 1e-14, "rank one p=%v", p)
		d, _ := NewSchatten(p, 3, 3)
		want := 12.0
		if !math.IsInf(p, 1) {
			want = math.Pow(math.Pow(3, p)+math.Pow(4, p)+math.Pow(12, p), 1/p)
		}
		require.InEpsilon(t, want, d.Norm(diag), 1e-14, "diagonal p=%v", p)
	}
	n, _ := NewSchatten(4, 2, 2)
	require.True(t, math.IsNaN(n.Norm([]float64{1, math.NaN(), 0, 1})))
	require.True(t, math.IsInf(n.Norm([]float64{1, math.Inf(1), 0, 1}), 1))
	require.Zero(t, n.Norm(make([]float64, 4)))
	rows, cols := n.Dims()
	require.Equal(t, [3]float64{2, 2, 4}, [3]float64{float64(rows), float64(cols), n.P()})
}

func TestKappa(t *testing.T) {
	// κ = B·C² of the documented witness: the ℓr (Schatten-r) norm with the
	// smallest κ among r = p (B = p − 1, C = 1), r = 2 ln d (B = r − 1,
	// C = d^{1/r − 1/p}) and r = 2 (B = 1, C = d^{1/2 − 1/p}); d is the
	// dimension for ℓp and min{rows, cols} for Schatten-p.
	ln, e := math.Log, math.E
	lnw := func(d, p float64) (kappa, c float64) { // the ℓ_{2 ln d} witness
		r := 2 * ln(d)
		c = math.Pow(d, 1/r-1/p)
		return (r - 1) * c * c, c
	}
	k20, c20 := lnw(100, 20)
	for _, c := range []struct {
		p        float64
		d        int
		want, wc float64
	}{
		{2, 1, 1, 1}, {4, 1, 1, 1}, {4, 2, math.Sqrt2, math.Sqrt(math.Sqrt2)}, {2.5, 2, math.Pow(2, 0.2), math.Pow(2, 0.1)}, {2, 100, 1, 1}, {4, 100, 3, 1},
		{20, 100, k20, c20}, {3, 3, math.Pow(3, 1.0/3), math.Pow(3, 1.0/6)}, {1e6, 3, math.Pow(3, 1-2/1e6), math.Pow(3, 0.5-1/1e6)},
	} {
		n, err := NewLP(c.p, c.d)
		require.NoError(t, err)
		require.InDelta(t, c.want, n.Kappa(), 1e-12, "ℓp p=%v d=%d", c.p, c.d)
		require.InDelta(t, c.wc, n.C(), 1e-12, "ℓp C p=%v d=%d", c.p, c.d)
		require.LessOrEqual(t, n.Kappa(), c.p-1+1e-12, "never above the ℓp witness")
	}
	require.InDelta(t, e*(2*ln(100)-1), k20*math.Pow(100, 2/20.0), 1e-9, "ℓ_{2 ln d} witness: κ·d^{2/p} = e(2 ln d − 1)")
	for _, c := range []struct {
		d       int
		want, c float64
	}{
		{1, 1, 1}, {2, 2, math.Sqrt2}, {3, 3, math.Sqrt(3)}, {9, 9, 3},
		{10, e * (2*ln(10) - 1), math.Sqrt(e)}, {1000, e * (2*ln(1000) - 1), math.Sqrt(e)},
	} {
		n, err := NewLInf(c.d)
		require.NoError(t, err)
		require.InDelta(t, c.want, n.Kappa(), 1e-12, "ℓ∞ d=%d", c.d)
		require.InDelta(t, c.c, n.C(), 1e-12, "ℓ∞ d=%d", c.d)
	}
	for _, c := range []struct {
		p          float64
		rows, cols int
		want       float64
		c          float64
	}{
		{2, 5, 5, 1, 1},
		{3, 5, 5, math.Pow(5, 1.0/3), math.Pow(5, 1.0/6)},
		{4, 10, 3, math.Sqrt(3), math.Pow(3, 0.25)},
		{4, 100, 100, 3, 1},
		{50, 64, 64, (2*ln(64) - 1) * math.Pow(64, 2/(2*ln(64))-2/50.0), math.Pow(64, 1/(2*ln(64))-1/50.0)},
		{math.Inf(1), 1, 1, 1, 1},
		{math.Inf(1), 256, 64, e * (2*ln(64) - 1), math.Sqrt(e)},
	} {
		n, err := NewSchatten(c.p, c.rows, c.cols)
		require.NoError(t, err)
		require.InDelta(t, c.want, n.Kappa(), 1e-12, "Schatten p=%v %d×%d", c.p, c.rows, c.cols)
		require.InDelta(t, c.c, n.C(), 1e-12, "Schatten C p=%v %d×%d", c.p, c.rows, c.cols)
	}
}

func TestBatched(t *testing.T) {
	ex, err := NewLP(2, 2)
	require.NoError(t, err)
	b, err := NewBatched(ex, 3)
	require.NoError(t, err)
	require.Equal(t, 6, b.Len())
	x := []float64{3, 4, 0, 1, -6, 8}
	require.InDeltaSlice(t, []float64{5, 1, 10}, b.Each(nil, x), 1e-14) // scaled sums of squares: a few ulps
	dst := make([]float64, 3)
	require.InDeltaSlice(t, []float64{5, 1, 10}, b.Each(dst, x), 1e-14)
	require.InDelta(t, 10.0, b.Norm(x), 1e-14)
	b.Agg = AggMean
	require.InDelta(t, 16.0/3, b.Norm(x), 1e-15)
	b.Agg = AggMax
	require.True(t, math.IsNaN(b.Norm([]float64{3, 4, math.NaN(), 1, -6, 8})))
	require.Panics(t, func() { b.Each(make([]float64, 2), x) })
	require.Panics(t, func() { b.Norm(x[:4]) })
	require.Equal(t, "l2", b.String())

	// Batched Schatten: two 2×2 examples.
	sch, err := NewSchatten(math.Inf(1), 2, 2)
	require.NoError(t, err)
	bs, err := NewBatched(sch, 2)
	require.NoError(t, err)
	m := []float64{2, 0, 0, -1, 0, 3, 0, 0}
	require.InDeltaSlice(t, []float64{2, 3}, bs.Each(nil, m), 1e-14) // eigenvalues of the Gram matrix
	require.InDelta(t, 3.0, bs.Clone().Norm(m), 1e-14)

	// Constants: one example keeps its own; a batch of n ℓ∞ examples of
	// dimension d is ℓ∞ of dimension n·d, with the same witness; AggMean
	// multiplies C by n.
	linf, _ := NewLInf(10)
	one, _ := NewBatched(linf, 1)
	require.Equal(t, linf.Kappa(), one.Kappa())
	require.Equal(t, linf.C(), one.C())
	many, _ := NewBatched(linf, 64)
	flat, _ := NewLInf(640)
	require.InDelta(t, flat.C(), many.C(), 1e-12)
	require.InDelta(t, flat.Kappa(), many.Kappa(), 1e-12)
	require.InDelta(t, math.E*(2*math.Log(640)-1), many.Kappa(), 1e-12)
	many.Agg = AggMean
	require.InDelta(t, 64*flat.C(), many.C(), 1e-12)
	// A batch of n ℓ2 examples: the ℓ2 sum of the examples, κ = n.
	l2ex, _ := NewLP(2, 10)
	b2, _ := NewBatched(l2ex, 64)
	require.InDelta(t, 64, b2.Kappa(), 1e-12)
	require.InDelta(t, 8, b2.C(), 1e-12)

	_, err = NewBatched(nil, 3)
	require.ErrorContains(t, err, "nil")
	_, err = NewBatched(ex, 0)
	require.ErrorContains(t, err, "examples = 0")
}

func TestParseNorm(t *testing.T) {
	ok := []struct {
		name       string
		rows, cols int
		want       string
		p          float64 // 0 for ℓ∞
		kind       string
	}{
		{"l2", 5, 1, "l2", 2, "lp"},
		{" L2 ", 5, 1, "l2", 2, "lp"},
		{"lp:2", 5, 1, "l2", 2, "lp"},
		{"lp:4", 3, 2, "lp:4", 4, "lp"},
		{"lp:2.5", 3, 2, "lp:2.5", 2.5, "lp"},
		{"lp:inf", 4, 1, "linf", 0, "linf"},
		{"linf", 4, 1, "linf", 0, "linf"},
		{"LINF", 4, 1, "linf", 0, "linf"},
		{"schatten:2", 3, 2, "schatten:2", 2, "schatten"},
		{"schatten:4", 3, 2, "schatten:4", 4, "schatten"},
		{"schatten:inf", 3, 2, "schatten:inf", math.Inf(1), "schatten"},
	}
	for _, c := range ok {
		n, err := ParseNorm(c.name, c.rows, c.cols)
		require.NoError(t, err, c.name)
		require.Equal(t, c.rows*c.cols, n.Len(), c.name)
		require.Equal(t, c.want, n.String(), c.name)
		switch c.kind {
		case "lp":
			require.Equal(t, c.p, n.(LP).P(), c.name)
		case "linf":
			require.IsType(t, LInf{}, n, c.name)
		case "schatten":
			s := n.(*Schatten)
			require.Equal(t, c.p, s.P(), c.name)
			r, cc := s.Dims()
			require.Equal(t, [2]int{c.rows, c.cols}, [2]int{r, cc}, c.name)
		}
		// String round-trips.
		again, err := ParseNorm(n.String(), c.rows, c.cols)
		require.NoError(t, err)
		require.Equal(t, n.String(), again.String())
	}
	bad := []struct {
		name       string
		rows, cols int
		msg        string
	}{
		{"lp:1.5", 3, 1, "out of range [2, ∞)"},
		{"lp:1", 3, 1, "out of range"},
		{"lp:-inf", 3, 1, "out of range"},
		{"lp:nan", 3, 1, "is not a number"},
		{"lp:NaN", 3, 1, "is not a number"},
		{"lp:four", 3, 1, "is not a number"},
		{"lp", 3, 1, "needs an exponent"},
		{"schatten", 3, 3, "needs an exponent"},
		{"schatten:1", 3, 3, "out of range [2, ∞]"},
		{"schatten:nan", 3, 3, "is not a number"},
		{"l1", 3, 1, "unknown norm"},
		{"l2:3", 3, 1, "unknown norm"},
		{"linf:2", 3, 1, "unknown norm"},
		{"frobenius", 3, 3, "unknown norm"},
		{"", 3, 1, "unknown norm"},
		{"l2", 0, 1, "shape 0×1"},
		{"l2", 2, -1, "shape 2×-1"},
	}
	for _, c := range bad {
		_, err := ParseNorm(c.name, c.rows, c.cols)
		require.Error(t, err, c.name)
		require.Contains(t, err.Error(), c.msg, c.name)
		if strings.Contains(c.msg, "exponent") || strings.Contains(c.msg, "unknown") {
			require.Contains(t, err.Error(), c.name, "the message names the input")
		}
	}
	for _, c := range []struct {
		f   func() error
		msg string
	}{
		{func() error { _, err := NewLP(math.NaN(), 3); return err }, "p = NaN"},
		{func() error { _, err := NewLP(math.Inf(1), 3); return err }, "p = +Inf"},
		{func() error { _, err := NewLP(2, 0); return err }, "d = 0"},
		{func() error { _, err := NewLInf(0); return err }, "d = 0"},
		{func() error { _, err := NewSchatten(math.NaN(), 2, 2); return err }, "p = NaN"},
		{func() error { _, err := NewSchatten(1.99, 2, 2); return err }, "p = 1.99"},
		{func() error { _, err := NewSchatten(2, 0, 2); return err }, "0×2"},
	} {
		require.ErrorContains(t, c.f(), c.msg)
	}
}
