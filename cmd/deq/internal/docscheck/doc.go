// Package docscheck holds the checks that the module's documentation
// (README.md, CHANGELOG.md, BENCHMARKS.md, docs/ and the Go comments)
// describes the software as it is:
//
//   - ProcessWording finds words about how the code was developed rather
//     than what it does (work periods, ticket numbers, unversioned
//     releases, branch names); GoComments extracts the comments of a Go
//     source file for it;
//   - CommandLines finds the `deq …` command lines of a Markdown page and
//     CheckCommand checks one against a cobra command tree;
//   - GoBlocks returns the page's ```go code blocks, to be compiled;
//   - RelativeLinks and CheckLinks find the page's links to files of the
//     repository and report those that do not resolve.
//
// The checks themselves run in the command's tests (cmd/deq), which own the
// command tree; this package only finds and judges. It is internal: its
// names are not part of the module's API.
package docscheck
