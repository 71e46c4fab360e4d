package docscheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
)

// A Block is a fenced code block of a Markdown page.
type Block struct {
	Line int    // 1-based line of the opening fence
	Lang string // the fence's info string, "go" for ```go
	Text string // the lines between the fences
}

// Blocks returns the fenced code blocks of the Markdown text md.
func Blocks(md string) []Block {
	var out []Block
	var cur *Block
	var body []string
	for i, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(t, "```"):
			cur = &Block{Line: i + 1, Lang: strings.TrimSpace(strings.TrimPrefix(t, "```"))}
			body = body[:0]
		case cur != nil && t == "```":
			cur.Text = strings.Join(body, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
	}
	return out
}

// GoBlocks returns the ```go code blocks of md.
func GoBlocks(md string) []Block {
	var out []Block
	for _, b := range Blocks(md) {
		if b.Lang == "go" {
			out = append(out, b)
		}
	}
	return out
}

// prose returns md with its fenced code blocks blanked (line numbers
// kept), for the checks that read only the running text.
func prose(md string) []string {
	lines := strings.Split(md, "\n")
	in := false
	for i, line := range lines {
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		if in || fence {
			lines[i] = ""
		}
		if fence {
			in = !in
		}
	}
	return lines
}

// A CommandLine is one `deq …` command line of a Markdown page.
type CommandLine struct {
	Line int    // 1-based line where it starts
	Text string // from "deq" on, continuation lines joined
}

// deqStart matches the start of a deq command line: the binary by name or
// path, or `go run ./cmd/deq`, after an optional shell prompt.
var deqStart = regexp.MustCompile(`^\s*(?:\$\s+)?(?:go run (?:-tags \S+ )?\./cmd/deq|(?:\./)?(?:bin/)?deq)(\s|$)`)

// inlineCode matches a code span.
var inlineCode = regexp.MustCompile("`([^`]+)`")

// CommandLines returns the deq command lines of md: the lines of code
// blocks that start with deq (with the indented or backslash-continued
// lines that follow them) and the code spans of the running text that
// start with "deq ".
func CommandLines(md string) []CommandLine {
	var out []CommandLine
	for _, b := range Blocks(md) {
		if b.Lang != "" && b.Lang != "sh" && b.Lang != "bash" && b.Lang != "console" && b.Lang != "shell" && b.Lang != "text" {
			continue
		}
		out = append(out, blockCommands(b.Text, b.Line+1)...)
	}
	// Indented code blocks (four spaces) outside fences.
	lines := prose(md)
	var indented []string
	flush := func(end int) {
		if len(indented) > 0 {
			out = append(out, blockCommands(strings.Join(indented, "\n"), end-len(indented))...)
			indented = indented[:0]
		}
	}
	for i, line := range lines {
		if strings.HasPrefix(line, "    ") && (len(indented) > 0 || i == 0 || strings.TrimSpace(lines[i-1]) == "") {
			indented = append(indented, line)
			continue
		}
		flush(i + 1)
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			if deqStart.MatchString(m[1]) {
				out = append(out, CommandLine{Line: i + 1, Text: strings.TrimSpace(m[1])})
			}
		}
	}
	flush(len(lines) + 1)
	return out
}

// blockCommands returns the deq command lines of a code block whose first
// line is line first.
func blockCommands(text string, first int) []CommandLine {
	var out []CommandLine
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !deqStart.MatchString(lines[i]) {
			continue
		}
		c := CommandLine{Line: first + i, Text: strings.TrimSpace(lines[i])}
		for i+1 < len(lines) && (strings.HasSuffix(c.Text, "\\") ||
			strings.HasPrefix(lines[i+1], "      ") && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "[")) {
			i++
			c.Text = strings.TrimSuffix(c.Text, "\\") + " " + strings.TrimSpace(lines[i])
		}
		out = append(out, c)
	}
	return out
}

// flagName matches a long or short flag where a command line's words
// start: after a space, "[", "(" or "|".
var flagName = regexp.MustCompile(`(?:^|[\s\[(|])(--[a-zA-Z][a-zA-Z0-9-]*|-[a-zA-Z])\b`)

