//go:build !(linux || darwin)

package solver

import "time"

// processCPU returns 0: the process's CPU time is not known on this
// system.
func processCPU() time.Duration { return 0 }
