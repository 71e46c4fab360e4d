package train

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/layers"
)

// gam32 is γ_m = m·u/(1 − m·u) for float32's unit roundoff u = 2⁻²⁴.
func gam32(m int) float64 { return gamU(m, 0x1p-24) }

// gam64 is γ_m for float64's unit roundoff u = 2⁻⁵³.
func gam64(m int) float64 { return gamU(m, 0x1p-53) }

func gamU(m int, u float64) float64 { return float64(m) * u / (1 - float64(m)*u) }

// matMul returns op(a)·op(b) in float64 for op(a) m×k and op(b) k×n,
// row-major, with ta (tb) meaning that a (b) is stored transposed; with
// abs, the product of the entries' absolute values.
func matMul(m, n, k int, a []float64, ta bool, b []float64, tb bool, abs bool) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for l := range k {
				x, y := a[i*k+l], b[l*n+j]
				if ta {
					x = a[l*m+i]
				}
				if tb {
					y = b[j*k+l]
				}
				if abs {
					x, y = math.Abs(x), math.Abs(y)
				}
				s += x * y
			}
			out[i*n+j] = s
		}
	}
	return out
}

// absOf returns the absolute values of x.
func absOf(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Abs(v)
	}
	return out
}

// comb returns Σ_i c_i·x_i entry by entry for the pairs (c_i, x_i), the
// first x_i the longest; a shorter one is repeated (a bias, added to every
// row).
func comb(terms ...any) []float64 {
	var out []float64
	for i := 0; i < len(terms); i += 2 {
		c, x := terms[i].(float64), terms[i+1].([]float64)
		if out == nil {
			out = make([]float64, len(x))
		}
		for j := range out {
			out[j] += c * x[j%len(x)]
		}
	}
	return out
}

// colSums returns the column sums of the row-major n×c matrix x.
func colSums(x []float64, n, c int) []float64 {
	out := make([]float64, c)
	for r := range n {
		for j := range c {
			out[j] += x[r*c+j]
		}
	}
	return out
}

// masked returns x with the entries where keep is not positive zeroed.
func masked(x, keep []float64) []float64 {
	out := slices.Clone(x)
	for i, v := range keep {
		if v <= 0 {
			out[i] = 0
		}
	}
	return out
}

// requireWithin fails unless |got − want| ≤ bound entry by entry and, if
// differs, some entry differs (the float32 products did run).
func requireWithin(t *testing.T, what string, got, want, bound []float64, differs bool) {
	t.Helper()
	require.Len(t, got, len(want), what)
	differ := false
	for i, w := range want {
		if d := math.Abs(got[i] - w); d > bound[i] {
			t.Fatalf("%s[%d] = %v in float32, %v in float64: |Δ| = %.3g > %.3g", what, i, got[i], w, d, bound[i])
		}
		differ = differ || got[i] != w
	}
	require.True(t, !differs || differ, "%s is the same in both precisions", what)
}

// requireMargin fails unless every pre-activation |pre| exceeds twice its
// rounding bound, so that both precisions take the same ReLU branches and
// the backward passes' masks agree (ReLU's derivative jumps at zero: no
// rounding bound holds across it). It checks the test's data, not the
// code: a fixed seed either meets it or not.
func requireMargin(t *testing.T, what string, pre, bound []float64) {
	t.Helper()
	for i, v := range pre {
		require.Greater(t, math.Abs(v), 2*bound[i], "%s[%d] is within rounding of the ReLU's kink: choose other test data", what, i)
	}
}

// denseFloat32Case is a dense model with float32 products and the
// readout's hidden layer (not among stepCases: its gradient is the float32
// map's, up to rounding, which finite differences of the float64
// evaluation do not check). It takes spectral normalisation: under the
// projection its forward solves would be certified on the float64 map
// (Model.CertifiesFloat64), a second solve whose allocations
// TestStepAllocatesNothingOfItsOwn does not count alike in the step and
// in the layer alone.
func denseFloat32Case() stepCase {
	tr, te := blobData(64, 10)
	return stepCase{"dense-float32-readout-hidden", ModelConfig{Cell: DenseCell, Hidden: 5, Encoder: 6, ReadoutHidden: 4,
		Activation: layers.Tanh, Gamma: 0.7, Normalization: layers.SpectralNorm, Precision: layers.Float32}, tr, te}
}

