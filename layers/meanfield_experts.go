package layers

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"

	"github.com/deqgo/deq/internal/mru"
	"github.com/deqgo/deq/solver"
)

// ExpertsConfig configures an Experts cell. Zero values select the
// documented defaults.
type ExpertsConfig struct {
	// Hidden is the number of hidden features per row. Required.
	Hidden int
	// Input is the number of input features per row. Required.
	Input int
	// Experts is M, the number of experts the cell averages. Required.
	Experts int
	// Rows is the number of rows of an example (see Shape). Zero means 1.
	Rows int
	// Activation is σ; the zero value is ReLU.
	Activation Activation
	// Lipschitz is the constraint that Project enforces on every W_m.
	Lipschitz Constraint
	// Seed seeds the initialisation (see Experts).
	Seed uint64
}

// Experts is the stochastic cell
//
//	f(z, x) = xU + b + (1/M) Σ_m σ(zW_m + c_m),
//
// a mixture of M dense experts applied to every row z of a hidden state,
// with the injection xU + b computed once per batch (SetInput) outside
// the average. Its stochastic oracle draws experts uniformly with
// replacement; one unit sample is one expert evaluated on the whole batch,
// a term evaluation (a Hidden×Hidden product per row).
//
// Project bounds every ‖W_mᵀ‖_{p→p} by γ̄ (see Constraint), so every
// expert, every minibatch average and the exact map are γ̄-Lipschitz in z
// in that ℓp norm: the oracle's Model is SamplewiseLipschitz, as strong
// as a model gets, and no stronger constraint than the dense cell's is
// imposed on any expert. As for Dense, no bound is proven under
// Schatten-p with p ≠ 2 and Rows > 1.
//
// Initialisation (mean-field scaling, see MeanField): W_m has N(0, 1/Hidden)
// entries (then projected), c_m N(0, 1) entries, so that every expert is
// O(1) whatever M is; U has N(0, 1/Input) entries and b is zero.
//
// Its parameters, in Params order, are U (Input×Hidden), b (1×Hidden),
// W ((M·Hidden)×Hidden, the W_m stacked) and c (M×Hidden, row m is c_m).
type Experts struct {
	sumCell
	con   *opNorm
	w, c  *Param
	evals mru.Cache[int, *expEval]
}

var (
	_ Cell             = (*Experts)(nil)
	_ ProjectionStater = (*Experts)(nil)
)

// NewExperts returns an Experts cell initialised from cfg.Seed and
// projected.
func NewExperts(cfg ExpertsConfig) (*Experts, error) {
	sc, err := newSumCell("ExpertsConfig", "Experts", cfg.Rows, cfg.Hidden, cfg.Input, cfg.Experts, cfg.Activation)
	if err != nil {
		return nil, err
	}
	con, err := newOpNorm(cfg.Lipschitz, cfg.Hidden)
	if err != nil {
		return nil, err
	}
	h, d, m := cfg.Hidden, cfg.Input, cfg.Experts
	c := &Experts{
		sumCell: sc, con: con,
		w:     newParam("W", m*h, h),
		c:     newParam("c", m, h),
		evals: mru.Cache[int, *expEval]{Max: MaxCachedBatches},
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xbf58476d1ce4e5b9))
	fillNormal(c.u.Data(), rng, 1/math.Sqrt(float64(d)))
	fillNormal(c.w.Data(), rng, 1/math.Sqrt(float64(h)))
	fillNormal(c.c.Data(), rng, 1)
	if err := c.Project(); err != nil {
		return nil, err
	}
	return c, nil
}

// Experts returns M.
func (c *Experts) Experts() int { return c.m }

// Params implements Cell: U, b, W, c.
func (c *Experts) Params() []*Param { return []*Param{c.u, c.b, c.w, c.c} }

// Gamma implements Cell.
func (c *Experts) Gamma() float64 { return c.con.gamma }

// Proven implements Cell.
func (c *Experts) Proven(n solver.Norm) bool { return c.con.proven(n, c.shape.Rows) }

// wm returns W_m's storage.
func (c *Experts) wm(m int) []float64 {
	h := c.shape.Hidden
	return c.w.Data()[m*h*h : (m+1)*h*h]
}

// Project implements Cell: it enforces the Constraint on every W_m.
func (c *Experts) Project() error {
	for m := range c.m {
		if b := c.con.project(c.wm(m), c.shape.Hidden); math.IsNaN(b) {
			return fmt.Errorf("layers: Experts.Project: W_%d is not finite: %w", m, solver.ErrNonFinite)
		}
	}
	return nil
}

// Bound returns max_m of the certified bound on ‖W_mᵀ‖_{p→p}, the
// Lipschitz constant of every expert.
func (c *Experts) Bound() float64 {
	b := 0.0
	for m := range c.m {
		b = math.Max(b, c.con.bound(c.wm(m), c.shape.Hidden))
	}
	return b
}

