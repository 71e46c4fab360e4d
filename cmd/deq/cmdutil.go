package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// newCommand returns a subcommand that takes flags but no positional
// arguments and runs run; the caller binds the flags on its FlagSet.
func newCommand(use, short, long string, run func(cmd *cobra.Command) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return run(cmd) },
	}
}

// checkOutputFile returns a usage error naming flag when path cannot be
// written: it is a directory, its directory does not exist or is not one,
// or the file (or, when it does not exist, its directory) is not
// writable. It writes nothing: an existing file is opened for writing
// without truncation and a temporary file in the directory is removed at
// once. An empty path is not checked.
func checkOutputFile(flag, path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return usagef("--%s %s is a directory, not a file", flag, path)
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return usagef("--%s %s is not writable: %v", flag, path, pathReason(err))
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return usagef("--%s %s: %v", flag, path, pathReason(err))
	}
	dir := filepath.Dir(path)
	st, err = os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("--%s %s: directory %s does not exist", flag, path, dir)
	case err != nil:
		return usagef("--%s %s: %v", flag, path, pathReason(err))
	case !st.IsDir():
		return usagef("--%s %s: %s is not a directory", flag, path, dir)
	}
	return checkWritableDir(flag, path, dir)
}

// checkOutputDir returns a usage error naming flag when the directory
// path cannot be written or created: it exists and is not a directory, or
// the nearest existing directory on its path (itself, or the parent that
// MkdirAll would create it in) is not writable. It creates nothing. An
// empty path is not checked.
func checkOutputDir(flag, path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Clean(path)
	for {
		st, err := os.Stat(dir)
		switch {
		case err == nil && !st.IsDir():
			if dir == filepath.Clean(path) {
				return usagef("--%s %s is not a directory", flag, path)
			}
			return usagef("--%s %s: %s is not a directory", flag, path, dir)
		case err == nil:
			return checkWritableDir(flag, path, dir)
		case !errors.Is(err, fs.ErrNotExist):
			return usagef("--%s %s: %v", flag, path, pathReason(err))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return usagef("--%s %s: no existing directory on its path", flag, path)
		}
		dir = parent
	}
}

// checkWritableDir returns a usage error naming flag (for path) when no
// file can be created in the existing directory dir.
func checkWritableDir(flag, path, dir string) error {
	f, err := os.CreateTemp(dir, ".deq-write-check-*")
	if err != nil {
		return usagef("--%s %s: directory %s is not writable: %v", flag, path, dir, pathReason(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// pathReason returns the reason of a file system error without the path
// and operation that the message names already.
func pathReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
