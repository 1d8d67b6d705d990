package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd writes one man page per command, from the same tree that parses
// the command line, so the pages cannot drift from the binary they ship with.
// `make deb` runs it; it is hidden because operators read the pages with
// man(1), not through this command.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write a man page for every command into DIR (for packaging)",
		Hidden: true,
		Args:   oneArg("man takes one argument, the directory to write the pages into"),
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			// The footer would stamp the generation date; the header already
			// carries the commit's date, which keeps the pages reproducible.
			root.DisableAutoGenTag = true
			hdr := &doc.GenManHeader{Section: "1", Source: "drwatch " + version, Manual: "drwatch manual"}
			if d, err := time.Parse(time.RFC3339, date); err == nil {
				hdr.Date = &d
			}
			if err := doc.GenManTree(root, hdr, args[0]); err != nil {
				return fmt.Errorf("write man pages: %w", err)
			}
			return nil
		},
	}
}
