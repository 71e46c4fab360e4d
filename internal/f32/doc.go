// Package f32 holds the single-precision helpers of the packages whose
// matrix products can run in float32 on float64 data (the Dense cell of
// package layers, the dense model's encoder and readout in package train):
// float32 copies of float64 parameters refreshed when they change, rounding
// into and widening out of float32 scratch space, and one Sgemm call on
// whole row-major matrices through gonum's blas32 (OpenBLAS under the
// netlib build tag, gonum's own Sgemm otherwise).
// It is internal: its names are not part of the module's API.
package f32
