package check

import (
	"fmt"
	"math"
)

// NotNegative returns the error "<field> = <v> must not be negative" if v
// is negative, and nil otherwise. field carries the package's prefix, as in
// "solver: Settings.MaxIter".
func NotNegative[T ~int | ~int64 | ~float64](field string, v T) error {
	if v < 0 {
		return fmt.Errorf("%s = %v must not be negative", field, v)
	}
	return nil
}

// PositiveFinite returns the error "<field> = <v> must be positive and
// finite" if v is negative, NaN or infinite, and nil otherwise: zero is
// accepted, as the value that selects a setting's default.
func PositiveFinite(field string, v float64) error {
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%s = %v must be positive and finite", field, v)
	}
	return nil
}
