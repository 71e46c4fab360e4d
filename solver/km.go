package solver

import "cmp"

// KrasnoselskiiMann is the damped (averaged) iteration
//
//	x_{k+1} = (1 − α) x_k + α T(x_k).
//
// For a nonexpansive T with a fixed point x_* and 0 < α < 1 the residual
// ‖x_k − T(x_k)‖ tends to zero in every normed space (Ishikawa 1976), at rate
// O(‖x_0 − x_*‖/√k) (Baillon and Bruck 1996); for a γ-contraction the map being iterated is a (1 − α + αγ)-contraction, so
// convergence is linear but slower than Picard's when γ is small. α = 1 is
// Picard: the step is then x_{k+1} = T(x_k) exactly, without the rounding of
// x_k + (T(x_k) − x_k). It needs a deterministic oracle and makes one
// evaluation per iteration.
//
// Limitation: no acceleration; on nonexpansive problems it is slower than
// Halpern in theory (O(1/√k) against O(1/k)) though often faster in practice
// on rotations and other maps whose averaged form contracts.
type KrasnoselskiiMann struct {
	// Alpha is the step α ∈ (0, 1]. Zero means DefaultKMAlpha.
	Alpha float64
}

// DefaultKMAlpha is the step of KrasnoselskiiMann when Alpha is zero.
const DefaultKMAlpha = 0.5

var (
	_ Method    = KrasnoselskiiMann{}
	_ Validator = KrasnoselskiiMann{}
)

func (m KrasnoselskiiMann) alpha() float64 { return cmp.Or(m.Alpha, DefaultKMAlpha) }

// String implements Method.
func (KrasnoselskiiMann) String() string { return "km" }

// Validate implements Validator. It reports an Alpha outside (0, 1] and a
// stochastic oracle.
func (m KrasnoselskiiMann) Validate(p Problem) error {
	if err := checkRange("KrasnoselskiiMann.Alpha", m.alpha(), 0, 1, false); err != nil {
		return err
	}
	return requireDeterministic("KrasnoselskiiMann", p)
}

// Run implements Method. Each iteration evaluates T once and records the
// current point with its exact residual.
func (m KrasnoselskiiMann) Run(e *Env) error {
	a := m.alpha()
	x := append([]float64(nil), e.X0()...)
	tx := make([]float64, len(x))
	for {
		if err := e.Eval(tx, x, Sample{Size: 1}); err != nil {
			return err
		}
		if err := e.Record(x, e.Dist(tx, x)); err != nil {
			return err
		}
		if a == 1 {
			x, tx = tx, x
			continue
		}
		for i, t := range tx {
			x[i] += a * (t - x[i])
		}
	}
}
