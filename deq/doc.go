// Package deq joins an implicit cell to a forward fixed-point solver and a
// backward mode to form a deep equilibrium (DEQ) layer.
package deq
