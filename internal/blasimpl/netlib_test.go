//go:build netlib

package blasimpl

import "testing"

// TestUseOneThread: without a thread count in the environment, Use leaves
// OpenBLAS on one thread.
func TestUseOneThread(t *testing.T) {
	if threadsFromEnv() {
		t.Skip("the environment sets OpenBLAS's threads")
	}
	Use()
	if n := threads(); n != 1 {
		t.Errorf("OpenBLAS runs %d threads after Use, want 1", n)
	}
}
