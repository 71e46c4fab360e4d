package solver

import (
	"cmp"
	"fmt"
	"math"
	"sync/atomic"

	"gonum.org/v1/gonum/floats"

	"github.com/deqgo/deq/internal/numeric"
)

// Anderson is Anderson acceleration of type II (Anderson 1965; Walker and Ni
// 2011), a common forward solver of deep equilibrium models (Bai, Kolter and
// Koltun 2019). With the last c ≤ m iterates x_i and residuals
// g_i = T(x_i) − x_i it solves the constrained least-squares problem
//
//	minimise ‖Σ α_i g_i‖₂² + μ‖α‖₂²  subject to  Σ α_i = 1
//
// through its bordered normal equations
//
//	[ 0   1ᵀ    ] [ν]   [1]
//	[ 1   H + μI] [α] = [0],   H_ij = ⟨g_i, g_j⟩,
//
// and steps to x ← Σ α_i (x_i + β g_i) = Σ α_i ((1 − β) x_i + β T(x_i)).
// The ridge is μ = Ridge · tr(H)/c, relative to the scale of the Gram matrix,
// and the system is solved after dividing H by that scale, by Gaussian
// elimination with partial pivoting. The Gram matrix is kept up to date
// incrementally, one row per iteration, so a step costs about 5cn flops
// besides the evaluation of T. The new row and the step are each one pass
// over blocks of the vectors, which Settings.Workers goroutines share; the
// row's inner products add their blocks' partial sums in block order, so
// that the iterates do not depend on the number of workers.
//
// Safeguards: when the small system has a negligible pivot, or the weights α
// or the new point are not finite, the history is dropped down to the latest
// pair and the method takes the mixing step x ← x + β g.
//
// Memory: a solve takes 2cn + 2c² + c⌈n/4096⌉ + O(c + n) floats with
// c = min{Memory, Settings.MaxIter + 1} (no more pairs than evaluations can
// be stored) from its Workspace, so that repeated solves through one
// Settings.Workspace allocate none of them, and allocates nothing per
// iteration besides the trace.
//
// Limitations: the least-squares problem is posed in the Euclidean inner
// product whatever the problem's norm (the residual test uses the problem's
// norm), and Anderson carries no convergence guarantee for nonexpansive or
// nonsmooth maps; on affine maps with enough memory it behaves like GMRES
// (Walker and Ni 2011) and also finds repelling fixed points. It needs a
// deterministic oracle.
type Anderson struct {
	// Memory is the number m ≥ 1 of past iterates combined; m = 1 is the
	// mixing iteration x ← x + β g, Krasnoselskii–Mann with α = β. Zero
	// means DefaultAndersonMemory.
	Memory int
	// Ridge is the Tikhonov regularisation of the normal equations, relative
	// to the mean diagonal of the Gram matrix; it must be positive. Zero
	// means DefaultAndersonRidge.
	Ridge float64
	// Mixing is the damping β ∈ (0, 1]; β = 1 combines the T(x_i) alone.
	// Zero means DefaultAndersonMixing.
	Mixing float64
}

var (
	_ Method    = Anderson{}
	_ Validator = Anderson{}
)

// checkHistory returns an error naming field if a history of memory slots of
// perSlot floats each cannot be addressed.
func checkHistory(field string, memory int, perSlot float64) error {
	if float64(memory)*perSlot > float64(math.MaxInt)/8 {
		return fmt.Errorf("solver: %s = %d too large: its history of %d×%g floats cannot be allocated", field, memory, memory, perSlot)
	}
	return nil
}

// historyLen returns the number of slots worth allocating for a history of
// memory slots, one per iteration at most, in a solve of maxIter iterations.
func historyLen(memory, maxIter int) int {
	if memory > maxIter {
		return maxIter + 1
	}
	return memory
}

// Defaults of Anderson, used where its fields are zero.
const (
	DefaultAndersonMemory = 5
	DefaultAndersonRidge  = 1e-4
	DefaultAndersonMixing = 1
)

func (m Anderson) params() (memory int, ridge, mixing float64) {
	return cmp.Or(m.Memory, DefaultAndersonMemory), cmp.Or(m.Ridge, DefaultAndersonRidge), cmp.Or(m.Mixing, DefaultAndersonMixing)
}

// String implements Method.
func (Anderson) String() string { return "anderson" }

// Validate implements Validator. It reports a Memory below 1 or too large
// for its history to be addressed, a Ridge that is not positive and finite, a
// Mixing outside (0, 1], and a malformed Problem or a stochastic oracle.
func (m Anderson) Validate(p Problem) error {
	if err := p.check(); err != nil {
		return err
	}
	memory, ridge, mixing := m.params()
	if memory < 1 {
		return fmt.Errorf("solver: Anderson.Memory = %d must be at least 1", memory)
	}
	// Per slot: its value and residual, a Gram row and column, and the
	// partial inner products of its blocks.
	n := float64(p.Norm.Len())
	if err := checkHistory("Anderson.Memory", memory, 2*n+2*float64(memory)+3+math.Ceil(n/parBlock)); err != nil {
		return err
	}
	if !(ridge > 0) || math.IsInf(ridge, 1) {
		return fmt.Errorf("solver: Anderson.Ridge = %v must be positive and finite", ridge)
	}
	if err := checkRange("Anderson.Mixing", mixing, 0, 1, false); err != nil {
		return err
	}
	return requireDeterministic("Anderson", p)
}

