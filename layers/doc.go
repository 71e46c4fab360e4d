// Package layers defines implicit cells f(z, x; θ) for deep equilibrium
// models and the stochastic oracles that evaluate them on minibatches of
// their terms.
//
// A Cell declares its Shape, its trainable Params, a Lipschitz bound Gamma
// in z and the norms in which that bound is Proven; Project restores the
// bound after an optimiser step, and Evaluator(n) returns the Evaluator for
// batches of n examples. An Evaluator is a solver.Oracle on the hidden state
// for the input set by SetInput, a solver.FiniteSum (Terms, EvalExact), so
// that every forward solve gets an exact certificate, and it computes the
// vector–Jacobian products VJPHidden (of a sampled map) and VJP (of the
// exact map, adding parameter gradients). A batch is row-major: example b's
// Rows×Hidden state is the b-th block of a []float64.
//
// The cells:
//
//   - Dense: z ↦ σ(zW + xU + b), deterministic.
//   - MeanField: z ↦ xU + b + (1/M) Σ_m v_m σ(w_mᵀz + c_m), whose oracle
//     samples units.
//   - Experts: z ↦ xU + b + (1/M) Σ_m σ(zW_m + c_m), whose oracle samples
//     experts.
//   - Conv: 3×3 convolutions on C×H·W states with optional GroupNorm, one
//     kernel or the average of M; ConvEncoder is its stride-2 encoder.
//   - GraphCell (NewGraphCell): any f(z, x; θ) written as a gorgonia
//     expression, or the average of Terms such expressions; gorgonia gives
//     the derivatives, the user declares the bound.
//   - A cell written by hand in plain Go: any type that implements Cell and
//     Evaluator, with parameters made by NewParam.
//
// σ is ReLU or tanh. Constraint (zero value: ℓ2) sets the norm and bound
// γ̄ that Project enforces; ConstraintFor picks the constraint for a solver
// norm. Dense and Conv can instead train a normalised weight
// (Normalization: WeightNorm, SpectralNorm) and compute their products in
// float32 (Precision). An evaluator that implements JacobianPenalizer
// (Dense's) gives the exact gradient of the Jacobian regularisation term.
//
// A cell from an expression, in a few lines:
//
//	cell, err := layers.NewGraphCell(layers.GraphCellConfig{
//		Shape:  layers.Shape{Hidden: 2, Input: 2},
//		Params: []layers.ParamSpec{{Name: "W", Rows: 2, Cols: 2, Init: []float64{0.3, -0.4, 0.4, 0.3}}},
//		Build: func(_ *G.ExprGraph, z, x *G.Node, p []*G.Node) (*G.Node, error) {
//			zw, err := G.Mul(z, p[0])
//			if err != nil {
//				return nil, err
//			}
//			pre, err := G.Add(zw, x)
//			if err != nil {
//				return nil, err
//			}
//			return G.Tanh(pre)
//		},
//		Gamma: 0.5,
//	})
//
// Cells and evaluators are not safe for concurrent use. A Forker (Dense)
// forks into cells that share its parameters and build their own
// evaluators, which may run on different goroutines at once (see Forker);
// a SplitVJPer evaluator (the float32 Dense cell's) splits its VJP so that
// the products of several such evaluators run at once and only their
// additions into the shared parameter gradients one at a time.
//
// In the repository, docs/deq-layers.md compares the cells and their proven
// bounds, and docs/own-cell.md explains writing a cell (by expression or by
// hand), the batch layout, how the built-in evaluators work, the cells'
// limits, and testing a cell with package deqtest.
package layers
