package solver

import (
	"cmp"
	"errors"
	"fmt"
	"math"

	"github.com/deqgo/deq/internal/numeric"
)

// Broyden is the limited-memory "good" Broyden method applied to the root
// problem g(x) = T(x) − x = 0, as in the forward pass of deep equilibrium
// models (Bai, Kolter and Koltun 2019). It keeps an approximation
//
//	H = −I + Σ_i u_i v_iᵀ
//
// of the inverse Jacobian of g (−I is the inverse Jacobian when T is
// constant), steps x ← x − H g(x) with unit length, and after each step
// s = Δx, y = Δg applies Broyden's good update written for the inverse
// (Sherman–Morrison):
//
//	u = (s − H y)/(sᵀ H y),  v = Hᵀ s.
//
// The pairs (u_i, v_i) live in a ring of c = min{Memory, Settings.MaxIter + 1}
// slots, the oldest overwritten when it is full; their vectors come from the
// solve's Workspace, and nothing is allocated per iteration besides the
// trace. A step costs about 4cn flops besides the evaluation of T.
//
// Safeguards skip a degenerate update, fall back to a Picard step when a
// step is zero or not finite, and restart from the best point when a
// residual exceeds Protect times the best one (stopping with Diverged if
// that recurs before a new best); Patience bounds the iterations without
// progress (Stagnated). The best point is returned either way.
//
// Limitations: no line search; no guarantee beyond the local superlinear
// convergence of Broyden's method near a root with a nonsingular Jacobian;
// like Anderson it is a root finder and may converge to repelling fixed
// points of expansive maps. The inner products are Euclidean whatever the
// problem's norm. It needs a deterministic oracle. The page
// docs/solvers-and-certificates.md in the repository details the memory
// and the safeguards.
type Broyden struct {
	// Memory is the number of rank-one updates kept. Zero means
	// DefaultBroydenMemory.
	Memory int
	// Protect is the factor over the best residual beyond which the method
	// restarts from the best point, or stops with Status Diverged if it has
	// already restarted since the last new best. It must exceed 1. Zero
	// means DefaultBroydenProtect; +Inf lifts the limit.
	Protect float64
	// Patience is the number of consecutive iterations without a new best
	// residual after which the method stops with Status Stagnated. Zero
	// means DefaultBroydenPatience.
	Patience int
}

var (
	_ Method    = Broyden{}
	_ Validator = Broyden{}
)

// Defaults of Broyden, used where its fields are zero.
const (
	DefaultBroydenMemory   = 30
	DefaultBroydenProtect  = 1e3
	DefaultBroydenPatience = 50
)

func (m Broyden) params() (memory int, protect float64, patience int) {
	return cmp.Or(m.Memory, DefaultBroydenMemory), cmp.Or(m.Protect, DefaultBroydenProtect), cmp.Or(m.Patience, DefaultBroydenPatience)
}

// String implements Method.
func (Broyden) String() string { return "broyden" }

// Validate implements Validator. It reports a Memory or Patience below 1, a
// Memory too large for its history to be addressed, a Protect not above 1
// (or NaN), and a malformed Problem or a stochastic oracle.
func (m Broyden) Validate(p Problem) error {
	if err := p.check(); err != nil {
		return err
	}
	memory, protect, patience := m.params()
	// Per slot: its pair of vectors, and the partial inner products of
	// their blocks with their sums.
	n := float64(p.Norm.Len())
	if err := checkHistory("Broyden.Memory", memory, 2*n+2*math.Ceil(n/parBlock)+2); err != nil {
		return err
	}
	switch {
	case memory < 1:
		return fmt.Errorf("solver: Broyden.Memory = %d must be at least 1", memory)
	case !(protect > 1):
		return fmt.Errorf("solver: Broyden.Protect = %v must exceed 1", protect)
	case patience < 1:
		return fmt.Errorf("solver: Broyden.Patience = %d must be at least 1", patience)
	}
	return requireDeterministic("Broyden", p)
}

// broydenDenTol is the relative size below which sᵀHy counts as zero.
const broydenDenTol = 1e-12

// errStagnated is the cause reported with Status Stagnated.
var errStagnated = errors.New("no new best residual within Broyden.Patience iterations")

