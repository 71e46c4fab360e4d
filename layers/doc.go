// Package layers defines implicit cells f(z, x; θ) for deep equilibrium
// models and the stochastic oracles that evaluate them on minibatches of
// their terms.
//
// # Layout
//
// A batch of n examples is a row-major matrix: example b's hidden state, a
// Rows×Hidden matrix (Rows = 1 for vectors), occupies
// [b·Rows·Hidden, (b+1)·Rows·Hidden) of a []float64, and likewise its input.
// solver.Batched norms then apply per example: ℓp entrywise, or Schatten-p
// on the Rows×Hidden matrix. Every cell maps each row of the state with the
// same weights, so a batch is also an (n·Rows)×Hidden matrix.
//
// # Cells
//
//   - Dense: z ↦ σ(zW + xU + b), deterministic.
//   - MeanField: z ↦ xU + b + (1/M) Σ_m v_m σ(w_mᵀz + c_m), the injection
//     xU + b computed once per batch and only the z-dependent average
//     sampled, with mean-field scaling (each unit O(1) whatever M); its
//     oracle samples units (LipschitzInExpectation, the mean-square
//     constant projected to γ̄).
//   - Experts: z ↦ xU + b + (1/M) Σ_m σ(zW_m + c_m), a mixture of M dense
//     experts each projected to γ̄ (SamplewiseLipschitz).
//   - Conv: z ↦ (1/M) Σ_m N(σ(W_m∗z + u + b_m)) on C×H·W states (Rows = C
//     channels, Hidden = H·W pixels), 3×3 convolutions with padding 1,
//     u = x or U∗x, an optional GroupNorm N; deterministic for M = 1, its
//     oracle samples kernels otherwise. Its projection uses power iteration
//     on the convolution operator and, every CertifyEvery projections, the
//     Fourier upper bound; the bound is proven in ℓ2 and Schatten-2 only,
//     and not at all with GroupNorm. ConvEncoder is its stride-2 input
//     encoder.
//   - GraphCell: any f(z, x; θ) the user writes as a gorgonia expression
//     (GraphCellConfig.Build), deterministic, or the average of Terms such
//     expressions, each of its own parameters, whose oracle samples terms;
//     see below.
//   - A cell written by hand: any type that implements Cell and Evaluator
//     in plain Go, with parameters made by NewParam; see below.
//
// Every cell is a finite sum of its terms: its evaluators implement
// solver.FiniteSum (Terms and EvalExact), so a solver certifies a forward
// solve on any cell with one exact evaluation. The built-in cells'
// vector–Jacobian products are hand-written gonum BLAS code, allocation
// free per call; their gorgonia graphs remain as the tests' reference
// (GraphEvaluator's EvalGraph, which deqtest compares with EvalExact) and
// run a GraphCell. The stochastic cells MeanField and
// Experts sample only what must be sampled: the input enters through an
// injection outside the average, and only the z-dependence is
// constrained.
//
// σ is ReLU or tanh. Each cell's Project rescales its weights after an
// optimiser step so that the cell is γ̄-Lipschitz in z in a chosen ℓp norm
// (Constraint, whose zero value is ℓ2; ConstraintFor picks the constraint
// for a solver norm); Proven says in which norms the bound is a theorem. Where it
// is not (elementwise activations under Schatten-p, p ≠ 2, on matrix
// states), LipschitzMonitor measures empirical ratios along a solve.
//
// A Dense cell can instead train a reparameterised weight
// (DenseConfig.Normalization): WeightNorm, the per-unit weight
// normalisation of Salimans and Kingma with learnable norms, which proves
// no bound, or SpectralNorm, W = V·γ̄/max(σ_max(V), γ̄) with the exact
// σ_max, which proves γ̄ in ℓ2 as the projection does while its gradient
// sees the normalisation. A Conv cell offers the weight normalisation too
// (ConvConfig.Normalization = WeightNorm), per output channel as TorchDEQ
// applies it to its convolutional cells; it proves no bound either.
//
// Dense and Conv cells can compute their matrix products in single
// precision (DenseConfig.Precision, ConvConfig.Precision = Float32) through
// gonum's blas32, with everything else in float64: a different map, within
// float32 rounding of the default one (see Precision).
//
// # Jacobian regularisation
//
// An evaluator that implements JacobianPenalizer (Dense's) gives the exact
// gradient of ‖(∂f/∂z)ᵀv‖², the Hutchinson term of the Jacobian
// regularisation of Bai, Koltun and Kolter, as fused double-backward code;
// package deq's JacobianRegularize uses it.
//
// # Evaluation
//
// Cell.Evaluator(n) returns an Evaluator for batches of n examples, cached
// per batch size. It is a solver.Oracle (and solver.Exact) on the hidden
// state for the input set by SetInput: Eval draws term indices with
// math/rand/v2's PCG seeded by Sample.Seed, so the same Sample at two points
// uses the same terms. It rounds the sample size up to a power of two (and
// reports the samples it used), and a size that rounds up to M or more is
// the exact average (M samples reported). Forward evaluations run on an
// allocation-free gonum path (input terms xU + b are computed once per
// SetInput); the gorgonia graph of the same expression (EvalGraph) is
// checked against it.
//
// VJPHidden gives (∂τ/∂z)ᵀg for an exact or minibatch estimate τ (the same
// terms as Eval for the same Sample), VJP the exact (∂f/∂z)ᵀg, (∂f/∂x)ᵀg
// and the parameter gradients. For the built-in cells both are fused:
// hand-written gonum BLAS code (blas64.Gemm) that recomputes the
// pre-activations at z from the input terms SetInput cached, multiplies
// the cotangent by σ′ and forms the transposed products and the parameter
// gradients, with scratch held by the evaluator, so that after the first
// call for a batch size they allocate nothing (beyond what gonum's matrix
// multiply allocates for its goroutines on large products). Dense keeps
// σ′ between calls while z and W are unchanged, bit for bit, and SetInput
// is not called, as in an adjoint solve at a fixed point. The gorgonia
// graphs of the same VJPs, built once per batch size (and, for sampled
// hidden-state VJPs, once per power-of-two minibatch size, so at most
// ⌈log₂M⌉ + 1 of them, whose number of nodes does not depend on M or the
// minibatch size), are the reference the tests check the fused code
// against.
//
// # Cells from gorgonia expressions
//
// NewGraphCell makes a cell of any differentiable f(z, x; θ) written as a
// gorgonia expression: the user declares the shapes and parameters and
// builds the output node from the state, input and parameter nodes, and
// gorgonia's symbolic differentiation gives the VJPs and the parameter
// gradients, so any such cell can be a DEQ without hand-written
// derivatives. Its graphs are built once per batch size and cached; every
// evaluation runs them. The Lipschitz story is the user's: GraphCellConfig
// declares γ̄, in which norms it is proven (by default none, and deq then
// monitors empirical ratios) and an optional Project hook. With
// GraphCellConfig.Terms = M > 1, Build gives one term, f is the average of
// M of them (each with its own blocks of the PerTerm parameters), and the
// oracle samples terms as the built-in stochastic cells do, under the
// Model the configuration declares (solver.BoundedVariance by default).
//
// # Cells written by hand
//
// A cell needs no gorgonia: a type that implements Cell, whose evaluators
// implement Evaluator with plain Go code, and whose parameters NewParam
// makes, is a DEQ cell that package deq solves and differentiates, that
// deqtest checks and that train trains (train.NewWithCell). A stochastic
// one samples terms from Sample.Seed so that the same Sample draws the same
// terms in Eval and VJPHidden, and reports its Model; its Proven then claims
// the bound for each unit sample in the sense of that Model. The package
// train's ExampleNewWithCell holds a complete one.
//
// # Parameters
//
// Param holds a parameter's value and gradient in two plain float64 slices
// (Data, GradData); NewParam makes one. Its gorgonia tensors, views of the
// same slices made on first use, are what every graph binds, and it
// implements gorgonia.ValueGrad, so gorgonia's solvers update it in place.
// Call Project after each update.
//
// # Limitations
//
//   - Each gorgonia run (EvalGraph, a GraphCell's evaluations) allocates its
//     intermediate tensors, a few tensors the size of the batch's states,
//     inputs and parameters; the gonum forward path and the fused VJPs
//     allocate only the few small objects that gonum's parallel matrix
//     multiply allocates internally on large batches.
//   - The ℓp constraint for 2 < p < ∞ uses the Riesz–Thorin bound, which can
//     be loose; the ℓ2 constraint's bound is exact only on the calls that run
//     the exact check (every call by default).
//   - The MeanField cell's individual units need not be contractive: only the
//     exact operator and the mean-square Lipschitz constant L are bounded.
//   - Cells and evaluators are not safe for concurrent use.
package layers
