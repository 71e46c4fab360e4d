// Package mru is a small most-recently-used cache for per-shape state (graphs,
// evaluators, norms) that the library's packages keep for the last few batch
// sizes or minibatch sizes they saw. It is internal: its names are not part of
// the module's API.
package mru
