package datasets

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deqgo/deq/solver"
)

// TestNonFinitePixelsRefused: a single NaN or ±Inf pixel is refused by
// every entry point that takes a caller's pixels — Validate, NewBatcher,
// FitNormalizer and Normalizer.Apply — with an error wrapping
// solver.ErrNonFinite that names the image, row and column; Apply also
// refuses non-finite or non-positive statistics and changes nothing then.
func TestNonFinitePixelsRefused(t *testing.T) {
	entries := []struct {
		name string
		run  func(d *Dataset) error
	}{
		{"Validate", func(d *Dataset) error { return d.Validate() }},
		{"NewBatcher", func(d *Dataset) error { _, err := NewBatcher(d, 2, nil); return err }},
		{"FitNormalizer/global", func(d *Dataset) error { _, err := FitNormalizer(d, NormGlobal); return err }},
		{"FitNormalizer/per-pixel", func(d *Dataset) error { _, err := FitNormalizer(d, NormPerPixel); return err }},
		{"Apply", func(d *Dataset) error {
			return (&Normalizer{Mean: []float64{0.5}, Std: []float64{0.25}}).Apply(d)
		}},
	}
	for _, e := range entries {
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			t.Run(fmt.Sprintf("%s/%v", e.name, v), func(t *testing.T) {
				d := tiny(6, 3)
				d.X[4*5+3] = v // image 5, pixel 3: row 1, column 1
				before := append([]float64(nil), d.X...)
				err := e.run(d)
				require.ErrorIs(t, err, solver.ErrNonFinite)
				require.ErrorContains(t, err, fmt.Sprintf("tiny: image 5 holds %v at pixel 3 (row 1, column 1)", v))
				require.Equal(t, fmt.Sprint(before), fmt.Sprint(d.X), "nothing changed")
			})
		}
	}
	for _, tc := range []struct {
		name      string
		mean, std float64
		nonFinite bool
	}{
		{"NaN mean", math.NaN(), 1, true},
		{"Inf std", 0, math.Inf(1), true},
		{"zero std", 0, 0, false},
		{"negative std", 0, -1, false},
	} {
		t.Run("Apply/"+tc.name, func(t *testing.T) {
			d := tiny(6, 3)
			before := append([]float64(nil), d.X...)
			err := (&Normalizer{Mean: []float64{tc.mean}, Std: []float64{tc.std}}).Apply(d)
			require.Error(t, err)
			require.Equal(t, tc.nonFinite, errors.Is(err, solver.ErrNonFinite), err.Error())
			require.Equal(t, before, d.X, "nothing changed")
		})
	}
}
