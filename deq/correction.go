package deq

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/deqgo/deq/solver"
)

// State is a state of the forward solver's trajectory collected for
// fixed-point correction (see Settings.CorrectionStates).
type State struct {
	// Iter is the solver's iteration at which the state was recorded (its
	// index in Result.Stats.Trace: epochs for VR-GHAL).
	Iter int
	// Z is the iterate.
	Z []float64
}

// trajectory is the solver.PointRecorder that collects the iterates of a
// forward solve for fixed-point correction in memory that does not grow
// with the iterations: it keeps the iterates whose iteration is a multiple
// of a stride, at most 2(K − 1) of them, and doubles the stride (dropping
// every other kept iterate) when they fill up, so that the kept iterates
// always cover the iterations so far with a spacing of at most about
// 1/(K − 1) of their number. It also keeps the last iterate and the
// iteration of the lowest residual, to say which iterate Solve returned.
type trajectory struct {
	states  int // K
	stride  int
	kept    []State
	spare   [][]float64
	last    []float64
	lastIt  int
	bestIt  int
	bestRes float64
	seen    int
	next    solver.Recorder // the caller's own recorder, or nil
}

var _ solver.PointRecorder = (*trajectory)(nil)

// ErrNoIterates is wrapped by the error of a forward solve with
// Settings.CorrectionStates > 0 whose method recorded no iterates, so that
// there are no states to apply the correction loss to.
var ErrNoIterates = errors.New("records no iterates")

func newTrajectory(k int, next solver.Recorder) *trajectory {
	return &trajectory{states: k, stride: 1, bestRes: math.Inf(1), next: next}
}

// capacity is the number of iterates kept besides the last.
func (t *trajectory) capacity() int { return 2 * max(t.states-1, 1) }

// Record implements solver.Recorder; Solve calls RecordPoint instead.
func (t *trajectory) Record(p solver.TracePoint) error {
	if t.next != nil {
		return t.next.Record(p)
	}
	return nil
}

// RecordPoint implements solver.PointRecorder.
func (t *trajectory) RecordPoint(p solver.TracePoint, x []float64) error {
	t.seen++
	t.last = append(t.last[:0], x...)
	t.lastIt = p.Iter
	if p.Residual < t.bestRes {
		t.bestRes, t.bestIt = p.Residual, p.Iter
	}
	if p.Iter >= 1 && p.Iter%t.stride == 0 {
		if len(t.kept) == t.capacity() {
			t.stride *= 2
			k := 0
			for _, s := range t.kept {
				if s.Iter%t.stride == 0 {
					t.kept[k] = s
					k++
				} else {
					t.spare = append(t.spare, s.Z)
				}
			}
			t.kept = t.kept[:k]
		}
		if p.Iter%t.stride == 0 {
			var z []float64
			if n := len(t.spare); n > 0 {
				z, t.spare = t.spare[n-1], t.spare[:n-1]
			}
			t.kept = append(t.kept, State{Iter: p.Iter, Z: append(z[:0], x...)})
		}
	}
	if pr, ok := t.next.(solver.PointRecorder); ok {
		return pr.RecordPoint(p, x)
	}
	return t.Record(p)
}

// collected returns the collected states of a solve that returned z: for
// k = 1, …, K − 1 the kept iterate nearest iteration k·T/K (T the last
// iteration; without repeats, and before T), then z itself, with the
// iteration it was recorded at (the last, or the one of the lowest
// residual for methods that return their best iterate).
func (t *trajectory) collected(z []float64) []State {
	T := t.lastIt
	var out []State
	for k := 1; k < t.states; k++ {
		target := float64(k) * float64(T) / float64(t.states)
		best := -1
		for i, s := range t.kept {
			if s.Iter >= T {
				break
			}
			if best < 0 || math.Abs(float64(s.Iter)-target) < math.Abs(float64(t.kept[best].Iter)-target) {
				best = i
			}
		}
		if best < 0 || (len(out) > 0 && out[len(out)-1].Iter >= t.kept[best].Iter) {
			continue
		}
		out = append(out, t.kept[best])
	}
	it := t.lastIt
	if !slices.Equal(z, t.last) {
		it = t.bestIt
	}
	return append(out, State{Iter: it, Z: z})
}

