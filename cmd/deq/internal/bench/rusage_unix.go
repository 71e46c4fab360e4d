//go:build linux || darwin

package bench

import (
	"runtime"
	"syscall"
)

// maxRSS returns the peak resident set size of the process in bytes, from
// getrusage(2), or 0 if it fails.
func maxRSS() uint64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil || ru.Maxrss < 0 {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return uint64(ru.Maxrss) // bytes on macOS
	}
	return uint64(ru.Maxrss) * 1024 // kilobytes on Linux
}
