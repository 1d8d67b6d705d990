package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/drwatch/drwatch/cmd/drwatch/demo"
	"github.com/spf13/cobra"
)

// demoCmd is `drwatch demo`.
type demoCmd struct {
	scenario string
	dir      string
	debug    bool
}

func newDemoCmd() *cobra.Command {
	d := &demoCmd{}
	c := &cobra.Command{
		Use:   "demo [--scenario outage|region]",
		Short: "Run three watchers, two simulated sites and an embedded DNS server on this machine",
		Long: `Run the whole product on loopback with nothing installed: three watcher
nodes (real Raft over mutual TLS, certificates generated on the fly), two
simulated sites and the embedded authoritative DNS server. The sites host
two platforms, each a failover group: the LMS (lms and studio, the default
group) and the wiki (group wiki); both name the region's Kubernetes API.

Without --scenario it runs until Ctrl-C and prints how to watch the status
page, cause an outage and fail over by hand. A scenario tells a story
without a human and exits 0 only when the DNS server answers what it should:

  outage   the LMS's Caddy on the primary dies alone: the LMS's records
           flip to the backup, the wiki's stay on the primary
  region   the primary region's Kubernetes API dies: both platforms flip
           to the backup, each with its own decision`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if d.scenario != "" && !slices.Contains(demo.Scenarios, d.scenario) {
				return usageError{fmt.Errorf("--scenario must be one of %s, got %q", strings.Join(demo.Scenarios, ", "), d.scenario)}
			}
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return d.Run(ctx, c)
		},
	}
	c.Flags().StringVar(&d.scenario, "scenario", "", "run a scripted story and exit: "+strings.Join(demo.Scenarios, " or "))
	c.Flags().StringVar(&d.dir, "dir", "", "keep configs, certificates and logs here (default: a temporary directory, removed at exit)")
	c.Flags().BoolVar(&d.debug, "debug", false, "log at debug level to demo.log")
	return c
}

// Run starts the demo and runs the scenario or the interactive mode.
func (d *demoCmd) Run(ctx context.Context, c *cobra.Command) error {
	lvl := slog.LevelInfo
	if d.debug {
		lvl = slog.LevelDebug
	}
	dm, err := demo.Start(ctx, demo.Options{Dir: d.dir, Out: stdout(c), LogLevel: lvl})
	if err != nil {
		return err
	}
	defer dm.Close()
	if d.scenario != "" {
		if err := dm.Run(ctx, d.scenario); err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return err
			}
			return fmt.Errorf("%s scenario failed: %w (logs: %s/demo.log; keep them with --dir)", d.scenario, err, dm.Dir)
		}
		return nil
	}
	return dm.Interactive(ctx)
}
