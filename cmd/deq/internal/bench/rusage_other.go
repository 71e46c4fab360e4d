//go:build !(linux || darwin)

package bench

// maxRSS returns 0: the peak resident set size is not known on this system.
func maxRSS() uint64 { return 0 }
