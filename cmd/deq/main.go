// Command deq solves fixed-point problems with certified stochastic solvers
// and, as the project grows, trains and evaluates deep equilibrium models.
//
// Usage:
//
//	deq solve --list
//	deq solve --problem affine --solver minibatch-km --norm linf --eps 0.05 --json
//	deq train --data fashion-mnist --solver broyden --epochs 10 --checkpoint run.ckpt --metrics run.jsonl
//	deq eval --checkpoint run.ckpt --solver anderson --json
//
// Exit status: 0 on success, 1 when a command fails while running (an
// interrupted solve, or an internal error: a panic, reported as
// "deq: internal error: …" with the place it happened), 2 for a usage error
// (a bad flag, a missing one, or a combination that makes no sense), 130
// when SIGINT or SIGTERM stopped deq train after it saved its checkpoint.
// Errors are printed as one line on standard error, never as a stack trace.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
