//go:build linux || darwin

package solver

import (
	"syscall"
	"time"
)

// processCPU returns the user and system CPU time of the process so far,
// from getrusage(2), or 0 if it fails.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
