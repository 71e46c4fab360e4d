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
// A NaN or ±Inf is never passed on silently: Forward, Backward, the
// methods that take a Solution and the Jacobian measurements return an
// error wrapping solver.ErrNonFinite, naming the coordinate and example,
// when their input (x, ∂L/∂z*, the Solution, the point z) is not finite,
// and when the cell returns a non-finite value during a solve (the Result
// then has Status Diverged and no certificate with a NaN bound) or a
// measurement, so that no eigenvalue computation ever sees one.
//
// The adjoint solve of a stochastic cell is certified like the forward:
// its oracle declares the cell's finite sum (solver.FiniteSum, whose exact
// evaluation is the exact VJP), so every adjoint solve, on sampled VJPs
// (Settings.AdjointOracle, say under solver.GrowingBatch or VR-GHAL) or on
// exact ones, returns an exact certificate of the adjoint residual. In a
// norm in which the exact adjoint map is a γ̄-contraction, the returned g
// is then within Bound/(1 − γ̄) of the exact adjoint solution, and each
// gradient within that distance times the norm of the linear map g ↦
// gradient. Solution.TermEvals and BackwardStats.TermEvals count the work
// of both passes in term evaluations (one of the cell's Terms() terms on
// the whole batch), certificates included, so that sampled and exact
// solves are compared in one unit.
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
// # Training aids
//
// Beside the Lipschitz projection, the layer offers the training aids of
// the DEQ literature as library calls that a training loop composes per
// batch (after SetSeeds, Forward and the loss's ∂L/∂z*):
//
//   - Jacobian regularisation, from "Stabilizing Equilibrium Models by
//     Jacobian Regularization" by Shaojie Bai, Vladlen Koltun and J. Zico
//     Kolter (ICML 2021): JacobianRegularize returns Hutchinson's estimate
//     R of ‖∂f/∂z‖_F² at z* (mean over examples, or per entry with
//     JacobianRegOptions.PerDimension as TorchDEQ normalises it) and adds
//     w·∂R/∂θ to the parameter gradients, exactly for the given probes
//     (z* held constant), with w·∂R/∂x for the encoder. The gradient is a
//     fused double backward that Dense implements
//     (layers.JacobianPenalizer); other cells are refused with an error
//     wrapping ErrJacobianUnsupported that names the cell, unless the
//     weight is zero (measurement only).
//   - Fixed-point correction, from "Deep Equilibrium Optical Flow
//     Estimation" by Shaojie Bai, Zhengyang Geng, Yash Savani and J. Zico
//     Kolter (CVPR 2022): Settings.CorrectionStates = K makes Forward keep
//     K states of the solver's trajectory (Solution.States, the last being
//     z*) through the solver's Recorder, for every method that records its
//     iterates; CorrectionForward evaluates f at each state and
//     CorrectionBackward adds the one-step gradient of a loss of those
//     values, each state held constant.
//   - DEQ dropout: Settings.Dropout = p draws one mask per forward batch,
//     fixed across the solver's iterations and seen by every backward path,
//     off after SetEvaluation(true). A fixed mask is a deterministic map
//     with its own fixed point, unlike a stochastic cell's sampled oracle;
//     it scales the Lipschitz bound by 1/(1 − p) (see Settings.Dropout).
//   - Spectral radius and norm monitoring: SpectralRadius, SpectralNorm and
//     JacobianFrobenius measure ∂f/∂z at z* for a batch, to compare with
//     the cell's Gamma.
//   - Weight normalisation in place of the projection, for Dense cells:
//     layers.DenseConfig.Normalization (layers.WeightNorm after Salimans and
//     Kingma, layers.SpectralNorm after Miyato and others). Only the
//     projection and the exact spectral normalisation prove a bound γ̄ for
//     the certificates and GHAL's schedule; weight normalisation proves
//     none (Gamma is +Inf, Proven false).
//
// A training step with every aid, for a loss ℓ of a readout of the state:
//
//	layer.SetSeeds(fwdSeed, adjSeed)
//	sol, err := layer.Forward(ctx, x)          // under Dropout: masked
//	_, err = layer.Backward(ctx, sol, dℓ/dz*, dx) // main loss at z*
//	fs, err := layer.CorrectionForward(sol)    // K values f(z_k)
//	// gs[k] = γ^(K−1−k)·∂ℓ(f_k)/∂f_k, computed by the readout
//	_, err = layer.CorrectionBackward(sol, gs, dxc)
//	if step%freq == 0 {
//		est, err := layer.JacobianRegularize(sol, w, &opts, nil, dxj)
//	}
//	// add dx, dxc, dxj for the encoder; optimiser step; cell.Project()
//
// Backward, CorrectionBackward and JacobianRegularize all add to the
// parameter gradients, so their contributions sum.
//
// # Limitations
//
//   - The graph of Apply has a fixed batch size; build one graph per batch
//     size (the Layer caches its state for a few sizes).
//   - Under a non-ℓ2 forward norm the adjoint map contracts in the dual norm,
//     which package solver does not offer; the adjoint solve uses ℓ2 by
//     default (Settings.AdjointNorm).
//   - Forward starts every solve from z = 0, or from the injection xU + b
//     for a cell that has one (MeanField, Experts); there is no warm start
//     from an earlier batch's fixed point.
//   - A Layer is not safe for concurrent use.
package deq
