package layers

import (
	"fmt"
	"math"

	"github.com/deqgo/deq/solver"
)

// LipschitzStats summarises the empirical Lipschitz ratios
// ‖f(z₁) − f(z₂)‖/‖z₁ − z₂‖ a LipschitzMonitor observed.
type LipschitzStats struct {
	// Gamma is the bound the ratios were compared with.
	Gamma float64
	// Pairs counts the pairs of evaluations compared.
	Pairs int
	// Max is the largest ratio observed (zero when Pairs is zero).
	Max float64
	// Exceeded counts the ratios above Gamma·(1 + RatioSlack).
	Exceeded int
	// Warning is empty unless Exceeded > 0, when it says so in words.
	Warning string
}

// RatioSlack is the relative slack of LipschitzMonitor's comparison with
// γ̄, which absorbs rounding in the differences.
const RatioSlack = 1e-6

// LipschitzMonitor wraps an oracle and measures the ratios
// ‖τ(z₁) − τ(z₂)‖/‖z₁ − z₂‖ of successive evaluations along a solver's
// trajectory, for cells whose Lipschitz bound is not proven in the norm at
// hand (see Cell.Proven). For a stochastic oracle only successive
// evaluations with the same Sample are compared, so the ratio estimates the
// samplewise Lipschitz constant of that minibatch. Pairs closer than 1e-8
// (relative to ‖z₂‖, at least 1e-8) are skipped, where rounding dominates.
//
// The ratios are lower bounds on the true Lipschitz constant: a monitor can
// reveal a violation, never certify its absence. It holds two copies of the
// state and never prints; read Stats after the solve.
type LipschitzMonitor struct {
	o      solver.Oracle
	n      solver.Norm
	gamma  float64
	pz, pf []float64
	diff   []float64
	ps     solver.Sample
	has    bool
	stats  LipschitzStats
}

var (
	_ solver.Oracle = (*LipschitzMonitor)(nil)
	_ solver.Exact  = (*LipschitzMonitor)(nil)
)

// NewLipschitzMonitor returns a monitor of o in norm n comparing ratios with
// gamma. It returns an error if the dimensions differ or gamma is not
// positive.
func NewLipschitzMonitor(o solver.Oracle, n solver.Norm, gamma float64) (*LipschitzMonitor, error) {
	switch {
	case o == nil || n == nil:
		return nil, fmt.Errorf("layers: NewLipschitzMonitor: nil oracle or norm")
	case o.Len() != n.Len():
		return nil, fmt.Errorf("layers: NewLipschitzMonitor: oracle length %d, norm length %d", o.Len(), n.Len())
	case !(gamma > 0):
		return nil, fmt.Errorf("layers: NewLipschitzMonitor: gamma = %v must be positive", gamma)
	}
	l := o.Len()
	return &LipschitzMonitor{
		o: o, n: n, gamma: gamma,
		pz: make([]float64, l), pf: make([]float64, l), diff: make([]float64, l),
		stats: LipschitzStats{Gamma: gamma},
	}, nil
}

// Len implements solver.Oracle.
func (m *LipschitzMonitor) Len() int { return m.o.Len() }

// Model implements solver.Oracle: the wrapped oracle's model.
func (m *LipschitzMonitor) Model() solver.Model { return m.o.Model() }

// Eval implements solver.Oracle. It evaluates the wrapped oracle and
// compares the result with the previous evaluation.
func (m *LipschitzMonitor) Eval(dst, z []float64, s solver.Sample) (int, error) {
	k, err := m.o.Eval(dst, z, s)
	if err != nil {
		return k, err
	}
	same := m.o.Model() == solver.Deterministic || s == m.ps
	if m.has && same {
		for i := range m.diff {
			m.diff[i] = z[i] - m.pz[i]
		}
		dz := m.n.Norm(m.diff)
		if dz > 1e-8*math.Max(1, m.n.Norm(m.pz)) {
			for i := range m.diff {
				m.diff[i] = dst[i] - m.pf[i]
			}
			r := m.n.Norm(m.diff) / dz
			m.stats.Pairs++
			m.stats.Max = math.Max(m.stats.Max, r)
			if r > m.gamma*(1+RatioSlack) {
				m.stats.Exceeded++
				m.stats.Warning = fmt.Sprintf("empirical Lipschitz ratio %.4g exceeds γ̄ = %.4g in %s (%d of %d pairs)",
					m.stats.Max, m.gamma, m.n, m.stats.Exceeded, m.stats.Pairs)
			}
		}
	}
	copy(m.pz, z)
	copy(m.pf, dst)
	m.ps = s
	m.has = true
	return k, nil
}

// EvalExact implements solver.Exact when the wrapped oracle does; it is not
// monitored.
func (m *LipschitzMonitor) EvalExact(dst, z []float64) error {
	if e, ok := m.o.(solver.Exact); ok {
		return e.EvalExact(dst, z)
	}
	return fmt.Errorf("layers: LipschitzMonitor: wrapped oracle has no exact operator")
}

// Wrapped returns the oracle the monitor evaluates.
func (m *LipschitzMonitor) Wrapped() solver.Oracle { return m.o }

// Stats returns the ratios observed so far.
func (m *LipschitzMonitor) Stats() LipschitzStats { return m.stats }

// Reset forgets the previous evaluation and the statistics.
func (m *LipschitzMonitor) Reset() {
	m.has = false
	m.stats = LipschitzStats{Gamma: m.gamma}
}
