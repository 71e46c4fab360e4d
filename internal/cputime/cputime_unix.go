//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Supported reports whether Process reads the processor time on this
// platform.
const Supported = true

// Process returns the user and system time used by the process so far,
// all threads included (getrusage with RUSAGE_SELF), or zero if it cannot
// be read.
func Process() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
