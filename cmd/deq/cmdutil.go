package main

import "github.com/spf13/cobra"

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