// CheckCommand checks the command line text against the command tree
// root: the words after the binary name up to the first flag or
// placeholder must name a chain of subcommands, and every flag written
// must be one of the final subcommand's (its own, inherited or the
// built-in help). A shell comment (from " #") is ignored.
func CheckCommand(root *cobra.Command, text string) error {
	if i := strings.Index(text, " #"); i >= 0 {
		text = text[:i]
	}
	loc := deqStart.FindStringIndex(text)
	if loc == nil {
		return fmt.Errorf("%q does not start with deq", text)
	}
	rest := text[loc[1]:]
	cmd := root
	words := strings.Fields(rest)
	for _, w := range words {
		if strings.HasPrefix(w, "-") || strings.ContainsAny(w, "[]|<>{}=…") {
			break
		}
		next := findSub(cmd, w)
		if next == nil {
			if cmd.HasSubCommands() {
				return fmt.Errorf("%s has no subcommand %q", cmd.CommandPath(), w)
			}
			break // a positional argument
		}
		cmd = next
	}
	var errs []error
	for _, m := range flagName.FindAllStringSubmatch(rest, -1) {
		name := m[1]
		if name == "--help" || name == "-h" {
			continue
		}
		var ok bool
		if long, isLong := strings.CutPrefix(name, "--"); isLong {
			ok = cmd.Flags().Lookup(long) != nil || cmd.InheritedFlags().Lookup(long) != nil
		} else {
			ok = cmd.Flags().ShorthandLookup(name[1:]) != nil || cmd.InheritedFlags().ShorthandLookup(name[1:]) != nil
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%s has no flag %s", cmd.CommandPath(), name))
		}
	}
	return errors.Join(errs...)
}

// findSub returns cmd's subcommand named or aliased name, or nil.
func findSub(cmd *cobra.Command, name string) *cobra.Command {
	if name == "help" {
		return cmd
	}
	for _, c := range cmd.Commands() {
		if c.Name() == name || c.HasAlias(name) {
			return c
		}
	}
	return nil
}

// A Link is a link target of a Markdown page.
type Link struct {
	Line   int
	Target string
}

// mdLink matches the target of an inline Markdown link or image.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// RelativeLinks returns the links of md's running text that point into the
// repository: not to a URL with a scheme, and not only to an anchor.
func RelativeLinks(md string) []Link {
	var out []Link
	for i, line := range prose(md) {
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			t := m[1]
			if strings.HasPrefix(t, "#") || strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			out = append(out, Link{Line: i + 1, Target: t})
		}
	}
	return out
}

// CheckLinks returns an error for each link of the Markdown page at path
// that does not resolve: a relative link whose file or directory does not
// exist, or whose #anchor names no heading of the Markdown page it points
// to, and a same-page #anchor that names no heading of md.
func CheckLinks(path, md string) error {
	var errs []error
	bad := func(l Link) {
		errs = append(errs, fmt.Errorf("%s:%d: link %s does not resolve", path, l.Line, l.Target))
	}
	for _, l := range RelativeLinks(md) {
		target, anchor, _ := strings.Cut(l.Target, "#")
		file := filepath.Join(filepath.Dir(path), filepath.FromSlash(target))
		if _, err := os.Stat(file); err != nil {
			bad(l)
			continue
		}
		if anchor == "" || !strings.HasSuffix(file, ".md") {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil || !Anchors(string(b))[anchor] {
			bad(l)
		}
	}
	anchors := Anchors(md)
	for i, line := range prose(md) {
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			if a, ok := strings.CutPrefix(m[1], "#"); ok && !anchors[a] {
				bad(Link{Line: i + 1, Target: m[1]})
			}
		}
	}
	return errors.Join(errs...)
}

// Anchors returns the anchors GitHub gives the headings of md: the
// heading's text in lower case, without the characters that are neither
// letters, digits, spaces, hyphens nor underscores, spaces replaced by
// hyphens, and "-1", "-2", … appended to repeats.
func Anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(md) {
		t := strings.TrimLeft(line, "#")
		if len(t) == len(line) || len(line)-len(t) > 6 || !strings.HasPrefix(t, " ") {
			continue
		}
		t = inlineCode.ReplaceAllString(strings.TrimSpace(t), "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(t) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
