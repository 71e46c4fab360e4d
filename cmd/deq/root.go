package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit statuses of the command.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// runtimeError marks an error that happened while a well-formed command ran
// (exit status 1). Every other error of the command line is a usage error
// (exit status 2).
type runtimeError struct{ err error }

func (r runtimeError) Error() string { return r.err.Error() }
func (r runtimeError) Unwrap() error { return r.err }

// usagef returns a usage error.
func usagef(format string, args ...any) error { return fmt.Errorf(format, args...) }

// run executes the command line args, writing output to stdout and errors,
// as one line each, to stderr, and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "deq: "+strings.Join(strings.Fields(err.Error()), " "))
	var rt runtimeError
	if errors.As(err, &rt) {
		return exitFailure
	}
	return exitUsage
}

// newRootCmd returns the deq command with its subcommands.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "deq",
		Short:         "Deep equilibrium models and certified stochastic fixed-point solvers",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newSolveCmd())
	root.AddCommand(newBenchCmd())
	return root
}
