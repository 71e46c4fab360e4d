// Package problems is a suite of stochastic fixed-point problems x = T(x) with
// known answers, for the tests, benchmarks and command line of package solver.
//
// Every problem is built by New from a Config (name, size, norm, Lipschitz
// constant γ, noise level and seed) and is deterministic given the Config: the
// construction and every oracle evaluation draw from private PCG streams, never
// from a global generator. Each Problem carries
//
//   - an Oracle, a solver.Oracle that also implements solver.Exact, whose
//     Eval(dst, x, Sample{Seed, Size}) averages Size unit samples drawn from the
//     stream Seed (the same Sample at two points reuses the same randomness);
//   - the Norm of the space, the Lipschitz constant Gamma of T in that norm and
//     the strongest oracle Model that holds;
//   - the start point X0, the FixedPoint computed independently of any method
//     (a gonum LU solve for the affine problems, policy iteration for the
//     Markov decision processes) and the noise scale Sigma.
//
// Example (see the package's examples for a complete program):
//
//	p, err := problems.New(problems.Config{Name: "affine", Dim: 20, Seed: 1})
//	res, err := solver.Solve(ctx, p.OracleProblem(), p.X0, nil, solver.VRGHAL{})
//	dist, _ := p.FixedPointError(res.X)
//
// # The problems
//
// List describes them. In short:
//
//   - "affine", "affine-t", "affine-switch": T(x) = Ax + b on R^d with A built
//     so that its induced norm in the requested norm is γ, plus additive noise:
//     Gaussian, Student-t with 2.5 degrees of freedom (finite variance, heavy
//     tails), or Gaussian noise whose sign flips across a hyperplane through
//     the fixed point (unbiased with bounded variance, but not Lipschitz in
//     expectation).
//   - "matrix": X ↦ AXB + C on n×n matrices in a Schatten-p norm, with
//     ‖A‖op‖B‖op = γ and Gaussian noise.
//   - "averaged": random averaged maps τ(x; i) = γ S_i x + b_i, with S_i a
//     signed permutation, i uniform over a finite family; every τ(·; i) is
//     γ-Lipschitz in every ℓp norm.
//   - "shift": the nonexpansive (default γ = 1) map T(x) = γRx + b with R the
//     signed cyclic shift, an isometry of every ℓp norm with a unique fixed
//     point, plus Gaussian noise; Picard iteration does not converge on it.
//   - "mdp": the ℓ∞ Bellman optimality operator on Q-functions of a random
//     discounted Markov decision process, accessed through a generative model;
//     the oracle declares its NoiseBound and, entry by entry, its exact
//     noise variances and almost-sure bounds (solver.CoordinateNoiseBound).
//   - "mdp-large": the same Bellman operator at scale, by default 50 states ×
//     4 actions (200 state–action pairs) with γ = 0.95; one unit
//     sample draws one successor for every state–action pair, Q* comes from
//     policy iteration and the oracle declares what "mdp"'s does.
//
// # Norms and γ
//
// A problem supports the norms in which its γ is known, listed by List and
// Problem.Norms: ℓ2, ℓp (2 < p < ∞) and ℓ∞ for the vector problems except
// the MDP (ℓ∞ only), Schatten-p (and ℓ2 = Frobenius) for "matrix". For
// "affine" in ℓp, 2 < p < ∞, Gamma is the Riesz–Thorin bound on ‖A‖p, an
// upper bound that random signs make loose.
//
// # Limitations
//
// The affine problems store A densely and compute the fixed point with an
// O(d³) LU factorisation, so Dim is capped at 1000 (32 for "matrix", whose
// fixed point solves an n²×n² system, and 500 states for "mdp"). Student-t
// noise sums at most StudentTExactDraws honest draws per coordinate; beyond
// that the sum of the remaining draws is replaced by a Gaussian of equal
// variance, which keeps the mean and variance exact but thins the tails. A
// Problem holds scratch space and is not safe for concurrent use; build one
// per goroutine (construction is deterministic).
//
// The command deq solve runs every method on these problems; see
// docs/solvers-and-certificates.md in the repository.
package problems
