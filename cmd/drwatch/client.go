package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/drwatch/drwatch/internal/regularfile"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drwatch/drwatch/cmd/drwatch/api"
	"github.com/drwatch/drwatch/cmd/drwatch/config"
	"github.com/spf13/cobra"
)

// clientFlags are the flags every command that talks to a node shares.
// Secrets never come from flags: the token is read from a file or the
// environment.
type clientFlags struct {
	endpoints []string
	config    string
	caFile    string
	certFile  string
	keyFile   string
	tokenFile string
	// timeout bounds one call to the cluster as a whole, every endpoint
	// tried included; dialTimeout bounds each endpoint's connect and TLS
	// handshake, so a frozen node costs that much and no more.
	timeout     time.Duration
	dialTimeout time.Duration
}

func (f *clientFlags) register(c *cobra.Command) {
	fs := c.PersistentFlags()
	fs.StringSliceVar(&f.endpoints, "endpoint", nil, "API URL of any node, e.g. https://10.1.0.5:7480 (repeatable; env DRWATCH_ENDPOINT, comma-separated)")
	fs.StringVarP(&f.config, "config", "c", "", "a node's config file: the peers' api_addr and the CA are taken from it (env DRWATCH_CONFIG)")
	fs.StringVar(&f.caFile, "ca-file", "", "CA bundle to verify the API (env DRWATCH_CA_FILE)")
	fs.StringVar(&f.certFile, "cert-file", "", "client certificate to present, from 'drwatch certs issue NAME --client' (env DRWATCH_CERT_FILE; needed where api.client_certs is required)")
	fs.StringVar(&f.keyFile, "key-file", "", "the client certificate's key (env DRWATCH_KEY_FILE)")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token for writes (env DRWATCH_TOKEN_FILE, or the token itself in DRWATCH_TOKEN)")
	fs.DurationVar(&f.timeout, "timeout", 20*time.Second, "time limit of each call to the cluster, every endpoint tried included")
	fs.DurationVar(&f.dialTimeout, "dial-timeout", defaultDialTimeout, "time each endpoint has to accept the connection and finish the TLS handshake before the next one is tried")
}

// defaultDialTimeout is --dial-timeout's default, as etcdctl's: long enough
// for a TLS handshake across regions, short enough that a frozen node (its
// kernel still completes TCP connects) delays a command by seconds, not by
// the whole --timeout.
const defaultDialTimeout = 2 * time.Second

// client talks to any node of the cluster: it tries each endpoint in turn
// until one answers (any node serves reads and forwards writes).
type client struct {
	endpoints []string
	http      *http.Client
	token     string
	timeout   time.Duration // one call, all endpoints

	// answered is the endpoint that answered the last call: the next call
	// of the same command asks it first, so a frozen node costs its dial
	// budget once per command, not once per call.
	mu       sync.Mutex
	answered string
}

// order is the endpoints to try, the one that answered last first.
func (c *client) order() []string {
	c.mu.Lock()
	first := c.answered
	c.mu.Unlock()
	if first == "" || first == c.endpoints[0] {
		return c.endpoints
	}
	out := append(make([]string, 0, len(c.endpoints)), first)
	for _, ep := range c.endpoints {
		if ep != first {
			out = append(out, ep)
		}
	}
	return out
}

// apiError is an error reply from a node.
type apiError struct {
	Status int
	api.ErrorDetail
}

func (e *apiError) Error() string {
	s := e.Message
	if e.Rule != "" {
		s = fmt.Sprintf("refused by rule %s: %s", e.Rule, e.Message)
	}
	if e.Override != "" {
		s += "\n  to override: " + e.Override
	}
	return s
}

// cliErr maps an API error onto the CLI's exit codes.
func cliErr(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		switch ae.Code {
		case api.CodeRefused, api.CodeNoLeader:
			return refusedError{err}
		case api.CodeBadRequest:
			return usageError{err}
		}
	}
	return err
}

