package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
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
	timeout   time.Duration
}

func (f *clientFlags) register(c *cobra.Command) {
	fs := c.PersistentFlags()
	fs.StringSliceVar(&f.endpoints, "endpoint", nil, "API URL of any node, e.g. https://10.1.0.5:7480 (repeatable; env DRWATCH_ENDPOINT, comma-separated)")
	fs.StringVarP(&f.config, "config", "c", "", "a node's config file: the peers' api_addr and the CA are taken from it (env DRWATCH_CONFIG)")
	fs.StringVar(&f.caFile, "ca-file", "", "CA bundle to verify the API (env DRWATCH_CA_FILE)")
	fs.StringVar(&f.certFile, "cert-file", "", "client certificate to present, from 'drwatch certs issue NAME --client' (env DRWATCH_CERT_FILE; needed where api.client_certs is required)")
	fs.StringVar(&f.keyFile, "key-file", "", "the client certificate's key (env DRWATCH_KEY_FILE)")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token for writes (env DRWATCH_TOKEN_FILE, or the token itself in DRWATCH_TOKEN)")
	fs.DurationVar(&f.timeout, "timeout", 20*time.Second, "timeout of each API call")
}

// client talks to any node of the cluster: it tries each endpoint in turn
// until one answers (any node serves reads and forwards writes).
type client struct {
	endpoints []string
	http      *http.Client
	token     string
	timeout   time.Duration
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
	caFile := firstNonEmpty(f.caFile, os.Getenv("DRWATCH_CA_FILE"))
	certFile := firstNonEmpty(f.certFile, os.Getenv("DRWATCH_CERT_FILE"))
	keyFile := firstNonEmpty(f.keyFile, os.Getenv("DRWATCH_KEY_FILE"))
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
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("ca file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca file %s: no certificate", caFile)
		}
		tlsCfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, usageError{errors.New("--cert-file and --key-file go together (or DRWATCH_CERT_FILE and DRWATCH_KEY_FILE)")}
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s: %w", certFile, err)
		}
		tlsCfg.Certificates = []tls.Certificate{pair}
	}
	c := &client{endpoints: eps, timeout: f.timeout,
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: nil,
			DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}}}
	if needToken {
		tok, err := readToken(firstNonEmpty(f.tokenFile, os.Getenv("DRWATCH_TOKEN_FILE")))
		if err != nil {
			return nil, err
		}
		c.token = tok
	}
	return c, nil
}

func readToken(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if i := strings.IndexByte(tok, ':'); i >= 0 && !strings.Contains(tok, "\n") {
			tok = tok[i+1:] // an "actor:token" line from the tokens file
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

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// do calls path on the first endpoint that answers. A reply, even an error
// reply, ends the search; only transport failures and no_leader (this node
// knows no leader and committed nothing) move to the next node.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return err
		}
	}
	var errs []error
	var noLeader *apiError
	for _, ep := range c.endpoints {
		err := c.once(ctx, ep, method, path, payload, out)
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == api.CodeNoLeader && ctx.Err() == nil {
			noLeader = ae
			ae.Message = ep + ": " + ae.Message
			continue
		}
		if err == nil || errors.As(err, &ae) || ctx.Err() != nil {
			return err
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, err))
	}
	if noLeader != nil {
		if len(errs) > 0 {
			noLeader.Message += "; the other nodes did not answer: " + errors.Join(errs...).Error()
		}
		return noLeader // exit 3, as a refusal: no node could commit it
	}
	return fmt.Errorf("no node answered: %w", errors.Join(errs...))
}

func (c *client) once(ctx context.Context, ep, method, path string, payload []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, ep+path, rd)
	if err != nil {
		return err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var eb api.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
			return &apiError{Status: resp.StatusCode, ErrorDetail: eb.Error}
		}
		return &apiError{Status: resp.StatusCode, ErrorDetail: api.ErrorDetail{Code: api.CodeInternal,
			Message: fmt.Sprintf("http %d from %s", resp.StatusCode, ep)}}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("reply from %s: %w", ep, err)
	}
	return nil
}

func (c *client) status(ctx context.Context) (api.Status, error) {
	var s api.Status
	err := c.do(ctx, http.MethodGet, "/api/v1/status", nil, &s)
	return s, err
}
