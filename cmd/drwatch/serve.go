package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/cmd/drwatch/node"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
)

// serveCmd is `drwatch serve`.
type serveCmd struct {
	file   string
	stderr io.Writer // where config problems go
}

func newServeCmd() *cobra.Command {
	s := &serveCmd{}
	c := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Run a watcher node: probe, vote, and (as leader) flip DNS",
		Long: `Run one watcher node. It probes both sites, sends its reports to the Raft
leader, and serves the HTTP API and status page on api_addr. While it leads,
it reconciles DNS with the replicated decision. SIGTERM stops probing, hands
leadership to a peer, flushes and exits 0. A node that meets a log entry or a
snapshot its release cannot read (a newer log format) stops and exits 1,
naming the entry: install a release that reads it.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if s.file == "" {
				return usageError{errors.New("--config is required")}
			}
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			s.stderr = c.ErrOrStderr()
			return s.Run(ctx)
		},
	}
	c.Flags().StringVarP(&s.file, "config", "c", "", "configuration file")
	return c
}

// Run loads the config and serves until ctx ends.
func (s *serveCmd) Run(ctx context.Context) error {
	cfg, err := config.Load(s.file, config.Options{})
	if err != nil {
		var ps config.Problems
		if errors.As(err, &ps) {
			for _, p := range ps {
				fmt.Fprintln(s.stderr, p.String())
			}
			return silentError{exitFailed}
		}
		return err
	}
	log := newLogger(cfg.Log, os.Stderr)
	tokens, err := api.LoadTokens(cfg.API.TokensFile)
	if err != nil {
		return fmt.Errorf("api.tokens_file: %w", err)
	}
	// One registry for the node's metrics and the API's connection ones.
	reg := prometheus.NewRegistry()
	n, err := node.Start(ctx, node.Options{Config: cfg, Logger: log, Registry: reg})
	if err != nil {
		return err
	}
	srv, errc, err := api.Listen(cfg.Node.APIAddr, api.ServerTLS(n.Credentials(), cfg.API.ClientCerts == "required"), n, api.Options{Tokens: tokens, MaxBodyBytes: cfg.API.MaxBodyBytes, Logger: log, Registerer: reg})
	if err != nil {
		_ = n.Shutdown(context.Background())
		return err
	}
	log.Info("api listening", "api_addr", cfg.Node.APIAddr)
	select {
	case <-ctx.Done():
		log.Info("shutting down", "reason", "signal")
	case err = <-errc:
		log.Error("api server failed", "err", err)
	case <-n.Halted():
		// The replica logged why; the node must not run on a frozen state.
		err = fmt.Errorf("stopped: %w", n.HaltError())
	}
	// Reverse order of start-up; clean-up must finish even though ctx ended.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	shutErr := n.Shutdown(sctx)
	_ = srv.Shutdown(sctx)
	if err != nil {
		return err
	}
	if shutErr != nil {
		return fmt.Errorf("shutdown: %w", shutErr)
	}
	log.Info("stopped")
	return nil
}

func newLogger(c config.Log, w *os.File) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
