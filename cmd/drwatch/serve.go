package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/drwatch/drwatch/cmd/drwatch/node"
	"github.com/spf13/cobra"
)

// serveCmd is `drwatch serve`.
type serveCmd struct {
	file string
}

func newServeCmd() *cobra.Command {
	s := &serveCmd{}
	c := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Run a watcher node: probe, vote, and (as leader) flip DNS",
		Long: `Run one watcher node. It probes both sites, sends its reports to the Raft
leader, and serves the HTTP API and status page on api_addr. While it leads,
it reconciles DNS with the replicated decision. SIGTERM stops probing, hands
leadership to a peer, flushes and exits 0.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if s.file == "" {
				return usageError{errors.New("--config is required")}
			}
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
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
				fmt.Fprintln(os.Stderr, p.String())
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
	n, err := node.Start(ctx, node.Options{Config: cfg, Logger: log})
	if err != nil {
		return err
	}
	tlsCfg, err := apiTLS(cfg.TLS.CAFile, cfg.TLS.CertFile, cfg.TLS.KeyFile)
	if err != nil {
		_ = n.Shutdown(context.Background())
		return err
	}
	srv, errc, err := serveAPI(cfg.Node.APIAddr, tlsCfg, n, tokens, cfg.API.MaxBodyBytes, log)
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

// serveAPI starts the HTTPS API; errc receives its terminal error.
func serveAPI(addr string, tlsCfg *tls.Config, b api.Backend, tokens *api.Tokens, maxBody int64, log *slog.Logger) (*http.Server, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("node.api_addr: %w", err)
	}
	h := api.NewServer(b, api.Options{Tokens: tokens, MaxBodyBytes: maxBody, Logger: log})
	registerPages(h, b)
	srv := &http.Server{
		Handler: h, TLSConfig: tlsCfg,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	return srv, errc, nil
}

// apiTLS serves the node's certificate. Client certificates from the
// cluster CA are accepted but not required: reads are open (the status page
// holds no secret) and writes need a bearer token.
func apiTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls.cert_file/key_file: %w", err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("tls.ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("tls.ca_file %s: no certificate", caFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}, nil
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
