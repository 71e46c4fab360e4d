package train_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deqtest"
	"github.com/deqgo/deq/layers"
	"github.com/deqgo/deq/solver"
	"github.com/deqgo/deq/train"
)

// averageCell is a stochastic cell written by hand, with trainable
// parameters and no gorgonia: the average of M terms
//
//	f(z, x) = (1/M) Σ_j tanh(z W_j + x U + b),
//
// z a row of the hidden state (length H), x a row of the input (length D),
// W_j H×H, U D×H and b 1×H. Its oracle samples k of the terms uniformly with
// replacement and averages them: an unbiased estimate of f.
//
// In the ℓ∞ norm, ‖tanh(z W + c) − tanh(z' W + c)‖∞ ≤ ‖W‖₁‖z − z'‖∞ with
// ‖W‖₁ the largest ℓ1 norm of a column of W. Project scales every column of
// every W_j to an ℓ1 norm of at most γ, so that every term, and so every
// sampled average, is γ-Lipschitz: the oracle is samplewise Lipschitz, and
// the bound is proven in ℓ∞.
type averageCell struct {
	h, d, m int
	gamma   float64
	w, u, b *layers.Param // W is the M·H×H stack of the W_j
}

var _ layers.Cell = (*averageCell)(nil)

// newAverageCell returns a cell of m terms for inputs of length d and
// states of length h, initialised from seed.
func newAverageCell(d, h, m int, gamma float64, seed uint64) (*averageCell, error) {
	if d < 1 || h < 1 || m < 1 || !(gamma > 0 && gamma < 1) {
		return nil, fmt.Errorf("averageCell: bad sizes %d, %d, %d or bound %v", d, h, m, gamma)
	}
	c := &averageCell{h: h, d: d, m: m, gamma: gamma,
		w: layers.NewParam("W", m*h, h), u: layers.NewParam("U", d, h), b: layers.NewParam("b", 1, h)}
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range c.w.Data() {
		c.w.Data()[i] = rng.NormFloat64() / math.Sqrt(float64(h))
	}
	for i := range c.u.Data() {
		c.u.Data()[i] = rng.NormFloat64() / math.Sqrt(float64(d))
	}
	return c, c.Project()
}

func (c *averageCell) Shape() layers.Shape     { return layers.Shape{Rows: 1, Hidden: c.h, Input: c.d} }
func (c *averageCell) Params() []*layers.Param { return []*layers.Param{c.w, c.u, c.b} }
func (c *averageCell) Gamma() float64          { return c.gamma }

// Proven reports whether n is the ℓ∞ norm (per example).
func (c *averageCell) Proven(n solver.Norm) bool {
	if b, ok := n.(*solver.Batched); ok {
		n = b.Example
	}
	switch n := n.(type) {
	case solver.LInf:
		return true
	case solver.LP:
		return math.IsInf(n.P(), 1)
	}
	return false
}

// Project scales the columns of every W_j to an ℓ1 norm of at most γ.
func (c *averageCell) Project() error {
	w := c.w.Data()
	for j := range c.m {
		for k := range c.h {
			s := 0.0
			for i := range c.h {
				s += math.Abs(w[(j*c.h+i)*c.h+k])
			}
			if s > c.gamma {
				for i := range c.h {
					w[(j*c.h+i)*c.h+k] *= c.gamma / s
				}
			}
		}
	}
	return nil
}

func (c *averageCell) Evaluator(n int) (layers.Evaluator, error) {
	if n < 1 {
		return nil, fmt.Errorf("averageCell: batch size %d must be positive", n)
	}
	return &averageEval{c: c, n: n, x: make([]float64, n*c.d), xu: make([]float64, n*c.h),
		t: make([]float64, c.h), delta: make([]float64, n*c.h)}, nil
}

// averageEval evaluates an averageCell on batches of n examples.
type averageEval struct {
	c     *averageCell
	n     int
	x, xu []float64 // the input and xU + b
	hasX  bool
	idx   []int     // the drawn terms
	t     []float64 // one row of a term
	delta []float64 // the VJP's cotangent of the pre-activations, summed over terms
}

func (e *averageEval) Len() int            { return e.n * e.c.h }
func (e *averageEval) Examples() int       { return e.n }
func (e *averageEval) Terms() int          { return e.c.m }
func (e *averageEval) Model() solver.Model { return solver.SamplewiseLipschitz }

