package main

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deqgo/deq/cmd/deq/internal/docscheck"
)

// moduleRoot is the module's directory, seen from this package's.
const moduleRoot = "../.."

// docPages returns the module's Markdown pages: README.md, CHANGELOG.md,
// BENCHMARKS.md (those that exist) and every page under docs/, with their
// paths relative to this package.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	pages := map[string]string{}
	for _, name := range []string{"README.md", "CHANGELOG.md", "BENCHMARKS.md"} {
		b, err := os.ReadFile(filepath.Join(moduleRoot, name))
		if err == nil {
			pages[filepath.Join(moduleRoot, name)] = string(b)
		}
	}
	err := filepath.WalkDir(filepath.Join(moduleRoot, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			pages[path] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// userPages returns README.md and the pages under docs/: the pages whose
// command lines and code a user copies.
func userPages(t *testing.T) map[string]string {
	pages := docPages(t)
	for path := range pages {
		if base := filepath.Base(path); filepath.Dir(path) == moduleRoot && base != "README.md" {
			delete(pages, path)
		}
	}
	return pages
}

// TestDocsWording fails when README.md, CHANGELOG.md, BENCHMARKS.md, a page
// under docs/ or a comment of any Go file of the module speaks of how the
// code was developed (docscheck.Patterns) instead of what it does.
func TestDocsWording(t *testing.T) {
	for path, text := range docPages(t) {
		for _, f := range docscheck.ProcessWording(text) {
			t.Errorf("%s:%d: %s: %q", path, f.Line, f.Pattern, f.Text)
		}
	}
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != moduleRoot && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		cs, err := docscheck.GoComments(src)
		if err != nil {
			t.Errorf("%s: %v", path, err)
		}
		for _, c := range cs {
			for _, f := range docscheck.ProcessWording(c.Text) {
				t.Errorf("%s:%d: %s: %q", path, c.Line+f.Line-1, f.Pattern, f.Text)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDocsCommands fails when a deq command line of README.md or a page
// under docs/ names a subcommand or a flag the command does not have.
func TestDocsCommands(t *testing.T) {
	root := newRootCmd(io.Discard, io.Discard)
	n := 0
	for path, text := range userPages(t) {
		for _, c := range docscheck.CommandLines(text) {
			n++
			if err := docscheck.CheckCommand(root, c.Text); err != nil {
				t.Errorf("%s:%d: %v", path, c.Line, err)
			}
		}
	}
	if n == 0 {
		t.Error("README.md and docs/ hold no deq command line")
	}
}

// TestDocsGoBlocks fails when a ```go block of README.md or of a page under
// docs/ that is a complete file (starts with a package clause) does not
// compile against the module; every block of README.md must be complete.
func TestDocsGoBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles each block with the go command")
	}
	root, err := filepath.Abs(moduleRoot)
	if err != nil {
		t.Fatal(err)
	}
	for path, text := range userPages(t) {
		for _, b := range docscheck.GoBlocks(text) {
			complete := strings.HasPrefix(strings.TrimSpace(b.Text), "package ")
			if !complete {
				if filepath.Base(path) == "README.md" {
					t.Errorf("%s:%d: Go block is not a complete program (no package clause)", path, b.Line)
				}
				continue
			}
			if err := docscheck.Compile(context.Background(), root, b.Text); err != nil {
				t.Errorf("%s:%d: Go block does not compile: %v", path, b.Line, err)
			}
		}
	}
}

// TestDocsLinks fails when a relative link of README.md, CHANGELOG.md,
// BENCHMARKS.md or a page under docs/ points to no file of the repository.
func TestDocsLinks(t *testing.T) {
	for path, text := range docPages(t) {
		if err := docscheck.CheckLinks(path, text); err != nil {
			t.Error(err)
		}
	}
}

// TestDocsConflictMarkers fails on a merge-conflict marker left in
// README.md, CHANGELOG.md, BENCHMARKS.md or a page under docs/ (Go files
// with one do not compile).
func TestDocsConflictMarkers(t *testing.T) {
	for path, text := range docPages(t) {
		for _, line := range docscheck.ConflictMarkers(text) {
			t.Errorf("%s:%d: merge-conflict marker", path, line)
		}
	}
}

// readmeMaxLines is the length README.md keeps to: a front page, with the
// rest under docs/.
const readmeMaxLines = 250

// TestReadmeLength fails when README.md grows past readmeMaxLines.
func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(moduleRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page under docs/", n, readmeMaxLines)
	}
}
