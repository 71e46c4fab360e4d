// Package deq joins an implicit cell to a forward fixed-point solver and a
// backward mode to form a deep equilibrium (DEQ) layer.
//
// A Layer, built by New from a layers.Cell and Settings, maps an input batch
// x to the fixed point z* = f(z*, x; θ) of the cell. The forward solve is any
// solver.Method (Picard by default; Broyden, Anderson, GHAL, VR-GHAL and the
// others by setting Settings.Forward): a deterministic method sees the cell's
// exact map, a stochastic one its minibatch oracle (Settings.ForwardOracle).
// Forward returns a Solution holding z* and the solver's Result: status,
// statistics and a residual certificate in the per-example norm
// Settings.Norm (ℓ2 when nil). Each solve starts from z = 0, or from the
// injection xU + b for a cell that has one.
//
// Backward takes ∂L/∂z*, writes ∂L/∂x into dx and adds ∂L/∂θ to the cell's
// parameter gradients, in one of three modes: Implicit (the default) solves
// the adjoint fixed point g = J_f(z*)ᵀg + ∂L/∂z* with its own solver and
// certificate; JacobianFree takes g = ∂L/∂z*; Phantom backpropagates
// through a few damped steps from z*. No graph is unrolled, so memory does
// not grow with the solver's iterations.
//
//	layer, err := deq.New(cell, &deq.Settings{Forward: solver.Anderson{},
//		ForwardSettings: solver.Settings{Tol: 1e-3}})
//	sol, err := layer.Forward(ctx, x)          // sol.Z, sol.Result.Certificate
//	st, err := layer.Backward(ctx, sol, gz, dx) // gradients into cell.Params()
//
// Apply inserts a Layer into a gorgonia graph as an op whose symbolic
// derivative runs Backward, so that encoder → DEQ → readout is one graph
// trained with gorgonia.Grad (see Example_training); call the cell's
// Project after every optimiser step. The training aids of the DEQ
// literature are library calls a training loop composes per batch:
// JacobianRegularize, CorrectionForward and CorrectionBackward (with
// Settings.CorrectionStates), Settings.Dropout, and the spectral
// measurements SpectralRadius, SpectralNorm and JacobianFrobenius.
//
// A NaN or ±Inf is never passed on silently: Forward, Backward, the methods
// that take a Solution and the Jacobian measurements return an error
// wrapping solver.ErrNonFinite, naming the coordinate and example, when
// their input is not finite or the cell returns a non-finite value (a solve
// then has Status Diverged and no certificate with a NaN bound).
//
// Settings.Split solves a batch as concurrent parts of its examples, on
// forks of the cell (layers.Forker), and merges their results: the
// certificate of a Batched norm bounds the whole batch's residual by the
// largest of the parts' bounds.
//
// The zero value of every Settings field is its documented default. The
// modes (Backward, OracleMode, Monitor) are typed values; ParseBackward,
// ParseOracleMode and ParseMonitor and their text marshalling convert them
// at the flag and JSON boundary. A Layer is not safe for concurrent use.
//
// In the repository, docs/deq-layers.md describes the cells, the backward
// modes, the certified adjoint and the training aids (with a training step
// that uses every aid); docs/own-cell.md shows how to write and test a cell.
package deq
