package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deqgo/deq/internal/blasimpl"
)

// Exit statuses of the command.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitInterrupted: a signal (SIGINT or SIGTERM, which main turns into
	// a canceled context) stopped the command after it wrote what it
	// could: `deq train` its checkpoint, `deq solve` the report of its best
	// point so far (128 + SIGINT, the shells' convention).
	exitInterrupted = 130
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
	return execute(ctx, func() *cobra.Command { return newRootCmd(stdout, stderr) }, args, stderr)
}

// execute builds the command tree with newRoot and runs it on args. An error
// becomes one line on stderr and exit status 1 or 2, or 130 when ctx (which
// main cancels on SIGINT and SIGTERM) stopped the command; a panic anywhere below,
// construction included, becomes one line "deq: internal error: …" naming
// the panic and where it happened, and exit status 1, never a stack trace.
func execute(ctx context.Context, newRoot func() *cobra.Command, args []string, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("internal error: %v", r)
			if site := panicSite(); site != "" {
				msg += " (at " + site + ")"
			}
			fmt.Fprintln(stderr, oneLine(msg))
			code = exitFailure
		}
	}()
	root := newRoot()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var it interruptedError
	switch {
	case errors.As(err, &it):
		fmt.Fprintln(stderr, oneLine(err.Error()))
		return exitInterrupted
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		fmt.Fprintln(stderr, oneLine("interrupted: "+err.Error()))
		return exitInterrupted
	}
	fmt.Fprintln(stderr, oneLine(err.Error()))
	var rt runtimeError
	if errors.As(err, &rt) {
		return exitFailure
	}
	return exitUsage
}

// oneLine returns msg prefixed with "deq: ", its runs of white space,
// newlines included, replaced by single spaces.
func oneLine(msg string) string { return "deq: " + strings.Join(strings.Fields(msg), " ") }

// panicSite returns "file:line" of the function that panicked, found from
// inside a deferred recover: the first frame after runtime.gopanic that is
// not in package runtime. It returns "" if there is none.
func panicSite() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !strings.HasPrefix(f.Function, "runtime."):
			return filepath.Base(filepath.Dir(f.File)) + "/" + filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
		}
		if !more {
			return ""
		}
	}
}

// newRootCmd returns the deq command with its subcommands.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "deq",
		Short:         "Deep equilibrium models and certified stochastic fixed-point solvers",
		SilenceErrors: true,
		SilenceUsage:  true,
		// Every subcommand runs with the BLAS compiled in (OpenBLAS under
		// the build tag netlib) installed in gonum and gorgonia.
		PersistentPreRun: func(*cobra.Command, []string) { blasimpl.Use() },
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newSolveCmd(), newTrainCmd(), newEvalCmd(), newPredictCmd(), newBenchCmd())
	return root
}
