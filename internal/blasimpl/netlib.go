//go:build netlib

package blasimpl

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// #cgo LDFLAGS: -lopenblas
import "C"

// Name is the BLAS implementation compiled in: "gonum" (pure Go) or
// "openblas".
const Name = "openblas"

// Implementation returns the Float64 BLAS to install with Use.
func Implementation() blas.Float64 { return netlib.Implementation{} }

// Use installs OpenBLAS into gonum's blas64 and into gorgonia (whose graphs
// compute the cells' vector–Jacobian products). Call it once, from main,
// before any concurrent work: both packages keep the implementation in a
// package variable.
func Use() string {
	blas64.Use(netlib.Implementation{})
	G.Use(netlib.Implementation{})
	return Name
}