// TestDenseFloat32EncoderAndReadout compares the encoder and the readout
// of a dense model with Precision layers.Float32 with those of the
// layers.Float64 model of the same parameters, at the same inputs, entry
// by entry against bounds derived from float32 rounding: the encoder's
// features, the logits, the readout's cotangent of z* and the gradients of
// every encoder and readout parameter (the cell's gradients are the
// cell's, compared in package layers).
//
// A product entry Σ_k a_k·b_k over K terms computed in float32 (operands
// rounded, then summed in float32) differs from the exact sum by at most
// γ_{K+2}·M, M = Σ_k |a_k||b_k| (γ_m = mu/(1 − mu), u = 2⁻²⁴); adding a
// bias b in float64 and the float64 reference's own rounding add at most
// γ⁽⁶⁴⁾_{K+2}·(|b| + 2M). A product whose operand carries an error e
// (an earlier layer's) errs by its bound at |operand| + e plus e·|other
// factor|. ReLU is 1-Lipschitz forward; backward its mask is the same in
// both precisions when no pre-activation lies within twice its bound of
// zero (requireMargin). Everything is compared at the initial parameters
// and after a change of every parameter in place, which the float32
// copies of the weights must follow.
func TestDenseFloat32EncoderAndReadout(t *testing.T) {
	blobTrain, _ := blobData(64, 10)
	for _, tc := range []struct {
		name                           string
		data                           *datasets.Dataset
		hidden, encoder, readoutHidden int
		n                              int
	}{
		{"blobs-linear-readout", blobTrain, 6, 5, 0, 9},
		{"blobs-readout-hidden", blobTrain, 6, 5, 4, 9},
		// 81 pixels: the encoder's products sum more than 64 terms.
		{"squares-readout-hidden", squares("squares/train", 64, 9, 1), 12, 10, 7, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.Model = ModelConfig{Hidden: tc.hidden, Encoder: tc.encoder, ReadoutHidden: tc.readoutHidden, Precision: layers.Float64}
			model := func(p layers.Precision) *Model {
				cfg.Model.Precision = p
				trn, err := New(cfg, tc.data, tc.data, nil)
				require.NoError(t, err)
				return trn.model
			}
			m64, m32 := model(layers.Float64), model(layers.Float32)
			require.False(t, m64.io32)
			require.True(t, m32.io32)
			for i, p := range m64.params {
				copy(m32.params[i].data, p.data)
			}
			rng := rand.New(rand.NewPCG(7, 7))
			checkDenseFloat32(t, tc.data, tc.n, m64, m32, rng)
			// Every parameter changes in place (biases become nonzero);
			// the float32 copies of the weights must follow.
			for i, p := range m64.params {
				for j := range p.data {
					p.data[j] = p.data[j]*(1+0.2*rng.NormFloat64()) + 0.1*rng.NormFloat64()
				}
				copy(m32.params[i].data, p.data)
			}
			checkDenseFloat32(t, tc.data, tc.n, m64, m32, rng)
		})
	}
}

