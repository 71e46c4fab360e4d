// Package blasimpl selects the BLAS implementation behind gonum's blas64
// and blas32 (and, through gorgonia.Use, behind gorgonia) at program start.
//
// A build without tags is pure Go (gonum's own Dgemm and Sgemm). Building with the tag
// netlib (go build -tags netlib, needs cgo and Debian's libopenblas-dev)
// switches to OpenBLAS through gonum.org/v1/netlib; `make bin/deq` does so
// whenever OpenBLAS can be linked. Name reports which one is compiled in, so commands and
// benchmarks can say which one ran.
package blasimpl
