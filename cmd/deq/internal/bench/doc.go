// Package bench measures the project's solvers and cells: the samples the
// stochastic fixed-point methods need to reach a true residual ε, VR-GHAL's
// own overhead against its oracle time, the throughput of DEQ cell
// evaluations against plain matrix multiplies, the function evaluations
// the deterministic solvers need on a trained DEQ, and the arithmetic
// throughput and memory of training epochs. Run returns a report.Report;
// package report (cmd/deq/internal/bench/report), which this package imports and
// which imports nothing of it, judges the performance targets and writes
// the JSON, PNG plots and Markdown report. The command `deq bench` is a
// thin wrapper around Run and report.Write. It is internal: its names are
// not part of the module's API.
//
// # Stochastic section
//
// Five problems: an ℓ∞ Bellman operator of a random MDP (problems "mdp"), an
// affine map with heavy-tailed Student-t noise ("affine-t"), an average of
// samplewise-nonexpansive maps ("averaged", γ = 1), the nonexpansive signed
// cyclic shift ("shift", γ = 1) and a layers.Experts DEQ cell with random,
// untrained weights on a random input batch ("deq-experts"). On each, VR-GHAL
// runs under every oracle model the problem supports (bounded-variance,
// lipschitz-expectation, samplewise-lipschitz), against minibatch stochastic
// Krasnoselskii–Mann, stochastic Halpern with growing minibatches and PAGE
// Halpern.
//
// The count for an accuracy ε is the number of unit samples drawn when a
// method first records a point whose true residual ‖T(x) − x‖, measured with
// the exact operator through a solver.PointRecorder, is at most ε. It is the
// smallest sample budget under which the method would return a point of
// residual ε, except that budgets are checked against requested minibatch
// sizes, which a finite-sum oracle may cap. The methods' own stopping rules
// are disabled; runs stop at their target or at a sample budget, and
// methods that do not reach ε are reported as such, never dropped.
//
// Every problem is rescaled by the change of units x ↦ c·x so that its noise
// level σ√κ equals Config.NoiseLevel; σ² is estimated from unit samples at x*
// and κ is the norm's smoothness constant. This puts every problem on the
// same information-theoretic floor 2σ²κ ln(1/δ)/ε² and fixes what VR-GHAL's
// absolute initial accuracy ε₀ = 1 means. The baselines' constants (σ²κ, γ²)
// follow the units, so only VR-GHAL depends on the choice.
//
// # Overhead section
//
// VR-GHAL solves the DEQ cell and the averaged problem with its oracle
// wrapped to time every Eval; the overhead is (solve time − oracle time)
// divided by oracle time.
//
// # Throughput section
//
// GFLOP/s of a layers.Dense cell's forward evaluation, oracle call and
// vector–Jacobian products, with FLOPs counted as the matrix products a
// minimal implementation needs, against blas64.Gemm running the same
// products in the same process, with allocations per operation and the
// process's memory. Each operation is a workloadFunc.
//
// # Forward section
//
// A dense DEQ classifier (128 hidden units, 2 epochs of package train on
// Config.Data: Fashion-MNIST when installed) is trained once and cached in
// Config.CacheDir. Picard, Anderson, Broyden, Halpern and GHAL (with the
// cell's Lipschitz bound γ̄) then solve test-set batches from z = 0; a
// solver.Recorder notes the oracle calls and wall time at which each
// method's relative residual ‖f(z) − z‖/‖f(0)‖ first falls to 1e-2, 1e-3
// and 1e-4, and the report gives their medians over batches.
//
// # Training section
//
// package train runs three epochs of a dense DEQ classifier. The FLOPs of
// an epoch are counted from its batches, forward and adjoint oracle calls,
// certificate calls and full VJPs (report.TrainingReport documents the formula):
// the matrix products a minimal implementation needs. Their rate over the
// epoch's training wall time is compared with blas64.Gemm running each of
// the same products, timed alone, in the same process. After each epoch
// the section runs the garbage collector and records the live heap, so
// that growth across epochs shows; the peak HeapInuse of each epoch and
// the process's peak resident set are reported too.
//
// # Limitations
//
//   - The throughput and stochastic sections' DEQ cells have random
//     weights; only the forward and training sections use trained models.
//   - The forward section's residuals are those each method records: for
//     Anderson and Broyden the residual of the point they evaluated, for
//     Halpern and GHAL that of their iterate. Its plot shows the first
//     batch only, and wall times include the solver's own work.
//   - The training section counts no element-wise work and counts an
//     adjoint iteration as one product, though gorgonia's graph also
//     recomputes z·W and W's gradient; its GFLOP/s are those of useful
//     arithmetic, a lower bound on what the BLAS executes.
//   - The problems are small (at most 64 coordinates) so that twenty seeds
//     of every method reach ε = 1e-3 in minutes on two cores; sample counts,
//     not timings, are the subject of the stochastic section.
//   - VR-GHAL runs with Config.SampleScale (0.1 by default), not the paper's
//     constants, which cost ten times more samples.
//   - The σ̂ of a heavy-tailed oracle converges slowly; the problems'
//     own ℓ2 noise scales are reported beside it where known.
//   - Timings depend on the machine and its load; the throughput section
//     takes the best of three repetitions to damp interference.
package bench
