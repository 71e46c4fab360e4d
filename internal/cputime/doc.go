// Package cputime reads the processor time the process has used, all its
// threads together (the Go runtime's and those of a C library such as
// OpenBLAS), so that a phase's processor time over its wall time tells how
// many cores it kept busy.
// It is internal: its names are not part of the module's API.
package cputime