// ProjectionState implements ProjectionStater; the power-iteration vector
// is shared by the W_m.
func (c *Experts) ProjectionState() ProjectionState { return c.con.state() }

// SetProjectionState implements ProjectionStater.
func (c *Experts) SetProjectionState(s ProjectionState) error {
	return c.con.setState("Experts", s)
}

// Evaluator implements Cell.
func (c *Experts) Evaluator(n int) (Evaluator, error) {
	return evaluator("Experts", &c.evals, n, func() *expEval { return newExpEval(c, n) })
}

type expEval struct {
	sumEval
	runner[*expGraph]
	c          *Experts
	count      []int
	act, delta []float64 // rows×Hidden scratch of one expert
	graphs     graphs[*expGraph]
}

func newExpEval(c *Experts, n int) *expEval {
	rows := n * c.shape.Rows
	h := c.shape.Hidden
	e := &expEval{
		sumEval: newSumEval("Experts", c.shape, n, c.m, c.u, c.b),
		c:       c,
		count:   make([]int, c.m),
		act:     make([]float64, rows*h),
		delta:   make([]float64, rows*h),
		graphs:  newGraphs[*expGraph](c.m),
	}
	e.runner.e = e
	e.sum = e.forward
	return e
}

// Model implements solver.Oracle: SamplewiseLipschitz (see Experts).
func (e *expEval) Model() solver.Model { return solver.SamplewiseLipschitz }

// expert leaves σ(zW_m + c_m) in e.act.
func (e *expEval) expert(z []float64, m int) []float64 {
	h := e.c.shape.Hidden
	cm := e.c.c.Data()[m*h : (m+1)*h]
	for r := range e.rows {
		copy(e.act[r*h:(r+1)*h], cm)
	}
	mulAB(1, dense(e.rows, h, z), dense(h, h, e.c.wm(m)), 1, dense(e.rows, h, e.act))
	e.c.act.apply(e.act)
	return e.act
}

// each calls fn for every expert of a k-term estimate with its weight: all
// M with weight 1/k when idx is nil, or the distinct experts of idx, each
// weighted by its number of draws over k.
func (e *expEval) each(idx []int, k int, fn func(m int, w float64)) {
	if idx == nil {
		for m := range e.c.m {
			fn(m, 1/float64(k))
		}
		return
	}
	clear(e.count)
	for _, m := range idx {
		e.count[m]++
	}
	for m, n := range e.count {
		if n > 0 {
			fn(m, float64(n)/float64(k))
		}
	}
}

// forward writes xU + b + Σ_m w_m σ(zW_m + c_m) over the experts of a
// k-term estimate into dst.
func (e *expEval) forward(dst, z []float64, idx []int, k int) {
	copy(dst, e.inj)
	e.each(idx, k, func(m int, w float64) {
		a := e.expert(z, m)
		blas64.Axpy(w, blas64.Vector{N: len(a), Inc: 1, Data: a}, blas64.Vector{N: len(dst), Inc: 1, Data: dst})
	})
}

// TermVariance implements TermVariancer: (1/M) Σ_m ‖φ_m‖² − ‖φ̄‖², one
// pass over the experts.
func (e *expEval) TermVariance(z []float64) (float64, error) {
	if err := e.checkEval(e.inj, z); err != nil {
		return 0, err
	}
	mean := make([]float64, len(e.inj))
	second := 0.0
	for m := range e.c.m {
		a := e.expert(z, m)
		n := blas64.Nrm2(blas64.Vector{N: len(a), Inc: 1, Data: a})
		second += n * n
		addTo(mean, a)
	}
	scale(mean, 1/float64(e.c.m))
	nm := blas64.Nrm2(blas64.Vector{N: len(mean), Inc: 1, Data: mean})
	return math.Max(0, second/float64(e.c.m)-nm*nm), nil
}

// deltaOf leaves δ_m = w·g ⊙ σ′(zW_m + c_m) in e.delta.
func (e *expEval) deltaOf(z, g []float64, m int, w float64) []float64 {
	a := e.expert(z, m)
	mulScaled(e.delta, w, g)
	e.c.act.backward(e.delta, a)
	return e.delta
}

// fusedHidden is VJPHidden: dst = Σ_m w_m δ_m W_mᵀ over the experts of s
// with their weights in Eval's estimate, δ_m = g ⊙ σ′(zW_m + c_m).
func (e *expEval) fusedHidden(dst, z, g []float64, idx []int, k int) {
	h := e.c.shape.Hidden
	clear(dst)
	e.each(idx, k, func(m int, w float64) {
		d := e.deltaOf(z, g, m, w)
		mulABt(1, dense(e.rows, h, d), dense(h, h, e.c.wm(m)), 1, dense(e.rows, h, dst))
	})
}

