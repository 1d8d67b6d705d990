package api

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/drwatch/drwatch/cluster"
)

// Listen starts the HTTPS API, status page and metrics of one node on addr.
// The returned channel receives the server's terminal error; Shutdown the
// server to stop it. Its connections are budgeted (see conns.go) from the
// process's open file limit, which must leave room for the reserve.
func Listen(addr string, tlsCfg *tls.Config, b Backend, o Options) (*http.Server, <-chan error, error) {
	limits, err := defaultConnLimits()
	if err != nil {
		return nil, nil, fmt.Errorf("api connection budget: %w", err)
	}
	return listen(addr, tlsCfg, b, o, newConnTable(limits))
}

// listen serves with table's budget: Listen's from the file limit, or a
// small one a test can fill.
func listen(addr string, tlsCfg *tls.Config, b Backend, o Options, table *connTable) (*http.Server, <-chan error, error) {
	if o.Registerer != nil {
		for _, c := range table.collectors() {
			if err := o.Registerer.Register(c); err != nil {
				return nil, nil, fmt.Errorf("register api metrics: %w", err)
			}
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("node.api_addr: %w", err)
	}
	h := NewServer(b, o)
	RegisterStatusPage(h, b)
	log := h.log
	srv := &http.Server{
		Handler: h, TLSConfig: tlsCfg,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: table.limits.idleTimeout,
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ConnState: table.connState,
	}
	errc := make(chan error, 1)
	go func() {
		if err := srv.ServeTLS(&admitListener{Listener: ln, table: table}, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	return srv, errc, nil
}

// ServerTLS serves the node's certificate as creds hold it at each
// handshake, so a reloaded certificate or CA bundle serves every new
// connection without a restart. Client certificates from the cluster CA
// (a client's from 'drwatch certs issue NAME --client', or a watcher's) are
// accepted; with requireClientCert (api.client_certs: required) a
// connection without one is refused during the handshake. Either way writes
// also need a bearer token.
func ServerTLS(creds *cluster.Credentials, requireClientCert bool) *tls.Config {
	auth := tls.VerifyClientCertIfGiven
	if requireClientCert {
		auth = tls.RequireAndVerifyClientCert
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*creds.Certificate()},
				ClientCAs:    creds.Roots(),
				ClientAuth:   auth,
			}, nil
		},
	}
}

// clientIdentity names the verified client certificate of r, if any:
// "client/alice" or "node/b"; empty without one.
func clientIdentity(r *http.Request) string {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return ""
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if name, err := cluster.ClientNameFromCert(leaf); err == nil {
		return cluster.ClientIdentityHost + "/" + name
	}
	if id, err := cluster.NodeIDFromCert(leaf); err == nil {
		return cluster.IdentityHost + "/" + id
	}
	return ""
}
