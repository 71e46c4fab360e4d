// Package blasimpl selects the BLAS implementation behind gonum (and, through
// gorgonia.Use, behind gorgonia) at program start.
//
// The default build is pure Go (gonum's own Dgemm, about 8–10 GFLOP/s on two
// cores). Building with the tag netlib (go build -tags netlib, needs cgo and
// Debian's libopenblas-dev) switches to OpenBLAS through
// gonum.org/v1/netlib. Name reports which one is compiled in, so commands and
// benchmarks can say which one ran.
package blasimpl
