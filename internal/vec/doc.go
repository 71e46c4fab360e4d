// Package vec holds the float64 vector kernels of the solvers' fused
// passes that read several vectors at once: the inner products of four or
// two vectors with one (Dot4, Dot2) and the update of one vector by four
// or two scaled ones (AddScaled4, AddScaled2), each reading the shared
// vector once for all; and the finiteness test of the module's checks
// (AllFinite, behind numeric.AllFinite).
//
// On amd64 processors with AVX2 and FMA they run in assembly, four entries
// per instruction with fused multiply–adds; elsewhere, and with the build
// tag purego, the inner products and updates call gonum's floats and
// AllFinite is a plain loop. The two differ in rounding only: an entry of
// AddScaled4 and AddScaled2 is computed with fused multiply–adds in the
// assembly and with separate products and sums in floats, and Dot4 and
// Dot2 sum their products in another order. AllFinite's answer is the
// same.
package vec
