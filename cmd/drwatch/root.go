package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes, the contract scripts rely on.
const (
	exitOK      = 0
	exitFailed  = 1 // the command ran and failed
	exitUsage   = 2 // bad flags or arguments
	exitRefused = 3 // refused by a safety rule (no quorum, target unhealthy, failback gate, ...)
)

// usageError marks an error as the caller's mistake (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// refusedError marks a refusal by a safety rule (exit 3).
type refusedError struct{ err error }

func (e refusedError) Error() string { return e.err.Error() }
func (e refusedError) Unwrap() error { return e.err }

// silentError carries an exit code whose message was already printed.
type silentError struct{ code int }

func (e silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func exitCode(err error) int {
	var u usageError
	var r refusedError
	var s silentError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &s):
		return s.code
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &r):
		return exitRefused
	}
	return exitFailed
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "drwatch",
		Short: "Out-of-cluster disaster-recovery failover for Kubernetes on OpenStack",
		Long: `drwatch watches a primary and a backup site from three vantage points,
agrees through Raft whether the primary is down, and flips DNS to the backup.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	asGroup(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath())}
	})
	root.AddCommand(newVersionCmd(), newConfigCmd(), newServeCmd(), newStatusCmd(),
		newFailoverCmd(), newFailbackCmd(), newSwitchoverCmd(), newPauseCmd(), newResumeCmd(), newAckCmd(),
		newHistoryCmd(), newExplainCmd(), newDrillCmd(), newMembersCmd(), newDemoCmd(), newCertsCmd(), newDNSCmd(), newRemediateCmd(), newManCmd())
	return root
}

// stdout returns the command's output writer (tests capture it).
func stdout(c *cobra.Command) io.Writer { return c.OutOrStdout() }

// asGroup makes c, a command that holds subcommands, print its help when
// called alone and refuse an unknown subcommand with a usage error. Cobra
// would print the help and exit 0 for both, so a mistyped subcommand in a
// script would pass for success.
func asGroup(c *cobra.Command) *cobra.Command {
	c.Args = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("unknown command %q; see '%s --help'", args[0], c.CommandPath())}
		}
		return nil
	}
	c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	return c
}

// oneArg is cobra.ExactArgs(1) with a usage error: msg says what the one
// argument is. Counting in Args, not in RunE, lets cobra (and the test of
// the documented command lines) reject a wrong count without running.
func oneArg(msg string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageError{errors.New(msg)}
		}
		return nil
	}
}

// noArgs is cobra.NoArgs with a usage error.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", c.CommandPath(), args)}
	}
	return nil
}