func (f *clientFlags) client(needToken bool) (*client, error) {
	eps := f.endpoints
	if len(eps) == 0 {
		if env := os.Getenv("DRWATCH_ENDPOINT"); env != "" {
			eps = strings.Split(env, ",")
		}
	}
	cfgPath := f.config
	if cfgPath == "" {
		cfgPath = os.Getenv("DRWATCH_CONFIG")
	}
	caFile := cmp.Or(f.caFile, os.Getenv("DRWATCH_CA_FILE"))
	certFile := cmp.Or(f.certFile, os.Getenv("DRWATCH_CERT_FILE"))
	keyFile := cmp.Or(f.keyFile, os.Getenv("DRWATCH_KEY_FILE"))
	if cfgPath != "" {
		cfg, err := config.Load(cfgPath, config.Options{SkipFileChecks: true})
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", cfgPath, err)
		}
		if len(eps) == 0 {
			// This node first: it is the one the operator is logged in to.
			eps = append(eps, "https://"+cfg.Node.APIAddr)
			for _, p := range cfg.Peers {
				if p.ID != cfg.Node.ID {
					eps = append(eps, "https://"+p.APIAddr)
				}
			}
		}
		if caFile == "" {
			caFile = cfg.TLS.CAFile
		}
		if certFile == "" && keyFile == "" && cfg.API.ClientCerts == "required" {
			// On a watcher, its own pair is a client certificate too.
			certFile, keyFile = cfg.TLS.CertFile, cfg.TLS.KeyFile
		}
	}
	if len(eps) == 0 {
		return nil, usageError{errors.New("no node to talk to: pass --endpoint URL or --config FILE (or set DRWATCH_ENDPOINT)")}
	}
	for i, e := range eps {
		e = strings.TrimRight(strings.TrimSpace(e), "/")
		if !strings.Contains(e, "://") {
			e = "https://" + e
		}
		eps[i] = e
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := regularfile.Read("ca file", caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("ca file: no certificate")
		}
		tlsCfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, usageError{errors.New("--cert-file and --key-file go together (or DRWATCH_CERT_FILE and DRWATCH_KEY_FILE)")}
	}
	if certFile != "" {
		pair, err := regularfile.KeyPair("client certificate", certFile, "client key", keyFile)
		if err != nil {
			return nil, err
		}
		tlsCfg.Certificates = []tls.Certificate{pair}
	}
	dial := f.dialTimeout
	switch {
	case dial < 0:
		return nil, usageError{fmt.Errorf("--dial-timeout %s must be > 0", dial)}
	case dial == 0:
		dial = defaultDialTimeout
	}
	if f.timeout <= 0 {
		return nil, usageError{fmt.Errorf("--timeout %s must be > 0", f.timeout)}
	}
	d := endpointDialer{budget: dial, tls: tlsCfg}
	c := &client{endpoints: eps, timeout: f.timeout,
		http: &http.Client{Transport: &http.Transport{Proxy: nil,
			DialContext: d.dial, DialTLSContext: d.dialTLS}}}
	if needToken {
		tok, err := readToken(cmp.Or(f.tokenFile, os.Getenv("DRWATCH_TOKEN_FILE")))
		if err != nil {
			return nil, err
		}
		c.token = tok
	}
	return c, nil
}

// endpointDialer connects to one endpoint within budget, TLS handshake
// included: a stopped process keeps its listening socket, so the kernel
// completes the TCP connect and only the handshake hangs.
type endpointDialer struct {
	budget time.Duration
	tls    *tls.Config
}

func (d endpointDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.budget)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	return conn, d.explain(ctx, err)
}

func (d endpointDialer) dialTLS(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.budget)
	defer cancel()
	raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, d.explain(ctx, err)
	}
	cfg := d.tls.Clone()
	if cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		cfg.ServerName = host
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("tls handshake: %w", d.explain(ctx, err))
	}
	return tc, nil
}

// explain names the dial budget when it, not the caller, ended the dial.
func (d endpointDialer) explain(ctx context.Context, err error) error {
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within --dial-timeout %s: %w", d.budget, err)
	}
	return err
}

