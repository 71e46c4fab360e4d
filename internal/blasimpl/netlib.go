//go:build netlib

package blasimpl

import (
	"os"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
// int openblas_get_num_threads(void);
import "C"

// Name is the BLAS implementation compiled in: "gonum" (pure Go) or
// "openblas".
const Name = "openblas"

// threadVars are the environment variables from which OpenBLAS takes its
// number of threads, in its order of precedence.
var threadVars = [...]string{"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"}

// Implementation returns the Float64 BLAS to install with Use.
func Implementation() blas.Float64 { return netlib.Implementation{} }

// Implementation32 returns the Float32 BLAS to install with Use.
func Implementation32() blas.Float32 { return netlib.Implementation{} }

// Use installs OpenBLAS into gonum's blas64 and blas32 (the single-precision
// products of the cells' Float32 precision) and into gorgonia (whose graphs
// compute the cells' vector–Jacobian products). Call it once, from main,
// before any concurrent work: both packages keep the implementation in a
// package variable.
//
// Unless the environment sets OpenBLAS's number of threads
// (OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS), Use sets it
// to one. The products of DEQ training are small (a batch of 128 against
// 784×128 or 128×128 weights): on two idle cores a dense training epoch
// takes no longer on one OpenBLAS thread than on two, and on busy cores it
// is much faster, because OpenBLAS's idle worker threads spin and take CPU
// time from the Go threads (measured with the training section of deq
// bench).
func Use() string {
	blas64.Use(netlib.Implementation{})
	blas32.Use(netlib.Implementation{})
	G.Use(netlib.Implementation{})
	if !threadsFromEnv() {
		C.openblas_set_num_threads(1)
	}
	return Name
}

// threadsFromEnv reports whether the environment sets OpenBLAS's number of
// threads.
func threadsFromEnv() bool {
	for _, v := range threadVars {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// threads returns the number of threads OpenBLAS uses.
func threads() int { return int(C.openblas_get_num_threads()) }
