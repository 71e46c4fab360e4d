package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// updateCLIReference makes TestCLIReference write docs/cli instead of
// comparing it: `go generate ./cmd/deq` runs it so (see doc.go).
var updateCLIReference = flag.Bool("update-cli-reference", false, "write docs/cli from the command tree")

// cliReferenceDir is docs/cli, seen from this package's directory.
var cliReferenceDir = filepath.Join(moduleRoot, "docs", "cli")

// genCLIReference writes the command-line reference of the deq command
// tree to dir with cobra's Markdown generator, one page per command,
// without the generator's dated footer so that the pages depend only on
// the commands.
func genCLIReference(dir string) error {
	root := newRootCmd(io.Discard, io.Discard)
	var noDate func(*cobra.Command)
	noDate = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			noDate(sub)
		}
	}
	noDate(root)
	return doc.GenMarkdownTree(root, dir)
}

// TestCLIReference fails when docs/cli is not what cobra generates from
// the command tree: a flag, subcommand or help text changed without
// `go generate ./cmd/deq`. With -update-cli-reference it rewrites docs/cli.
func TestCLIReference(t *testing.T) {
	if *updateCLIReference {
		if err := os.RemoveAll(cliReferenceDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(cliReferenceDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := genCLIReference(cliReferenceDir); err != nil {
			t.Fatal(err)
		}
		return
	}
	tmp := t.TempDir()
	if err := genCLIReference(tmp); err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Glob(filepath.Join(tmp, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	have, err := filepath.Glob(filepath.Join(cliReferenceDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(have) != len(want) {
		t.Errorf("docs/cli holds %d pages, the command tree gives %d: run go generate ./cmd/deq", len(have), len(want))
	}
	for _, w := range want {
		gen, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(w)
		cur, err := os.ReadFile(filepath.Join(cliReferenceDir, name))
		if err != nil {
			t.Errorf("docs/cli/%s: %v: run go generate ./cmd/deq", name, err)
			continue
		}
		if string(cur) != string(gen) {
			line := firstDiff(string(cur), string(gen))
			t.Errorf("docs/cli/%s is not current from line %d: run go generate ./cmd/deq", name, line)
		}
	}
}

// firstDiff returns the 1-based line at which a and b first differ.
func firstDiff(a, b string) int {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}
