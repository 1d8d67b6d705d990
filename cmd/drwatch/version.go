package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintf(stdout(c), "drwatch %s (commit %s, %s, %s %s/%s)\n",
				version, commit, date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