// Run implements Method. Each iteration evaluates T once and records the
// current point with its exact residual.
func (m Broyden) Run(e *Env) error {
	memory, protect, patience := m.params()
	memory = historyLen(memory, e.Settings().MaxIter)
	n := e.Len()
	// The pairs (u_i, v_i). Storing a pair swaps the buffers s and v with
	// those of its slot, so it copies nothing. A workspace the caller keeps
	// gets a slot's buffers when the slot is first filled, so that it holds
	// no more slots than its solves have used; otherwise they are taken at
	// once, so that no allocation happens in the loop.
	us, vs := make([][]float64, memory), make([][]float64, memory)
	if !e.keptWorkspace() {
		ring := e.buffer(2 * memory * n)
		for i := range us {
			us[i], vs[i] = ring[2*i*n:(2*i+1)*n:(2*i+1)*n], ring[(2*i+1)*n:(2*i+2)*n:(2*i+2)*n]
		}
	}
	x := e.buffer(n)
	copy(x, e.X0())
	xn := e.buffer(n) // the next point
	g := e.buffer(n)  // g(x)
	tx := e.buffer(n) // T(x), then g at the new point
	s := e.buffer(n)  // step, then s − Hy
	hy := e.buffer(n)
	v := e.buffer(n)
	gBest := e.buffer(n)
	sn := e.buffer(n)   // the next step, by the recurrence below
	next := e.buffer(n) // the next step corrected by a new pair
	ps := newBroydenPasses(e, n, memory, us, vs)
	restarted := false            // a protective restart happened since the last new best
	head, count, stall := 0, 0, 0 // next slot, pairs stored, iterations since the best

	if err := e.Eval(tx, x, Sample{Size: 1}); err != nil {
		return err
	}
	e.par.subInto(g, tx, x)
	res := e.norm.Norm(g)
	if err := e.Record(x, res); err != nil {
		return err
	}
	// The best point is the Env's (Record keeps the point of the lowest
	// residual, the same test as res < best below); its residual vector is
	// kept here.
	best := res
	e.par.copy(gBest, g)
	for {
		// s = −H g, from the recurrence (kept in sn) while pairs are
		// stored, g itself for H = −I; and the next point x + s.
		if count > 0 {
			s, sn = sn, s
		} else {
			e.par.copy(s, g)
		}
		ss := ps.step(e.par, xn, x, s)
		if !stepOK(ss, s) {
			count, head = 0, 0
			e.par.copy(s, g)
			ps.step(e.par, xn, x, s)
		}
		x, xn = xn, x
		if err := e.Eval(tx, x, Sample{Size: 1}); err != nil {
			return err
		}
		e.par.subInto(tx, tx, x) // g(x_new)
		res = e.norm.Norm(tx)
		if err := e.Record(x, res); err != nil {
			return err
		}
		if res < best {
			best, stall, restarted = res, 0, false
			e.par.copy(gBest, tx)
		} else {
			stall++
			if stall >= patience {
				return e.Stop(Stagnated, errStagnated)
			}
		}
		if res > protect*best {
			if restarted {
				return e.Stop(Diverged, fmt.Errorf("residual %.3g exceeds Broyden.Protect = %g times the best %.3g again after a restart", res, protect, best))
			}
			restarted, count, head = true, 0, 0
			e.par.copy(x, e.best)
			e.par.copy(g, gBest)
			continue
		}
		// y = g_new − g, kept in g, and the inner products of the stored
		// pairs with y and s; the overwritten pair's with g_new.
		var oldU, oldV []float64
		if count == memory {
			oldU, oldV = us[head], vs[head]
		}
		eOld := ps.dots(e.par, g, tx, s, count, oldV)
		// Hy = −y + Σ u_i (v_i·y); the next step −H' g_new with H' the
		// updated H: H g_new = H g + H y = −s + Hy, so −H g_new = s − Hy,
		// to which a stored pair (u, v) adds −u (v·g_new) and an
		// overwritten one (u_o, v_o) adds back u_o (v_o·g_new). This saves
		// the 2c passes over the stored pairs of computing −H g_new
		// directly. Also v = Hᵀ s = −s + Σ v_i (u_i·s), which a new pair
		// needs: both use every stored pair, the oldest included.
		den, hh, f := ps.combine(e.par, hy, v, sn, g, s, tx)
		if math.Abs(den) > broydenDenTol*math.Sqrt(ss)*math.Sqrt(hh) && !math.IsInf(den, 0) {
			// u = (s − Hy)/den in place of s, and the next step corrected
			// by the new pair (u, v) and the overwritten one into next.
			if ps.pair(e.par, s, sn, next, v, 1/den, f, eOld, oldU) {
				if us[head] == nil {
					us[head], vs[head] = e.buffer(n), e.buffer(n)
				}
				us[head], s = s, us[head]
				vs[head], v = v, vs[head]
				sn, next = next, sn
				head = (head + 1) % memory
				count = min(count+1, memory)
			}
		}
		g, tx = tx, g // g(x) for the next step; tx is scratch again
	}
}

// stepOK reports whether the step s, of squared length ss, is finite and
// not zero: a finite positive sᵀs proves both, and only otherwise are the
// entries checked one by one.
func stepOK(ss float64, s []float64) bool {
	if ss > 0 && ss <= math.MaxFloat64 {
		return true
	}
	return numeric.AllFinite(s) && anyNonzero(s)
}

func anyNonzero(x []float64) bool {
	for _, v := range x {
		if v != 0 {
			return true
		}
	}
	return false
}