// SetInput copies x and computes xU + b.
func (e *averageEval) SetInput(x []float64) error {
	c := e.c
	if len(x) != len(e.x) {
		return fmt.Errorf("averageCell: input of length %d, want %d", len(x), len(e.x))
	}
	copy(e.x, x)
	u, b := c.u.Data(), c.b.Data()
	for r := range e.n {
		row := e.xu[r*c.h : (r+1)*c.h]
		copy(row, b)
		for i, xv := range x[r*c.d : (r+1)*c.d] {
			for k := range row {
				row[k] += xv * u[i*c.h+k]
			}
		}
	}
	e.hasX = true
	return nil
}

// terms draws the terms of s: nil (all M, the exact average) when s.Size ≥
// M, else s.Size indices drawn from s.Seed.
func (e *averageEval) terms(s solver.Sample) ([]int, int, error) {
	switch {
	case !e.hasX:
		return nil, 0, fmt.Errorf("averageCell: SetInput has not been called")
	case s.Size < 1:
		return nil, 0, fmt.Errorf("averageCell: Sample.Size = %d must be positive", s.Size)
	case s.Size >= e.c.m:
		return nil, e.c.m, nil
	}
	rng := rand.New(rand.NewPCG(s.Seed, 2))
	e.idx = e.idx[:0]
	for range s.Size {
		e.idx = append(e.idx, rng.IntN(e.c.m))
	}
	return e.idx, s.Size, nil
}

// term writes tanh(z_r W_j + x_r U + b) for row r into e.t.
func (e *averageEval) term(z []float64, r, j int) []float64 {
	c := e.c
	w := c.w.Data()[j*c.h*c.h : (j+1)*c.h*c.h]
	copy(e.t, e.xu[r*c.h:(r+1)*c.h])
	for i, zv := range z[r*c.h : (r+1)*c.h] {
		for k := range e.t {
			e.t[k] += zv * w[i*c.h+k]
		}
	}
	for k, v := range e.t {
		e.t[k] = math.Tanh(v)
	}
	return e.t
}

// forEach calls fn for every drawn term j of every row r (all M when idx
// is nil) with the weight 1/k of the average.
func (e *averageEval) forEach(idx []int, k int, fn func(r, j int, wt float64)) {
	wt := 1 / float64(k)
	for r := range e.n {
		if idx == nil {
			for j := range e.c.m {
				fn(r, j, wt)
			}
			continue
		}
		for _, j := range idx {
			fn(r, j, wt)
		}
	}
}

func (e *averageEval) Eval(dst, z []float64, s solver.Sample) (int, error) {
	idx, k, err := e.terms(s)
	if err != nil {
		return 0, err
	}
	clear(dst)
	h := e.c.h
	e.forEach(idx, k, func(r, j int, wt float64) {
		for i, v := range e.term(z, r, j) {
			dst[r*h+i] += wt * v
		}
	})
	return k, nil
}

func (e *averageEval) EvalExact(dst, z []float64) error {
	_, err := e.Eval(dst, z, solver.Sample{Size: e.c.m})
	return err
}

// VJPHidden writes (∂τ/∂z)ᵀg for the sampled average τ of s.
func (e *averageEval) VJPHidden(dst, z, g []float64, s solver.Sample) (int, error) {
	idx, k, err := e.terms(s)
	if err != nil {
		return 0, err
	}
	clear(dst)
	e.backward(dst, z, g, idx, k, false)
	return k, nil
}

// VJP writes the exact products into dz and dx (unless nil) and adds the
// parameters' gradients.
func (e *averageEval) VJP(dz, dx, z, g []float64) error {
	if !e.hasX {
		return fmt.Errorf("averageCell: SetInput has not been called")
	}
	if dz != nil {
		clear(dz)
	}
	e.backward(dz, z, g, nil, e.c.m, true)
	c := e.c
	u, ug, bg := c.u.Data(), c.u.GradData(), c.b.GradData()
	for r := range e.n {
		dr := e.delta[r*c.h : (r+1)*c.h]
		for i := range c.d {
			xv, s := e.x[r*c.d+i], 0.0
			for k, dv := range dr {
				ug[i*c.h+k] += xv * dv
				s += dv * u[i*c.h+k]
			}
			if dx != nil {
				dx[r*c.d+i] = s
			}
		}
		for k, dv := range dr {
			bg[k] += dv
		}
	}
	return nil
}

