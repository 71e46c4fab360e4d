// Command deq solves fixed-point problems with certified stochastic solvers
// and, as the project grows, trains and evaluates deep equilibrium models.
//
// Usage:
//
//	deq solve --list
//	deq solve --problem affine --solver minibatch-km --norm linf --eps 0.05 --json
//
// Exit status: 0 on success, 1 when a command fails while running (an
// interrupt, or an internal error: a panic, reported as
// "deq: internal error: …" with the place it happened), 2 for a usage error
// (a bad flag, a missing one, or a combination that makes no sense). Errors
// are printed as one line on standard error, never as a stack trace.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