// Run implements Method. Each iteration evaluates T once and records the
// current point with its exact residual.
func (m Anderson) Run(e *Env) error {
	memory, ridge, beta := m.params()
	memory = historyLen(memory, e.Settings().MaxIter)
	n := e.Len()
	fs := e.buffer(memory * n) // ring of values T(x_i)
	gs := e.buffer(memory * n) // ring of residuals g_i = T(x_i) − x_i
	gram := e.buffer(memory * memory)
	ls := newBordered(e.ws, memory)
	x := e.buffer(n)
	copy(x, e.X0())
	dots, mix := newAndersonPasses(fs, gs, x, memory, beta, e.buffer(memory*blocks(n)))
	head, count := 0, 0 // next slot; slots in use are 0..count-1
	for {
		fi, gi := fs[head*n:(head+1)*n], gs[head*n:(head+1)*n]
		if err := e.Eval(fi, x, Sample{Size: 1}); err != nil {
			return err
		}
		count = min(count+1, memory)
		dots.residual(e.par, head, count, gram, memory)
		if err := e.Record(x, e.norm.Norm(gi)); err != nil {
			return err
		}
		cur := head
		head = (head + 1) % memory
		if count > 1 && ls.solve(gram, memory, count, ridge) && mix.step(e.par, ls.alpha[:count]) {
			continue
		}
		// Mixing step from the latest pair, which becomes the only one kept.
		if cur != 0 {
			copy(fs[:n], fs[cur*n:(cur+1)*n])
			copy(gs[:n], gs[cur*n:(cur+1)*n])
			gram[0] = gram[cur*memory+cur]
		}
		head, count = 1%memory, 1
		mix.step(e.par, mix.one[:]) // the mixing step x_0 + βg_0
	}
}

// newAndersonPasses returns the passes of Anderson over its rings fs and
// gs of memory slots and its point x, with the scratch space partial of
// memory·blocks(len(x)) entries.
func newAndersonPasses(fs, gs, x []float64, memory int, beta float64, partial []float64) (*andersonDots, *andersonMixing) {
	n := len(x)
	fSlots, gSlots := make([][]float64, memory), make([][]float64, memory)
	for j := range memory {
		fSlots[j], gSlots[j] = fs[j*n:(j+1)*n], gs[j*n:(j+1)*n]
	}
	dots := &andersonDots{fs: fs, gs: gs, gSlots: gSlots, x: x, n: n, nb: blocks(n), partial: partial}
	mix := &andersonMixing{fSlots: fSlots, gSlots: gSlots, x: x, beta: beta, one: [1]float64{1},
		w: make([]float64, 0, 2*memory), terms: make([][]float64, 0, 2*memory)}
	return dots, mix
}

// andersonDots computes Anderson's residual and the new row of its Gram
// matrix in one pass over blocks of its vectors.
type andersonDots struct {
	fs, gs, x []float64   // Anderson's rings of values and residuals, its point
	gSlots    [][]float64 // the slots of gs
	n, nb     int         // the dimension, its number of blocks

	// The pass in progress: slot head of the rings, count slots in use,
	// and the partial inner products ⟨g_head, g_j⟩ of block b at
	// partial[j*nb+b].
	head, count int
	partial     []float64
}

// residual writes g = f − x into slot head of gs, from slot head of fs,
// and sets row and column head of the Gram matrix gram (stride memory) to
// the inner products of g with the count stored residuals of gs (slot head
// being g itself). Each inner product is the sum, in block order, of its
// partial sums over blocks of parBlock entries, so that it does not depend
// on the number of workers. The inner products are taken four, then two
// at a time (dotsStrided).
func (t *andersonDots) residual(p *parallel, head, count int, gram []float64, memory int) {
	t.head, t.count = head, count
	p.run(t.n, t)
	for j := range count {
		ps := t.partial[j*t.nb : (j+1)*t.nb]
		d := ps[0]
		for _, v := range ps[1:] {
			d += v
		}
		gram[head*memory+j], gram[j*memory+head] = d, d
	}
}

// block implements blockTask. The block of g stays in cache while the
// inner products read it.
func (t *andersonDots) block(b, lo, hi int) {
	n := t.n
	off := t.head * n
	g := t.gs[off+lo : off+hi]
	subInto(g, t.fs[off+lo:off+hi], t.x[lo:hi])
	dotsStrided(t.partial[b:], t.nb, t.gSlots[:t.count], lo, hi, g)
}