// checkDenseFloat32 is one comparison of TestDenseFloat32EncoderAndReadout
// on the first n images of d, with a random state z and random encoder
// cotangent drawn from rng; the readout's cotangent is the Float64 loss
// gradient.
func checkDenseFloat32(t *testing.T, d *datasets.Dataset, n int, m64, m32 *Model, rng *rand.Rand) {
	t.Helper()
	w64, w32 := m64.work(n), m32.work(n)
	for _, m := range []*Model{m64, m32} {
		for _, p := range m.params {
			clear(p.grad)
		}
		w := m.work(n)
		m.standardize(w.xs, d.X[:n*d.Dim()])
		require.NoError(t, m.encode(w, w.e, n))
	}
	xs, dim, enc := w64.xs, m64.InputDim, m64.encLen
	hid, classes, r := m64.readLen, m64.Classes, m64.Config.ReadoutHidden

	// The encoder: relu(xs·We + be).
	we, be := m64.encW.data, m64.encB.data
	mag := matMul(n, enc, dim, xs, false, we, false, true)
	bound := comb(gam32(dim+2), mag, gam64(dim+2), absOf(be), 2*gam64(dim+2), mag)
	requireMargin(t, "encoder pre-activation", comb(1.0, matMul(n, enc, dim, xs, false, we, false, false), 1.0, be), bound)
	requireWithin(t, "features", w32.e, w64.e, bound, true)

	// The readout at a random state.
	z := make([]float64, n*hid)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	m64.readout(w64, z, n)
	m32.readout(w32, z, n)
	wo, bo := m64.outW.data, m64.outB.data
	// u is what the last layer reads: z, or the hidden units (uErr their
	// error bound, zero for z); uk its width.
	u, uErr, uk := z, make([]float64, n*hid), hid
	if r > 0 {
		w1, b1 := m64.hidW.data, m64.hidB.data
		mag := matMul(n, r, hid, z, false, w1, false, true)
		uErr = comb(gam32(hid+2), mag, gam64(hid+2), absOf(b1), 2*gam64(hid+2), mag)
		requireMargin(t, "hidden pre-activation", comb(1.0, matMul(n, r, hid, z, false, w1, false, false), 1.0, b1), uErr)
		requireWithin(t, "hidden units", w32.u, w64.u, uErr, true)
		u, uk = w64.u, r
	}
	uAbs := comb(1.0, absOf(u), 1.0, uErr)
	mag = matMul(n, classes, uk, uAbs, false, wo, false, true)
	bound = comb(gam32(uk+2), mag, 1.0, matMul(n, classes, uk, uErr, false, wo, false, true),
		gam64(uk+2), absOf(bo), 2*gam64(uk+2), mag)
	requireWithin(t, "logits", w32.logits, w64.logits, bound, true)

	// The readout's backward pass for the Float64 loss gradient g.
	labels := d.Y[:n]
	crossEntropy(w64.dlogits, w64.logits, labels, classes)
	copy(w32.dlogits, w64.dlogits)
	g := w64.dlogits
	m64.readoutBackward(w64, z, n)
	m32.readoutBackward(w32, z, n)
	gAbs := absOf(g)
	requireWithin(t, "∂readout.W", m32.outW.grad, m64.outW.grad,
		comb(gam32(n+2), matMul(uk, classes, n, uAbs, true, gAbs, false, true), 1.0, matMul(uk, classes, n, uErr, true, gAbs, false, true),
			gam64(n), matMul(uk, classes, n, u, true, gAbs, false, true)), true)
	requireWithin(t, "∂readout.b", m32.outB.grad, m64.outB.grad, comb(gam64(n), colSums(gAbs, n, classes)), false)
	// dh: the cotangent of the last layer's input (its error bound).
	dh := comb(gam32(classes+2)+gam64(classes), matMul(n, uk, classes, gAbs, false, wo, true, true))
	if r > 0 {
		w1 := m64.hidW.data
		dh = masked(dh, u)
		du := absOf(w64.du)
		duAbs := comb(1.0, du, 1.0, dh)
		requireWithin(t, "∂readout.hidden.W", m32.hidW.grad, m64.hidW.grad,
			comb(gam32(n+2), matMul(hid, r, n, z, true, duAbs, false, true), 1.0, matMul(hid, r, n, z, true, dh, false, true),
				gam64(n), matMul(hid, r, n, z, true, du, false, true)), true)
		requireWithin(t, "∂readout.hidden.b", m32.hidB.grad, m64.hidB.grad, comb(1.0, colSums(dh, n, r), gam64(n), colSums(du, n, r)), true)
		dh = comb(gam32(r+2), matMul(n, hid, r, duAbs, false, w1, true, true), 1.0, matMul(n, hid, r, dh, false, w1, true, true),
			gam64(r), matMul(n, hid, r, du, false, w1, true, true))
	}
	requireWithin(t, "∂L/∂z*", w32.gz, w64.gz, dh, true)

	// The encoder's backward pass for a random cotangent of the features.
	for i := range w64.de {
		w64.de[i] = rng.NormFloat64()
	}
	copy(w32.de, w64.de)
	de := absOf(masked(w64.de, w64.e))
	require.NoError(t, m64.encodeBackward(w64, n))
	require.NoError(t, m32.encodeBackward(w32, n))
	requireWithin(t, "∂encoder.W", m32.encW.grad, m64.encW.grad,
		comb(gam32(n+2)+gam64(n), matMul(dim, enc, n, xs, true, de, false, true)), true)
	requireWithin(t, "∂encoder.b", m32.encB.grad, m64.encB.grad, comb(gam64(n), colSums(de, n, enc)), false)
}
