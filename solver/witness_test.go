package solver

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// witnessEval evaluates the documented witness ‖·‖₊ of a norm of this
// package and the derivative D(‖·‖₊²)(x)[y], from the values the witness is
// an ℓr norm of: the entries, or the singular values of each example's
// matrix (Schatten examples, of shape rows×cols).
type witnessEval struct {
	w          witness
	rows, cols int // Schatten block shape; 0 for entrywise
}

func newWitnessEval(n Norm) witnessEval {
	we := witnessEval{w: witnessOf(n)}
	ex := n
	if b, ok := n.(*Batched); ok {
		ex = b.Example
	}
	if s, ok := ex.(*Schatten); ok {
		we.rows, we.cols = s.Dims()
	}
	return we
}

// values returns the values of x and, for each, its gradient direction
// (∂value/∂x as a vector of len(x)), for the derivative; entrywise values
// have the unit vectors, which grad encodes as nil.
func (we witnessEval) values(x []float64) (vals []float64, grads [][]float64) {
	if we.rows == 0 {
		return x, nil
	}
	bl := we.rows * we.cols
	for off := 0; off < len(x); off += bl {
		var svd mat.SVD
		ok := svd.Factorize(mat.NewDense(we.rows, we.cols, append([]float64(nil), x[off:off+bl]...)), mat.SVDThin)
		if !ok {
			panic("SVD failed")
		}
		var u, v mat.Dense
		svd.UTo(&u)
		svd.VTo(&v)
		for i, s := range svd.Values(nil) {
			vals = append(vals, s)
			g := make([]float64, len(x)) // ∂σ_i/∂X = u_i v_iᵀ
			for a := 0; a < we.rows; a++ {
				for b := 0; b < we.cols; b++ {
					g[off+a*we.cols+b] = u.At(a, i) * v.At(b, i)
				}
			}
			grads = append(grads, g)
		}
	}
	return vals, grads
}

// plus returns ‖x‖₊.
func (we witnessEval) plus(x []float64) float64 {
	v, _ := we.values(x)
	return we.w.scale * lpNorm(v, we.w.r)
}

// deriv returns D(‖·‖₊²)(x)[y] = 2λ²‖v‖_r^{2−r} Σ |v_j|^{r−1} sgn(v_j) ∂v_j[y].
func (we witnessEval) deriv(x, y []float64) float64 {
	v, grads := we.values(x)
	r := we.w.r
	nv := lpNorm(v, r)
	if nv == 0 {
		return 0
	}
	s := 0.0
	for j, vj := range v {
		dj := 0.0
		if grads == nil {
			dj = y[j]
		} else {
			for i, g := range grads[j] {
				dj += g * y[i]
			}
		}
		s += math.Pow(math.Abs(vj)/nv, r-1) * math.Copysign(1, vj) * dj
	}
	return 2 * we.w.scale * we.w.scale * nv * s
}

func TestWitnessSmoothness(t *testing.T) {
	// For every norm, on random pairs (Gaussian, sparse, nearly parallel):
	// ‖x‖ ≤ ‖x‖₊ ≤ C‖x‖ and ‖x + y‖₊² ≤ ‖x‖₊² + D(‖·‖₊²)(x)[y] + B‖y‖₊²,
	// with the witness, B and C that Kappa and C report (κ = B·C²).
	mk := func(n Norm, err error) Norm {
		require.NoError(t, err)
		return n
	}
	batch := func(ex Norm, n int, agg Aggregate) Norm {
		b := mk(NewBatched(ex, n)).(*Batched)
		b.Agg = agg
		return b
	}
	norms := []Norm{
		mk(NewLP(2, 5)), mk(NewLP(4, 3)), mk(NewLP(4, 50)), mk(NewLP(20, 50)), mk(NewLP(2.5, 2)),
		mk(NewLInf(1)), mk(NewLInf(4)), mk(NewLInf(50)),
		mk(NewSchatten(4, 2, 2)), mk(NewSchatten(4, 3, 5)), mk(NewSchatten(math.Inf(1), 4, 4)), mk(NewSchatten(math.Inf(1), 12, 12)),
		batch(mk(NewLInf(4)), 8, AggMax), batch(mk(NewLP(4, 4)), 3, AggMax), batch(mk(NewLP(2, 3)), 4, AggMean),
		batch(mk(NewSchatten(4, 2, 2)), 3, AggMax), batch(mk(NewSchatten(math.Inf(1), 3, 3)), 16, AggMax),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range norms {
		we := newWitnessEval(n)
		w := we.w
		require.InDelta(t, n.Kappa(), w.b*w.c*w.c, 1e-12*n.Kappa(), "%v", n)
		require.InDelta(t, n.C(), w.c, 1e-12, "%v", n)
		require.GreaterOrEqual(t, w.b, 1.0)
		require.GreaterOrEqual(t, w.c, 1.0)
		d := n.Len()
		draw := func(kind int) []float64 {
			x := make([]float64, d)
			for i := range x {
				switch kind {
				case 0:
					x[i] = rng.NormFloat64()
				case 1:
					if rng.IntN(d) == 0 {
						x[i] = 10 * rng.NormFloat64()
					}
				case 2:
					x[i] = 1
				}
			}
			return x
		}
		for trial := range 300 {
			x := draw(trial % 3)
			y := draw(rng.IntN(2))
			switch trial % 4 {
			case 1:
				for i := range y {
					y[i] *= 1e-3
				}
			case 2:
				for i := range y {
					y[i] = -0.5*x[i] + 1e-2*y[i]
				}
			}
			nx, px := n.Norm(x), we.plus(x)
			require.LessOrEqual(t, nx, px*(1+1e-12), "%v: ‖x‖ ≤ ‖x‖₊", n)
			require.LessOrEqual(t, px, w.c*nx*(1+1e-12), "%v: ‖x‖₊ ≤ C‖x‖", n)
			xy := make([]float64, d)
			for i := range xy {
				xy[i] = x[i] + y[i]
			}
			lhs := math.Pow(we.plus(xy), 2)
			py := we.plus(y)
			rhs := px*px + we.deriv(x, y) + w.b*py*py
			require.LessOrEqual(t, lhs, rhs+1e-9*(px*px+py*py), "%v: smoothness, trial %d", n, trial)
		}
	}
}
