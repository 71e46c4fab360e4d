// Package deq joins an implicit cell to a forward fixed-point solver and a
// backward mode to form a deep equilibrium (DEQ) layer.
//
// A Layer maps an input batch x to the fixed point z* = f(z*, x; θ) of a
// layers.Cell. The forward solve is any solver.Method (Picard by default;
// Broyden, Anderson, Halpern, GHAL or VR-GHAL by setting Settings.Forward):
// a deterministic method sees the cell's exact operator, a stochastic one
// its minibatch oracle (Settings.ForwardOracle). Each Forward returns a
// Solution holding z*, the solver's Result (status, statistics and residual
// certificate in the per-example norm Settings.Norm, a solver.Norm applied
// to each example's Rows×Hidden state; nil means ℓ2) and, for cells whose Lipschitz
// bound is not proven in that norm, empirical Lipschitz ratios with a
// warning when they exceed the bound.
//
// Backward computes ∂L/∂x and adds ∂L/∂θ to the cell's parameter gradients
// given ∂L/∂z*, in one of three modes:
//
//   - Implicit: solve the adjoint fixed point g = J_f(z*)ᵀg + ∂L/∂z* with its
//     own solver, norm and tolerance (an oracle whose evaluations are
//     gorgonia vector–Jacobian products, minibatched for stochastic cells
//     under a stochastic adjoint method), then ∂L/∂θ = (∂f/∂θ)ᵀg and
//     ∂L/∂x = (∂f/∂x)ᵀg;
//   - JacobianFree: g = ∂L/∂z*;
//   - Phantom: backpropagation through k damped steps from z*.
//
// Memory does not grow with solver iterations: no graph is unrolled.
//
// The zero value of every Settings field is its documented default. The
// modes (Backward, OracleMode, Monitor) are typed values inside the
// library; ParseBackward, ParseOracleMode and ParseMonitor, and their
// MarshalText and UnmarshalText methods, convert them at the flag and JSON
// boundary, rejecting unknown names.
//
// # Training with gorgonia
//
// Apply inserts a Layer into a gorgonia graph as an op whose symbolic
// derivative runs Backward, so encoder → DEQ → readout is one graph trained
// with gorgonia.Grad, a TapeMachine with BindDualValues and any gorgonia
// solver (see Example_training). The parameter nodes Apply returns join the
// model's learnables; call the cell's Project after every solver step.
//
// # Limitations
//
//   - The graph of Apply has a fixed batch size; build one graph per batch
//     size (the Layer caches its state for a few sizes).
//   - Under a non-ℓ2 forward norm the adjoint map contracts in the dual norm,
//     which package solver does not offer; the adjoint solve uses ℓ2 by
//     default (Settings.AdjointNorm).
//   - Forward starts every solve from z = 0 (no warm start).
//   - A Layer is not safe for concurrent use.
package deq
