// Package train trains DEQ classifiers: encoder → DEQ layer → readout, on
// image data sets from package datasets.
//
// # Model
//
// A Model standardises its input with statistics of the training set,
// encodes it with a ReLU layer, finds the fixed point z* = f(z*, e; θ) of a
// Lipschitz-constrained cell of package layers (dense, or the stochastic
// meanfield and experts cells, whose injection of the encoder's features is
// computed once per batch and whose average of M terms a stochastic solver
// samples) with a deq.Layer, and classifies z* with a readout (linear, or
// with ModelConfig.ReadoutHidden one hidden ReLU layer) under
// the softmax cross-entropy loss (see ModelConfig). The conv model (ConvCell) encodes
// an image with a stride-2 convolution followed by further stride-1
// convolution blocks (layers.ConvEncoder; ModelConfig.EncoderLayers blocks
// in all, DefaultConvEncoderLayers by default) into a C×⌈H/2⌉×⌈W/2⌉ state
// of the convolutional cell layers.Conv,
// and reads z* out after 2×2 average pooling; its defaults (DefaultsFor)
// are chosen for 28×28 digits, and its cell's matrix products run in
// single precision by default (ModelConfig.Precision: DefaultConvPrecision,
// chosen for speed; double precision where a solver needs the cell's
// proven Lipschitz bound). The other cells compute in double precision
// by default.
//
// NewWithCell trains any other layers.Cell in the dense model: a
// layers.GraphCell or a cell written by hand, deterministic or stochastic,
// which a CellFunc builds for the encoder's and the state's sizes; its
// checkpoints load with LoadWithCell and the same CellFunc
// (ExampleNewWithCell trains a hand-written stochastic cell).
//
// # Training
//
// New builds a Trainer from a Config whose zero fields select documented
// defaults. The Config's choices are typed values — CellKind and Schedule
// of this package, and the library's own datasets.Normalization,
// solver.MethodSpec (an entry of the solver registry), solver.NormSpec,
// layers.Precision, deq.Backward and layers.Activation — whose text forms,
// read by their Parse functions and UnmarshalText, are the names used in
// checkpoints, metrics and on the command line. Each batch's images are first
// rotated and scaled, then translated, at random when Config.Augment asks
// for it (translations by default for the conv cell only, by up to
// DefaultConvShift pixels, rotations and scalings never by default; never
// the test images). Each batch runs a hand-written step on
// gonum BLAS: encoder, deq.Layer.Forward, readout and loss, then their
// gradients in reverse, deq.Layer.Backward (which solves the adjoint fixed
// point in implicit mode, the default of every cell but conv, whose default
// is the one-step Jacobian-free gradient, DefaultConvBackward) in the middle; then it clips the gradient to
// Config.ClipNorm in global norm, applies decoupled weight decay, takes an
// Adam step (Adam.Update over the parameters' slices; its state can be
// saved) with the learning rate of Config.Schedule (cosine by default), and
// projects the cell back onto its Lipschitz bound γ̄. The step's scratch is
// allocated once per batch size: in steady state only the solvers and the
// DEQ layer allocate (their iterates and results). Every solve draws its randomness from seeds derived
// from Config.Seed and its position in the run (deq.Layer.SetSeeds).
//
// BatchMetrics and EpochMetrics record the loss and accuracy, the oracle
// calls, iterations and samples of the forward and adjoint solves, and the
// residual certificates: the largest and mean certified bound on
// ‖f(z) − z‖ and the fraction of batches whose bound met the tolerance.
// After every epoch the test set is evaluated with its own solver budget
// (Config.Eval, by default ten times tighter than the forward tolerance).
// A NaN or ±Inf in an input, a solve, the loss, a gradient or a parameter
// stops training with an error wrapping solver.ErrNonFinite that names the
// epoch and batch; a batch whose solve diverges with finite values is
// skipped without touching the parameters (see Trainer).
//
// # Training aids
//
// Config.Aids and ModelConfig.Normalization add the training aids of the
// DEQ literature to the step, each off at its zero value (see the deq
// package's "Training aids" for the library calls):
//
//   - Jacobian regularisation, from "Stabilizing Equilibrium Models by
//     Jacobian Regularization" by Shaojie Bai, Vladlen Koltun and J. Zico
//     Kolter (ICML 2021): AidsConfig.JacWeight w adds w·R to the loss every
//     AidsConfig.JacFreq-th step, R the one-probe Hutchinson estimate of the
//     mean over examples of ‖∂f/∂z‖_F² at z*. Its gradient is exact for the
//     probe: through the parameters and the encoder directly, and through
//     z* by adding w·∂R/∂z* to the cotangent of the backward pass (the
//     reference implementation detaches z*; here the whole loss is
//     differentiated). Metric EpochMetrics.JacFrobMean. Dense cells only.
//   - Fixed-point correction, from "Deep Equilibrium Optical Flow
//     Estimation" by Shaojie Bai, Zhengyang Geng, Yash Savani and J. Zico
//     Kolter (CVPR 2022): with K = AidsConfig.CorrectionStates the loss is
//     CE(z*) + Σ_k w̄_k CE(f(z_k, x)) over the K collected states z_k of the
//     forward trajectory (the last z*), w̄_k = γ^(K−1−k)/Σ_j γ^(K−1−j), so
//     that the correction terms are a weighted mean of losses on the scale
//     of the main one; each state is held constant (one-step gradient).
//     Metric EpochMetrics.CorrectionLoss. Every forward method of the
//     registry records its iterates; one that did not would be refused
//     naming the field.
//   - DEQ dropout (AidsConfig.Dropout): one mask per training batch, drawn
//     from the batch's forward seed (so redrawn every batch and restored
//     exactly on resume), fixed across the solver's iterations; the
//     evaluation layer is switched to evaluation and applies none. A fixed
//     mask makes the map deterministic with its own fixed point, unlike a
//     stochastic cell's sampled oracle, which redraws its terms at every
//     call and whose fixed point is the exact operator's. The mask scales
//     γ̄ by 1/(1 − p): GHAL and VR-GHAL are refused in training when that
//     exceeds one.
//   - Weight normalisation in place of the projection (ModelConfig
//     .Normalization, dense and conv cells): only layers.Projection and
//     layers.SpectralNorm prove a bound γ̄; under layers.WeightNorm the
//     cell's Gamma is +Inf, the certificates still bound the residuals but
//     no contraction is proven, and GHAL and VR-GHAL, whose schedule needs
//     γ̄, are refused naming the field (Broyden, Anderson and the other
//     deterministic solvers run).
//
// After every epoch the spectral radius and norm of ∂f/∂z at the fixed
// points of the first SpectralBatch test images (Model.Spectral: Arnoldi
// and power iteration) enter the metrics beside the cell's declared γ̄.
//
// # Checkpoints
//
// With Options.Checkpoint, Run writes a checkpoint after every epoch and
// when its context is done (between batches). A checkpoint holds the
// configuration, the position in the run, the partial epoch's accumulated
// metrics, the history of epoch metrics, the model's parameters and input
// statistics, Adam's moments and the cell's projection state, and a digest
// of the data; it is written atomically (temporary file, fsync, rename) in a
// versioned format with a SHA-256 checksum (see Save and Load), with
// Options.Source, how the data sets were opened (DataSource). Resume
// continues a checkpoint exactly: the resumed run's parameters, metrics and
// final checkpoint bytes are those of an uninterrupted run, bit for bit.
// Raising Checkpoint.Config.Epochs before Checkpoint.Resume extends a run,
// finished or not; the learning-rate schedule is then re-planned over the
// new total from the checkpoint's position on (the rate of every later
// batch is the one a run planned for the new total gives at that
// position), so the continuation is deterministic and an extended run
// resumes exactly too. Load refuses
// truncated, corrupted and other-version files with errors wrapping
// ErrTruncated, ErrChecksum, ErrVersion, ErrNotCheckpoint or ErrCorrupt.
//
// # Reproducibility
//
// The same Config and data give the same metrics and checkpoint bytes on
// the same build and machine. Exceptions: wall times (EpochMetrics'
// seconds, never saved in checkpoints), the BLAS implementation (pure Go or
// OpenBLAS round differently) and the CPU architecture (which may fuse
// multiply–adds).
//
// # Limitations
//
//   - Hidden states are vectors (Rows = 1), where Schatten norms coincide
//     with ℓ2, except for the conv model's C×(H'·W') states. The conv cell
//     proves its Lipschitz bound only in ℓ2 (Schatten-2), only without
//     GroupNorm (Model.Groups negative; GroupNorm is the conv default,
//     worth about three points of accuracy on digits) and only with
//     float64 products (the default only where a solver needs the bound;
//     see ModelConfig.Precision); otherwise the deterministic solvers
//     still run, Model.Proven reports false, and the stochastic solvers
//     are refused.
//   - Training batches have a fixed size, so the last partial batch of each
//     epoch is dropped (a different one each epoch, as the shuffle
//     changes).
//   - gorgonia's own AdamSolver cannot be checkpointed or scheduled, so Adam
//     reimplements it (bit for bit, TestAdamMatchesGorgonia).
//   - VR-GHAL, the variance-reduced gradual Halpern method of "Solving
//     Stochastic Fixed-Point Equations with High Probability" by Jelena
//     Diakonikolas, is expensive on the stochastic cells with the paper's
//     constants: its sample sizes grow at least as 1/Tol² and with the
//     number of iterations, so a forward solve of a meanfield or experts cell
//     draws many more unit samples than a deterministic method needs
//     evaluations of the exact operator at the same tolerance. SolverConfig.SampleScale
//     scales the paper's sample sizes down, giving up the paper's
//     guarantee for the run (the certificate still checks each result). On
//     the dense cell, whose oracle is deterministic, each VR-GHAL estimate
//     is one evaluation.
//   - The adjoint tolerance is relative (BackwardConfig.Solver) and the
//     adjoint solve is not certified.
//   - A process killed while saving may leave a temporary file
//     ".NAME.tmp-*" next to the checkpoint; it is never read.
package train
