//go:build !unix

package cputime

import "time"

// Supported reports whether Process reads the processor time on this
// platform.
const Supported = false

// Process returns zero: the processor time is not read on this platform.
func Process() time.Duration { return 0 }