// backward adds (∂τ/∂z)ᵀg to dz (unless nil) for the average τ of the terms
// idx; with params it also adds the gradients of the W_j and sums the
// pre-activations' cotangents into e.delta.
func (e *averageEval) backward(dz, z, g []float64, idx []int, k int, params bool) {
	c := e.c
	h := c.h
	clear(e.delta)
	e.forEach(idx, k, func(r, j int, wt float64) {
		t := e.term(z, r, j)
		w := c.w.Data()[j*h*h : (j+1)*h*h]
		wg := c.w.GradData()[j*h*h : (j+1)*h*h]
		for kk, tv := range t {
			t[kk] = wt * g[r*h+kk] * (1 - tv*tv) // the term's δ, in place
		}
		for i := range h {
			s := 0.0
			for kk, dv := range t {
				s += dv * w[i*h+kk]
				if params {
					wg[i*h+kk] += z[r*h+i] * dv
				}
			}
			if dz != nil {
				dz[r*h+i] += s
			}
		}
		for kk, dv := range t {
			e.delta[r*h+kk] += dv
		}
	})
}

// trainAverage trains a classifier around an averageCell of 64 terms for
// one epoch on 256 synthetic digits with forward method m.
func trainAverage(ctx context.Context, m solver.Method) (*train.Trainer, *train.Result, error) {
	data, err := datasets.Open(ctx, datasets.SyntheticName, &datasets.Options{Seed: 1, Synthetic: datasets.SyntheticOptions{Train: 256, Test: 100}})
	if err != nil {
		return nil, nil, err
	}
	linf, err := solver.ParseNormSpec("linf") // the norm the cell proves its bound in
	if err != nil {
		return nil, nil, err
	}
	method, err := solver.MethodSpecOf(m)
	if err != nil {
		return nil, nil, err
	}
	cfg := train.Config{
		Epochs: 1, BatchSize: 32, LR: 3e-3, Seed: 1,
		Model:   train.ModelConfig{Hidden: 16, Norm: linf},
		Forward: train.SolverConfig{Method: method, Tol: 1e-2},
	}
	newCell := func(input, hidden int, seed uint64) (layers.Cell, error) {
		return newAverageCell(input, hidden, 64, 0.5, seed)
	}
	t, err := train.NewWithCell(cfg, newCell, data.Train, data.Test, nil)
	if err != nil {
		return nil, nil, err
	}
	res, err := t.Run(ctx)
	return t, res, err
}

// ExampleNewWithCell trains a classifier around a stochastic cell written
// by hand, averageCell, for one epoch on synthetic digits: once with
// Broyden's method on the exact average of the cell's 64 terms, once with
// VR-GHAL on minibatches of sampled terms.
func ExampleNewWithCell() {
	for _, m := range []solver.Method{solver.Broyden{}, solver.VRGHAL{}} {
		_, res, err := trainAverage(context.Background(), m)
		if err != nil {
			fmt.Println(err)
			return
		}
		e := res.Final()
		fmt.Printf("%-7v %d batches, %d skipped, certified residual ≤ tol on %.0f%%, sampled terms: %v\n",
			m, e.Batches, e.Skipped, 100*e.CertMetFrac, e.FwdSamplesMean < 64*e.FwdCallsMean)
	}
	// Output:
	// broyden 8 batches, 0 skipped, certified residual ≤ tol on 100%, sampled terms: false
	// vrghal  8 batches, 0 skipped, certified residual ≤ tol on 100%, sampled terms: true
}

// TestAverageCell trains the hand-written cell under VR-GHAL and checks the
// trained cell with deqtest: its sampled oracle is unbiased, its
// vector–Jacobian products match finite differences, its bound holds and a
// stochastic solve lands within its certificate.
func TestAverageCell(t *testing.T) {
	tr, _, err := trainAverage(context.Background(), solver.VRGHAL{})
	if err != nil {
		t.Fatal(err)
	}
	deqtest.CheckCell(t, tr.Model().Cell(), &deqtest.Options{Seed: 1})
}