func readToken(file string) (string, error) {
	if file != "" {
		b, err := regularfile.Read("token file", file)
		if err != nil {
			return "", err
		}
		// One line: the bare token, or the user's own "actor:token[:role]"
		// line copied from the watchers' tokens file. Never guess among several:
		// the whole file would go out as the token.
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		switch len(lines) {
		case 0:
			return "", fmt.Errorf("token file %s is empty", file)
		case 1:
		default:
			return "", fmt.Errorf("token file %s: want one line, the token or actor:token; got %d", file, len(lines))
		}
		tok := lines[0]
		if strings.Contains(tok, ":") {
			tok = api.LineToken(tok)
		}
		if tok == "" {
			return "", fmt.Errorf("token file %s is empty", file)
		}
		return tok, nil
	}
	if tok := strings.TrimSpace(os.Getenv("DRWATCH_TOKEN")); tok != "" {
		return tok, nil
	}
	return "", usageError{errors.New("writes need a token: pass --token-file FILE or set DRWATCH_TOKEN_FILE or DRWATCH_TOKEN")}
}

// do calls path on the first endpoint that answers, all within c.timeout.
// A reply, even an error reply, ends the search. The next node is asked
// only when the request cannot have been applied: no_leader (this node
// knows no leader and committed nothing), or no connection to this node
// (nothing was sent). A read is also asked again after any transport
// failure, but a write that was sent is never sent again: the node may
// have committed it, and a second node would commit it a second time.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	write := method != http.MethodGet
	var errs []error
	var noLeader *apiError
	for _, ep := range c.order() {
		sent, err := c.once(ctx, ep, method, path, payload, out)
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == api.CodeNoLeader && ctx.Err() == nil {
			noLeader = ae
			ae.Message = ep + ": " + ae.Message
			continue
		}
		if err == nil || errors.As(err, &ae) {
			c.mu.Lock()
			c.answered = ep
			c.mu.Unlock()
			return err
		}
		if ctx.Err() != nil && parent.Err() == nil {
			err = fmt.Errorf("no reply within --timeout %s: %w", c.timeout, err)
		}
		if write && sent {
			return fmt.Errorf("%s: %w; the write may have been committed: check 'drwatch history' before repeating it", ep, err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
		if ctx.Err() != nil {
			break
		}
	}
	if noLeader != nil {
		if len(errs) > 0 {
			noLeader.Message += "; the other nodes did not answer: " + errors.Join(errs...).Error()
		}
		return noLeader // exit 3, as a refusal: no node could commit it
	}
	return fmt.Errorf("no node answered: %w", errors.Join(errs...))
}

// once calls one endpoint. sent is false when no connection to it was made,
// so nothing of the request can have reached it.
func (c *client) once(ctx context.Context, ep, method, path string, payload []byte, out any) (sent bool, err error) {
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	})
	defer func() { sent = connected.Load() }()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, ep+path, rd)
	if err != nil {
		return false, err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return true, err
	}
	if resp.StatusCode >= 300 {
		var eb api.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			return true, &apiError{Status: resp.StatusCode, ErrorDetail: eb.Error}
		}
		return true, &apiError{Status: resp.StatusCode, ErrorDetail: api.ErrorDetail{Code: api.CodeInternal,
			Message: fmt.Sprintf("http %d from %s", resp.StatusCode, ep)}}
	}
	if out == nil {
		return true, nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return true, fmt.Errorf("reply from %s: %w", ep, err)
	}
	return true, nil
}

func (c *client) status(ctx context.Context) (api.Status, error) { return c.groupStatus(ctx, "") }

// groupStatus is the status of failover group ("" for the default one).
func (c *client) groupStatus(ctx context.Context, group string) (api.Status, error) {
	var s api.Status
	err := c.do(ctx, http.MethodGet, withGroup("/api/v1/status", group), nil, &s)
	return s, err
}

// withGroup adds ?group= to a read's path when group names one.
func withGroup(path, group string) string {
	if group == "" {
		return path
	}
	return path + "?group=" + url.QueryEscape(group)
}
