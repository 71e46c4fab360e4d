package docscheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Compile type-checks the Go source src, a complete file, as the only file
// of a package inside the module rooted at moduleDir, so that it imports
// the module's packages as a user's program would: it writes src to a
// temporary directory under moduleDir and runs `go vet` on it, which
// compiles the package (and its tests, when src is a _test file: one that
// declares a Test, Example or Benchmark function). The directory is
// removed afterwards. The error holds the compiler's messages.
func Compile(ctx context.Context, moduleDir, src string) error {
	if !strings.HasPrefix(strings.TrimSpace(src), "package ") &&
		!strings.HasPrefix(strings.TrimSpace(src), "//") {
		return errors.New("not a complete Go file: it does not start with a package clause")
	}
	dir, err := os.MkdirTemp(moduleDir, ".docscheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	name := "main.go"
	if strings.Contains(src, "func Test") || strings.Contains(src, "func Example") || strings.Contains(src, "func Benchmark") {
		name = "block_test.go"
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "vet", ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
