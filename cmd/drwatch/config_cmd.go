package main

import (
	"errors"
	"fmt"

	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/spf13/cobra"
)

func newConfigCmd() *cobra.Command {
	c := asGroup(&cobra.Command{Use: "config", Short: "Work with configuration files"})
	c.AddCommand(newConfigValidateCmd(), &cobra.Command{
		Use:   "docs",
		Short: "Print the configuration reference (docs/configuration.md) in Markdown",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return config.WriteReference(stdout(c))
		},
	})
	return c
}

// configValidate is `drwatch config validate`.
type configValidate struct {
	file      string
	skipFiles bool
}

func newConfigValidateCmd() *cobra.Command {
	v := &configValidate{}
	c := &cobra.Command{
		Use:   "validate --config FILE",
		Short: "Check a configuration file and print every problem with its line and column",
		Long: `Check a configuration file: unknown keys, wrong types, inline secrets and
broken rules are all reported at once, each as FILE:LINE:COL: field.path: message.
Exits 0 when the file is valid and 1 otherwise.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if v.file == "" {
				return usageError{errors.New("--config is required")}
			}
			_, err := config.Load(v.file, config.Options{SkipFileChecks: v.skipFiles})
			var ps config.Problems
			if errors.As(err, &ps) {
				for _, p := range ps {
					fmt.Fprintln(c.ErrOrStderr(), p.String())
				}
				fmt.Fprintf(c.ErrOrStderr(), "%d problem(s)\n", len(ps))
				return silentError{exitFailed}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout(c), "%s: ok\n", v.file)
			return nil
		},
	}
	c.Flags().StringVarP(&v.file, "config", "c", "", "configuration file")
	c.Flags().BoolVar(&v.skipFiles, "no-file-checks", false, "do not check that referenced files exist (validating on another machine)")
	return c
}
