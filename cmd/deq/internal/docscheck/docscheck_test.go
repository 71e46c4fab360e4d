package docscheck

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestProcessWording plants one example of each pattern (and lines that
// must not match) and checks that each is found on its line.
func TestProcessWording(t *testing.T) {
	got := map[int][]string{}
	for _, f := range ProcessWording(readTestdata(t, "wording.txt")) {
		got[f.Line] = append(got[f.Line], f.Pattern)
	}
	want := map[int][]string{
		1: {"work session"},
		2: {"unversioned release"},
		4: {"issue number", "item number"},
		5: {"branch name", "branch name"},
		6: {"temporary-build"},
		7: {"the-task"},
		8: {"developer"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings by line:\n got %v\nwant %v", got, want)
	}
	for _, p := range Patterns {
		found := false
		for _, names := range want {
			for _, n := range names {
				found = found || n == p.Name
			}
		}
		if !found {
			t.Errorf("pattern %q has no planted example", p.Name)
		}
	}
}

// TestGoComments checks that the comments of a planted Go file are found,
// line comments and block comments alike, and its string literals are not.
func TestGoComments(t *testing.T) {
	cs, err := GoComments([]byte(readTestdata(t, "planted.go.txt")))
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	var pats []string
	for _, c := range cs {
		for _, f := range ProcessWording(c.Text) {
			lines = append(lines, c.Line)
			pats = append(pats, f.Pattern)
		}
	}
	if want := []int{3, 8}; !reflect.DeepEqual(lines, want) {
		t.Errorf("lines of planted comments: got %v, want %v", lines, want)
	}
	if want := []string{"work session", "issue number"}; !reflect.DeepEqual(pats, want) {
		t.Errorf("patterns: got %v, want %v", pats, want)
	}
}

// testTree is a small command tree shaped like deq's.
func testTree() *cobra.Command {
	root := &cobra.Command{Use: "deq"}
	train := &cobra.Command{Use: "train", Run: func(*cobra.Command, []string) {}}
	train.Flags().Int("epochs", 1, "")
	train.Flags().String("cell", "", "")
	train.Flags().Int("hidden", 1, "")
	eval := &cobra.Command{Use: "eval", Run: func(*cobra.Command, []string) {}}
	eval.Flags().String("checkpoint", "", "")
	solve := &cobra.Command{Use: "solve", Run: func(*cobra.Command, []string) {}}
	solve.Flags().String("problem", "", "")
	solve.Flags().String("solver", "", "")
	bench := &cobra.Command{Use: "bench", Run: func(*cobra.Command, []string) {}}
	bench.Flags().String("only", "", "")
	root.AddCommand(train, eval, solve, bench)
	return root
}

// TestCommandLines checks that the command lines of a planted page are
// found (code spans, indented and fenced blocks, continuation lines) and
// that CheckCommand rejects exactly the misspelt subcommand and the
// unknown flags.
func TestCommandLines(t *testing.T) {
	lines := CommandLines(readTestdata(t, "planted.md"))
	var texts []string
	var bad []string
	for _, c := range lines {
		texts = append(texts, c.Text)
		if err := CheckCommand(testTree(), c.Text); err != nil {
			bad = append(bad, err.Error())
		}
	}
	want := []string{
		"$ deq train [--cell dense|conv] [--hidden N] [--bogus-flag X]",
		"deq bench --only regime   # a comment --not-a-flag",
		"deq train --epochs 1",
		"deq trian --epochs 1",
		"deq solve --problem mdp --solver vrghal",
		"deq eval --checkpoint FILE --no-such-flag",
	}
	if !reflect.DeepEqual(texts, want) {
		t.Errorf("command lines:\n got %q\nwant %q", texts, want)
	}
	wantBad := []string{
		"deq train has no flag --bogus-flag",
		`deq has no subcommand "trian"`,
		"deq eval has no flag --no-such-flag",
	}
	if !reflect.DeepEqual(bad, wantBad) {
		t.Errorf("rejected:\n got %q\nwant %q", bad, wantBad)
	}
}

// TestCheckLinks checks that the missing page and the missing anchors (on
// the page and on another page) are reported, and the existing page, the
// URL, the existing anchors and the link inside a code span are not.
func TestCheckLinks(t *testing.T) {
	path := filepath.Join("testdata", "planted.md")
	err := CheckLinks(path, readTestdata(t, "planted.md"))
	if err == nil {
		t.Fatal("CheckLinks found no broken link")
	}
	var got []string
	for _, m := range strings.Split(err.Error(), "\n") {
		_, target, _ := strings.Cut(m, "link ")
		got = append(got, strings.TrimSuffix(target, " does not resolve"))
	}
	want := []string{"missing.md#top", "anchors.md#gone", "#no-such-heading"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CheckLinks reported %q, want %q", got, want)
	}
}

// TestAnchors checks GitHub's heading anchors: punctuation and symbols
// dropped, spaces to hyphens, repeats numbered.
func TestAnchors(t *testing.T) {
	got := Anchors(readTestdata(t, "anchors.md"))
	for _, a := range []string{
		"anchors", "why-3-like-for-like-is-out-of-reach",
		"stochastic-deq-on-fashion-mnist-mean-field-cell-m--4096-units", "repeat", "repeat-1",
	} {
		if !got[a] {
			t.Errorf("anchor %q missing from %v", a, got)
		}
	}
	if len(got) != 5 {
		t.Errorf("%d anchors, want 5: %v", len(got), got)
	}
}

// TestCompile checks that of the planted page's two Go blocks the first
// compiles and the second, which calls an undefined function, does not.
func TestCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	blocks := GoBlocks(readTestdata(t, "planted.md"))
	if len(blocks) != 2 {
		t.Fatalf("%d go blocks, want 2", len(blocks))
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := Compile(ctx, dir, blocks[0].Text); err != nil {
		t.Errorf("valid block: %v", err)
	}
	err = Compile(ctx, dir, blocks[1].Text)
	if err == nil || !strings.Contains(err.Error(), "undefinedName") {
		t.Errorf("broken block: %v, want an error naming undefinedName", err)
	}
	if err := Compile(ctx, dir, "fmt.Println(1)\n"); err == nil {
		t.Error("a fragment without a package clause compiled")
	}
}
