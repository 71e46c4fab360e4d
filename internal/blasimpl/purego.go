//go:build !netlib

package blasimpl

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Name is the BLAS implementation compiled in: "gonum" (pure Go) or
// "openblas".
const Name = "gonum"

// Implementation returns the Float64 BLAS to install with Use.
func Implementation() blas.Float64 { return blas64.Implementation() }

// Use installs the compiled-in implementation into gonum's blas64 and into
// gorgonia. Call it once, from main, before any concurrent work; the pure-Go
// build leaves both at their default, gonum's pure-Go implementation.
func Use() string { return Name }
