package docscheck

import (
	"go/scanner"
	"go/token"
	"regexp"
	"strings"
)

// A Pattern is one kind of development-process wording: a regular
// expression and what it stands for.
type Pattern struct {
	Name string
	Re   *regexp.Regexp
}

// Patterns are the kinds of wording that speak of how the code was
// developed instead of what it does. Each names something a reader of the
// documentation cannot resolve.
var Patterns = []Pattern{
	// A work period, numbered or pointed at ("this" or "the last" one).
	{"work session", regexp.MustCompile(`(?i)\bsessions? #?[0-9]+|\b(this|that|the|a|an|earlier|previous|last|next|later|same|one) session\b`)},
	// A release or version named by its position instead of its number.
	// Followed by a version number it is allowed; see versioned.
	{"unversioned release", regexp.MustCompile(`(?i)\b(this|previous|earlier|an earlier|last|the last|next|later|former|older|newer|prior) (releases?|versions?)\b`)},
	// A ticket of the tracker, by number.
	{"issue number", regexp.MustCompile(`(?i)\bissues? #?[0-9]+`)},
	// A numbered requirement of a ticket.
	{"item number", regexp.MustCompile(`(?i)\bitems? #?[0-9]+\b`)},
	// A git branch of the development: the word branch and a name, or a
	// name of the form letter, one or two digits, hyphen, word. Names
	// starting with l or v are left alone: they are norms (ℓ2-ball) and
	// versions.
	{"branch name", regexp.MustCompile(`(?i)\bbranch(es)? [a-z]+[0-9]+\b|\b[a-km-uw-z][0-9]{1,2}-[a-z]{3,}\b`)},
	// A build made for a measurement and since discarded.
	{"temporary-build", regexp.MustCompile(`(?i)\btemporary\s+builds?\b`)},
	// The assignment the text was written for.
	{"the-task", regexp.MustCompile(`(?i)\b(the|this|my|our|your) task\b`)},
	// The people or programs that wrote the code (helpers in that sense,
	// not helper functions or goroutines).
	{"developer", regexp.MustCompile(`(?i)\b(another|other|parallel|each|a fellow) helpers?\b|\bhelpers? (sessions?|branch(es)?|agents?|wrote)\b|\blead engineer\b`)},
}

// versioned reports whether the text just after a match names a version
// number, with or without a leading v.
var versioned = regexp.MustCompile(`^ v?[0-9]+(\.[0-9]+)*\b`)

// A Finding is one match of a Pattern.
type Finding struct {
	Line    int    // 1-based line of the match in the text given
	Pattern string // the Pattern's Name
	Text    string // the matched words
}

// ProcessWording returns every match of Patterns in text, in order of
// line. A release or version followed by a version number is not a match.
func ProcessWording(text string) []Finding {
	var out []Finding
	for i, line := range strings.Split(text, "\n") {
		for _, p := range Patterns {
			for _, m := range p.Re.FindAllStringIndex(line, -1) {
				if p.Name == "unversioned release" && versioned.MatchString(line[m[1]:]) {
					continue
				}
				out = append(out, Finding{Line: i + 1, Pattern: p.Name, Text: line[m[0]:m[1]]})
			}
		}
	}
	return out
}

// A Comment is the text of one Go comment and the line it starts on.
type Comment struct {
	Line int
	Text string
}

// GoComments returns the comments of the Go source src, whatever its build
// constraints; string literals are not comments. It returns the comments
// read before a scanning error, if any, with the error.
func GoComments(src []byte) ([]Comment, error) {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var errs scanner.ErrorList
	var s scanner.Scanner
	s.Init(file, src, func(pos token.Position, msg string) { errs.Add(pos, msg) }, scanner.ScanComments)
	var out []Comment
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT {
			out = append(out, Comment{Line: fset.Position(pos).Line, Text: lit})
		}
	}
	return out, errs.Err()
}
