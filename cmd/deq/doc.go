// Command deq solves fixed-point problems with certified stochastic solvers,
// trains and evaluates deep equilibrium models, and runs the project's
// benchmarks. It is a thin layer over the library: flags are parsed into
// typed configurations (solver, deq, train), which the library validates.
//
// Usage:
//
//	deq solve --list
//	deq solve --problem affine --solver minibatch-km --norm linf --eps 0.05 --json
//	deq train --data fashion-mnist --solver broyden --epochs 10 --checkpoint run.ckpt --metrics run.jsonl
//	deq eval --checkpoint run.ckpt --solver anderson --json
//	deq eval --checkpoint run.ckpt --corruptions all
//	deq predict --checkpoint run.ckpt digit.png photo.jpg
//	deq bench --quick --out bench-results
//
// Exit status: 0 on success, 1 when a command fails while running (an
// interrupted solve, or an internal error: a panic, reported as
// "deq: internal error: …" with the place it happened), 2 for a usage error
// (a bad flag, a missing one, or a combination that makes no sense,
// including those only the data, the file system or a checkpoint reveal:
// a batch larger than the data, a data set that is not installed, an
// output path that cannot be written, checked before any work, a
// checkpoint evaluated on another data set without --force), 130
// when SIGINT or SIGTERM stopped deq train after it saved its checkpoint.
// Errors are printed as one line on standard error, never as a stack trace.
package main

// The command-line reference docs/cli, generated from the command tree by
// cobra's Markdown generator; TestCLIReference checks that it is current.
//go:generate go test -run ^TestCLIReference$ -args -update-cli-reference