// andersonMixing is Anderson's mixing step, a pass over blocks of its
// vectors.
type andersonMixing struct {
	fSlots, gSlots [][]float64 // the slots of Anderson's rings of values and residuals
	x              []float64   // its point
	beta           float64
	one            [1]float64 // the weights of the plain mixing step

	// The pass in progress: x = alpha[0]·f_0 + Σ w_k terms_k.
	alpha []float64
	w     []float64
	terms [][]float64
	bad   atomic.Bool // set by a block holding a NaN or ±Inf
}

// step sets x to Σ α_j (f_j − (1 − β) g_j) = Σ α_j (x_j + β g_j) over the
// first len(alpha) stored pairs and reports whether every entry is finite.
// Within a block the terms are added in the order f_0, g_0, f_1, g_1, …
// (without the g_j when β = 1), four at a time (addScaledMany), so that
// x's block is read and written once per four terms; every entry gets the
// same operations in the same order whatever the blocks and workers.
func (t *andersonMixing) step(p *parallel, alpha []float64) bool {
	t.alpha = alpha
	t.w, t.terms = t.w[:0], t.terms[:0]
	for j, a := range alpha {
		if j > 0 {
			t.w, t.terms = append(t.w, a), append(t.terms, t.fSlots[j])
		}
		if t.beta != 1 {
			t.w, t.terms = append(t.w, -a*(1-t.beta)), append(t.terms, t.gSlots[j])
		}
	}
	t.bad.Store(false)
	p.run(len(t.x), t)
	t.alpha = nil
	return !t.bad.Load()
}

// block implements blockTask.
func (t *andersonMixing) block(_, lo, hi int) {
	x := t.x[lo:hi]
	floats.ScaleTo(x, t.alpha[0], t.fSlots[0][lo:hi])
	addScaledMany(x, t.w, t.terms, lo, hi)
	if !numeric.AllFinite(x) {
		t.bad.Store(true)
	}
}

// bordered holds the scratch space of Anderson's small linear system.
type bordered struct {
	a     []float64 // (c+1)×(c+1) system, row-major with stride memory+1
	rhs   []float64
	alpha []float64
}

// newBordered returns the scratch space for a memory of the given size,
// taken from w.
func newBordered(w *Workspace, memory int) *bordered {
	k := memory + 1
	return &bordered{a: w.floats(k * k), rhs: w.floats(k), alpha: w.floats(memory)}
}

// andersonPivotTol is the smallest pivot accepted, relative to the entries of
// the scaled system, which are of order one.
const andersonPivotTol = 1e-13

// solve sets up and solves the bordered normal equations for the first c
// slots of the memory×memory Gram matrix and reports whether it produced
// finite weights in b.alpha[:c].
func (b *bordered) solve(gram []float64, memory, c int, ridge float64) bool {
	k := c + 1
	stride := memory + 1
	scale := 0.0
	for i := 0; i < c; i++ {
		scale += gram[i*memory+i]
	}
	scale /= float64(c)
	if !(scale > 0) || math.IsInf(scale, 1) {
		return false
	}
	a := b.a
	a[0] = 0
	b.rhs[0] = 1
	for i := 1; i < k; i++ {
		a[i], a[i*stride] = 1, 1
		b.rhs[i] = 0
		for j := 1; j < k; j++ {
			a[i*stride+j] = gram[(i-1)*memory+j-1] / scale
		}
		a[i*stride+i] += ridge
	}
	// Gaussian elimination with partial pivoting.
	for col := 0; col < k; col++ {
		p := col
		for r := col + 1; r < k; r++ {
			if math.Abs(a[r*stride+col]) > math.Abs(a[p*stride+col]) {
				p = r
			}
		}
		if !(math.Abs(a[p*stride+col]) > andersonPivotTol) {
			return false
		}
		if p != col {
			for j := 0; j < k; j++ {
				a[p*stride+j], a[col*stride+j] = a[col*stride+j], a[p*stride+j]
			}
			b.rhs[p], b.rhs[col] = b.rhs[col], b.rhs[p]
		}
		piv := a[col*stride+col]
		for r := col + 1; r < k; r++ {
			f := a[r*stride+col] / piv
			if f == 0 {
				continue
			}
			for j := col; j < k; j++ {
				a[r*stride+j] -= f * a[col*stride+j]
			}
			b.rhs[r] -= f * b.rhs[col]
		}
	}
	for i := k - 1; i >= 1; i-- { // back substitution; ν (row 0) is not needed
		s := b.rhs[i]
		for j := i + 1; j < k; j++ {
			s -= a[i*stride+j] * b.alpha[j-1]
		}
		b.alpha[i-1] = s / a[i*stride+i]
	}
	return numeric.AllFinite(b.alpha[:c])
}

// dot returns aᵀb using gonum's vectorised kernel.
func dot(a, b []float64) float64 { return floats.Dot(a, b) }
