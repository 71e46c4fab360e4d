//go:build !netlib

package blasimpl

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// Name is the BLAS implementation compiled in: "gonum" (pure Go) or
// "openblas".
const Name = "gonum"

// Implementation returns the Float64 BLAS to install with Use.
func Implementation() blas.Float64 { return blas64.Implementation() }

// Implementation32 returns the Float32 BLAS to install with Use.
func Implementation32() blas.Float32 { return blas32.Implementation() }

// Use installs the compiled-in implementation into gonum's blas64 and
// blas32 and into gorgonia. Call it once, from main, before any concurrent
// work; the pure-Go build leaves all three at their default, gonum's
// pure-Go implementation.
func Use() string { return Name }
