package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
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
		Use:   "demo [--scenario outage]",
		Short: "Run three watchers, two simulated sites and an embedded DNS server on this machine",
		Long: `Run the whole product on loopback with nothing installed: three watcher
nodes (real Raft over mutual TLS, certificates generated on the fly), two
simulated sites and the embedded authoritative DNS server.

Without --scenario it runs until Ctrl-C and prints how to watch the status
page, cause an outage and fail over by hand. With --scenario outage it tells
the story without a human and exits 0 only when the DNS server answers the
backup address.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if d.scenario != "" && d.scenario != "outage" {
				return usageError{fmt.Errorf("--scenario must be outage, got %q", d.scenario)}
			}
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return d.Run(ctx, c)
		},
	}
	c.Flags().StringVar(&d.scenario, "scenario", "", "run a scripted story and exit: outage")
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
	if d.scenario == "outage" {
		if err := dm.Outage(ctx); err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return err
			}
			return fmt.Errorf("outage scenario failed: %w (logs: %s/demo.log; keep them with --dir)", err, dm.Dir)
		}
		return nil
	}
	return dm.Interactive(ctx)
}
