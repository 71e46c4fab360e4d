// Package team splits loops between the calling goroutine and persistent
// helper goroutines, one part per core, without allocating per call: the
// conv cell and encoder, the float32 dense cell, and the dense model's
// encoder and optimiser in package train run their batch-sized work on a
// Team.
package team