// fusedFull is VJP. With δ_m = (1/M) g ⊙ σ′(zW_m + c_m): dz = Σ_m δ_m W_mᵀ,
// dx = gUᵀ, and U, b, W_m, c_m gain xᵀg, the column sums of g, zᵀδ_m and
// the column sums of δ_m.
func (e *expEval) fusedFull(dz, dx, z, g []float64) {
	c := e.c
	h := c.shape.Hidden
	if dz != nil {
		clear(dz)
	}
	gw, gc := c.w.GradData(), c.c.GradData()
	e.each(nil, c.m, func(m int, w float64) {
		dl := e.deltaOf(z, g, m, w)
		if dz != nil {
			mulABt(1, dense(e.rows, h, dl), dense(h, h, c.wm(m)), 1, dense(e.rows, h, dz))
		}
		mulAtB(1, dense(e.rows, h, z), dense(e.rows, h, dl), 1, dense(h, h, gw[m*h*h:(m+1)*h*h]))
		addColSums(gc[m*h:(m+1)*h], dl, e.rows, h)
	})
	e.vjp(dx, e.x, g, e.rows)
}

// expGraph is the graph of the Experts cell with the gradient of ⟨g, f⟩.
// Its k slots are stacked side by side: with Wcat = [W_{t_0} … W_{t_{k−1}}]
// (Hidden×k·Hidden) and ccat = [c_{t_0} … c_{t_{k−1}}] (1×k·Hidden), the
// pre-activations of all slots are z·Wcat + ccat, and the constant
// (k·Hidden)×Hidden matrix S of k stacked identities over k averages the
// slots: σ(z·Wcat + ccat)·S. The full graph (k = M, slot m is expert m)
// adds xU + b, with U and b bound, and takes gradients with respect to z,
// x, U, b, Wcat and ccat (unpacked into W's and c's gradients); a hidden
// graph takes the slots from the drawn experts and the gradient with
// respect to z.
type expGraph struct {
	tape
	k                int
	x, wcat, ccat, s []float64
}

func (e *expEval) graph(full bool, k int) (*expGraph, error) {
	return e.graphs.get(full, k, func() (*expGraph, error) {
		c := e.c
		h, d := c.shape.Hidden, c.shape.Input
		eg := &expGraph{k: k}
		err := buildVJP("Experts", &eg.tape, e.rows, h, func(gr graph, z, g *G.Node) {
			var wcat, ccat, s *G.Node
			wcat, eg.wcat = gr.input("Wcat", h, k*h)
			ccat, eg.ccat = gr.input("ccat", 1, k*h)
			s, eg.s = gr.input("S", k*h, h)
			for j := range k {
				for i := range h {
					eg.s[(j*h+i)*h+i] = 1 / float64(k)
				}
			}
			pre := G.Must(G.BroadcastAdd(G.Must(G.Mul(z, wcat)), ccat, nil, []byte{0}))
			out := G.Must(G.Mul(c.act.node(pre), s))
			wrt := G.Nodes{z}
			if full {
				var x *G.Node
				x, eg.x = gr.input("x", e.rows, d)
				u, b, inj := e.node(gr, x)
				out = G.Must(G.Add(out, inj))
				wrt = G.Nodes{z, x, u, b, wcat, ccat}
			}
			e.finish(&eg.tape, gr, full, out, g, wrt)
		})
		return eg, err
	})
}

// load fills the graph's inputs: z, g, x (full) and the slots' stacked
// weights and biases (expert t_j = idx[j] in slot j, or j when idx is nil).
func (e *expEval) load(eg *expGraph, z, g []float64, idx []int) {
	h := e.c.shape.Hidden
	ld := eg.k * h
	cs := e.c.c.Data()
	for j := range eg.k {
		t := j
		if idx != nil {
			t = idx[j]
		}
		wt := e.c.wm(t)
		for i := range h {
			copy(eg.wcat[i*ld+j*h:i*ld+(j+1)*h], wt[i*h:(i+1)*h])
		}
		copy(eg.ccat[j*h:(j+1)*h], cs[t*h:(t+1)*h])
	}
	if eg.full {
		copy(eg.x, e.x)
	}
	copy(eg.z, z)
	copy(eg.g, g)
}

// readState copies a rows×Hidden node into dst.
func (e *expEval) readState(dst []float64, n *G.Node) { copy(dst, nodeData(n)) }

// readGrads writes the input's gradient into dx unless it is nil and adds
// the gradients of U, b, W (unpacked from Wcat's) and c (ccat's layout is
// c's).
func (e *expEval) readGrads(dx []float64, grads G.Nodes) {
	h := e.c.shape.Hidden
	if dx != nil {
		copy(dx, nodeData(grads[1]))
	}
	addTo(e.c.u.GradData(), nodeData(grads[2]))
	addTo(e.c.b.GradData(), nodeData(grads[3]))
	gw, ld := nodeData(grads[4]), e.c.m*h
	wg := e.c.w.GradData()
	for m := range e.c.m {
		blk := wg[m*h*h : (m+1)*h*h]
		for i := range h {
			addTo(blk[i*h:(i+1)*h], gw[i*ld+m*h:i*ld+(m+1)*h])
		}
	}
	addTo(e.c.c.GradData(), nodeData(grads[5]))
}
