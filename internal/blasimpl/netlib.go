//go:build netlib

package blasimpl

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

// #cgo LDFLAGS: -lopenblas
import "C"

// Name is the BLAS implementation compiled in: "gonum" (pure Go) or
// "openblas".
const Name = "openblas"

// Implementation returns the Float64 BLAS to install with Use.
func Implementation() blas.Float64 { return netlib.Implementation{} }

// Use installs OpenBLAS into gonum's blas64. Call it once, from main, before
// any concurrent work.
func Use() string {
	blas64.Use(netlib.Implementation{})
	return Name
}
