package solver

// Halpern is Halpern's anchored iteration (Halpern 1967)
//
//	x_{k+1} = λ_k x_0 + (1 − λ_k) T(x_k),  λ_k = 1/(k + 2).
//
// For a nonexpansive T with a fixed point in a Hilbert space (the ℓ2 norm,
// or Schatten-2) this schedule gives the tight rate
// ‖x_k − T(x_k)‖ ≤ 2‖x_0 − x_*‖/(k + 1) for every fixed point x_* (Lieder
// 2021). It needs a deterministic oracle and makes one evaluation per
// iteration.
//
// Limitations: the anchor term λ_k x_0 keeps the rate at O(1/k) even for
// contractions, so Halpern is the wrong choice for reaching tight tolerances
// on contractive problems (use GHAL with Gamma set, Picard or Anderson). In
// norms other than Hilbert norms the constant 2 above is not guaranteed;
// see Contreras and Cominetti (2023) for the normed-space theory.
type Halpern struct{}

var (
	_ Method    = Halpern{}
	_ Validator = Halpern{}
)

// String implements Method.
func (Halpern) String() string { return "halpern" }

// Validate implements Validator; it reports a stochastic oracle.
func (Halpern) Validate(p Problem) error { return requireDeterministic("Halpern", p) }

// Run implements Method. Iteration k evaluates T(x_k) once and records x_k
// with its exact residual.
func (Halpern) Run(e *Env) error {
	x0 := e.X0()
	x := append([]float64(nil), x0...)
	tx := make([]float64, len(x))
	for k := 0; ; k++ {
		if err := e.Eval(tx, x, Sample{Size: 1}); err != nil {
			return err
		}
		if err := e.Record(x, e.Dist(tx, x)); err != nil {
			return err
		}
		lam := 1 / float64(k+2)
		for i, t := range tx {
			x[i] = lam*x0[i] + (1-lam)*t
		}
	}
}
