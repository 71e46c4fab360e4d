package solver

import "fmt"

// checkFinite returns nil when v holds no NaN and no ±Inf, and otherwise
// an error wrapping ErrNonFinite that names the first offending element
// as what[i].
func checkFinite(what string, v []float64) error {
	if i := firstNonFinite(v); i >= 0 {
		return fmt.Errorf("%s[%d] = %v: %w", what, i, v[i], ErrNonFinite)
	}
	return nil
}

// nonFiniteStop returns the error that stops a method with Status Diverged
// on a non-finite value: it wraps ErrNonFinite after the description
// format, args.
func nonFiniteStop(format string, args ...any) error {
	return &stopError{status: Diverged, cause: fmt.Errorf(format+": %w", append(args, ErrNonFinite)...)}
}