// checkCorrection checks the arguments of CorrectionForward and
// CorrectionBackward.
func (l *Layer) checkCorrection(what string, sol *Solution, args ...solutionArg) (*batch, error) {
	b, err := l.prepareSolution(what, sol, args...)
	if err != nil {
		return nil, err
	}
	if len(sol.States) == 0 {
		return nil, fmt.Errorf("deq: %s: the Solution holds no states (Settings.CorrectionStates = %d)", what, l.s.CorrectionStates)
	}
	for i, s := range sol.States {
		if len(s.Z) != len(sol.Z) {
			return nil, fmt.Errorf("deq: %s: Solution.States[%d].Z has length %d, want %d", what, i, len(s.Z), len(sol.Z))
		}
	}
	return b, nil
}

// CorrectionForward returns f(z_k, x) for every collected state z_k of sol
// (Solution.States, in order; under Settings.Dropout the masked map): the
// points at which fixed-point correction applies the loss, each one
// application of the cell away from its state, so that CorrectionBackward
// gives the exact gradient of a loss of them with the states held fixed.
func (l *Layer) CorrectionForward(sol *Solution) ([][]float64, error) {
	b, err := l.checkCorrection("CorrectionForward", sol)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(sol.States))
	for k, s := range sol.States {
		out[k] = make([]float64, len(s.Z))
		if err := b.ev.EvalExact(out[k], s.Z); err != nil {
			return nil, err
		}
		sol.mask.apply(out[k])
	}
	return out, nil
}

// CorrectionBackward adds the one-step (Jacobian-free) gradients of
// fixed-point correction, from "Deep Equilibrium Optical Flow Estimation"
// by Shaojie Bai, Zhengyang Geng, Yash Savani and J. Zico Kolter (CVPR
// 2022): given a cotangent gs[k] = ∂L/∂f_k for each collected state z_k of
// sol (f_k = f(z_k, x) as CorrectionForward returns it), it adds
// Σ_k (∂f(z_k, x)/∂θ)ᵀ gs[k] to the cell's parameter gradients and writes
// Σ_k (∂f(z_k, x)/∂x)ᵀ gs[k] into dx (which may be nil): the gradient of
// Σ_k ⟨gs[k], f(sg(z_k), x)⟩ with every state z_k held constant (sg is the
// stop-gradient). One full VJP per state; no solve.
//
// The paper applies the loss to K states with weights decaying
// geometrically towards the last (γ^{K−1−k}, the last weighted one); the
// weights belong to the caller's cotangents.
func (l *Layer) CorrectionBackward(sol *Solution, gs [][]float64, dx []float64) (*BackwardStats, error) {
	b, err := l.checkCorrection("CorrectionBackward", sol, inputArg("dx", dx))
	if err != nil {
		return nil, err
	}
	if len(gs) != len(sol.States) {
		return nil, fmt.Errorf("deq: CorrectionBackward: %d cotangents for %d states", len(gs), len(sol.States))
	}
	var dxk []float64
	if dx != nil {
		clear(dx)
		dxk = make([]float64, len(dx))
	}
	st := &BackwardStats{Mode: JacobianFree}
	g := make([]float64, len(sol.Z))
	for k, s := range sol.States {
		if len(gs[k]) != len(sol.Z) {
			return st, fmt.Errorf("deq: CorrectionBackward: gs[%d] has length %d, want %d", k, len(gs[k]), len(sol.Z))
		}
		copy(g, gs[k])
		sol.mask.apply(g)
		if err := b.ev.VJP(nil, dxk, s.Z, g); err != nil {
			return st, err
		}
		st.VJPs++
		st.TermEvals += int64(b.ev.Terms())
		addInto(dx, dxk)
	}
	return st, nil
}
