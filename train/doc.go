// Package train trains DEQ classifiers: encoder → DEQ layer → readout, on
// image data sets from package datasets.
//
// New builds a Trainer from a Config, whose zero fields select documented
// defaults, and the training and test sets; Run trains for Config.Epochs
// epochs and returns a Result with one EpochMetrics per epoch (loss,
// accuracy, the solvers' work and their residual certificates, spectral
// measurements of ∂f/∂z). A Model standardises its input, encodes it, finds
// the fixed point of a Lipschitz-constrained cell of package layers (dense,
// meanfield, experts or conv, chosen by ModelConfig.Cell) with a deq.Layer
// and classifies it with a readout; Model.Predict classifies one image.
// NewWithCell trains any other layers.Cell, such as a layers.GraphCell or a
// cell written by hand.
//
//	data, err := datasets.Open(ctx, datasets.SyntheticName, nil)
//	broyden, err := solver.MethodSpecOf(solver.Broyden{})
//	t, err := train.New(train.Config{
//		Epochs:  3,
//		Forward: train.SolverConfig{Method: broyden, Tol: 1e-3},
//	}, data.Train, data.Test, &train.Options{Checkpoint: "run.ckpt"})
//	res, err := t.Run(ctx)
//
// Each batch runs a hand-written, allocation-free step on gonum BLAS: the
// forward pass, deq.Layer.Backward for the DEQ layer's gradient, gradient
// clipping, decoupled weight decay, an Adam step at the rate of
// Config.Schedule and the cell's projection onto its Lipschitz bound.
// Config.Aids adds the training aids of the DEQ literature (Jacobian
// regularisation, fixed-point correction, DEQ dropout). A NaN or ±Inf in an
// input, a solve, the loss, a gradient or a parameter stops training with an
// error wrapping solver.ErrNonFinite that names the epoch and batch; a batch
// whose solve diverges with finite values is skipped without touching the
// parameters (see Trainer).
//
// With Options.Checkpoint, Run writes a checkpoint after every epoch and
// when its context is done, recording how the data were opened
// (Options.Source); Load reads one and Resume continues it exactly, with the
// parameters, metrics and checkpoint bytes of an uninterrupted run. Raising
// Checkpoint.Config.Epochs before Checkpoint.Resume extends a run. The same
// Config, data and build give the same metrics and checkpoint bytes; only
// wall times, the BLAS implementation and the CPU architecture change them.
//
// The Config's choices are typed values (CellKind and Schedule of this
// package; solver.MethodSpec, solver.NormSpec, deq.Backward,
// layers.Precision, layers.Activation and datasets.Normalization) whose
// text forms, read by their Parse functions and UnmarshalText, are the
// names used in checkpoints, metrics and on the command line. A Trainer is not safe for concurrent use.
//
// In the repository, docs/training.md describes the model, a training step,
// checkpoints and resume, the metrics and the limits; docs/deq-layers.md
// the training aids; docs/cli/deq_train.md the command deq train.
package train
