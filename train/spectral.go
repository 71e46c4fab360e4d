package train

import (
	"context"
	"fmt"

	"github.com/deqgo/deq/datasets"
	"github.com/deqgo/deq/deq"
)

// SpectralBatch is the number of test images (the first ones) on whose
// fixed points Trainer measures the spectral radius and norm of ∂f/∂z after
// every epoch (Model.Spectral).
const SpectralBatch = 32

// Spectrum is a measurement of the Jacobian ∂f/∂z at the fixed points of a
// batch (see Model.Spectral).
type Spectrum struct {
	// Radius and Norm are the largest over the batch's examples of the
	// spectral radius ρ(J_b) (deq.SpectralRadius, Arnoldi) and the spectral
	// norm ‖J_b‖₂ (deq.SpectralNorm, power iteration) of J_b = ∂f_b/∂z_b
	// at z*.
	Radius, Norm float64
	// Gamma is the cell's declared Lipschitz bound γ̄ (+Inf when it
	// declares none, under weight normalisation); it bounds Norm in ℓ2,
	// and Radius in every norm, when Proven.
	Gamma float64
	// Proven reports whether the cell proves Gamma in the model's norm.
	Proven bool
	// Converged reports whether both iterations met their tolerance.
	Converged bool
}

// Spectral measures ∂f/∂z at the fixed points of the first SpectralBatch
// images of d (all of them if fewer), solved with the forward solver s
// (zero fields take DefaultForward()'s values), from which the measurement
// is reproducible: it is the spectral radius monitoring of the DEQ
// literature, the quantity whose value below one makes z* locally
// attracting, beside the cell's declared bound.
func (m *Model) Spectral(ctx context.Context, d *datasets.Dataset, s SolverConfig) (Spectrum, error) {
	s, err := s.merge("Eval", DefaultForward())
	if err != nil {
		return Spectrum{}, err
	}
	l, err := m.layer(s, nil, nil)
	if err != nil {
		return Spectrum{}, err
	}
	return m.spectral(ctx, l, d, 0)
}

// spectral measures ∂f/∂z with layer l at the fixed points of the first
// SpectralBatch images of d; seed seeds the solve and the start vectors.
func (m *Model) spectral(ctx context.Context, l *deq.Layer, d *datasets.Dataset, seed uint64) (Spectrum, error) {
	if d.Dim() != m.InputDim {
		return Spectrum{}, fmt.Errorf("train: %s has %d pixels per image, the model %d", d.Name, d.Dim(), m.InputDim)
	}
	n := min(SpectralBatch, d.Len())
	if err := d.Head(n).Validate(); err != nil {
		return Spectrum{}, err
	}
	w := m.work(n)
	m.standardize(w.xs, d.X[:n*m.InputDim])
	if err := m.encode(w, w.e, n); err != nil {
		return Spectrum{}, err
	}
	l.SetSeeds(seed, 0)
	sol, err := l.Forward(ctx, w.e)
	if err != nil {
		return Spectrum{}, err
	}
	ev, err := m.cell.Evaluator(n)
	if err != nil {
		return Spectrum{}, err
	}
	if err := ev.SetInput(w.e); err != nil {
		return Spectrum{}, err
	}
	o := &deq.JacobianOptions{Seed: seed}
	rho, err := deq.SpectralRadius(ctx, ev, sol.Z, o)
	if err != nil {
		return Spectrum{}, err
	}
	sn, err := deq.SpectralNorm(ctx, ev, sol.Z, o)
	if err != nil {
		return Spectrum{}, err
	}
	return Spectrum{Radius: rho.Value, Norm: sn.Value, Gamma: m.cell.Gamma(), Proven: m.Proven(), Converged: rho.Converged && sn.Converged}, nil
}
