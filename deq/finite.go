package deq

import (
	"fmt"

	"github.com/deqgo/deq/solver"
)

// checkFinite returns nil when v holds no NaN and no ±Inf, and otherwise
// an error wrapping solver.ErrNonFinite that names the first offending
// element as what[i], with its example when v holds the blocks of
// examples > 0 examples.
func checkFinite(what string, v []float64, examples int) error {
	for i, x := range v {
		if x-x == 0 {
			continue
		}
		if examples > 0 && len(v) >= examples {
			per := len(v) / examples
			return fmt.Errorf("deq: %s[%d] = %v (example %d): %w", what, i, x, i/per, solver.ErrNonFinite)
		}
		return fmt.Errorf("deq: %s[%d] = %v: %w", what, i, x, solver.ErrNonFinite)
	}
	return nil
}
