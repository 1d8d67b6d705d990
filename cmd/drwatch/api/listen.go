package api

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/drwatch/drwatch/cluster"
)

// Limits on API connections that have not sent their first request (the
// TLS handshake, then the request). Past them a new connection is closed
// at once. The handshake and the request headers must arrive within
// ReadHeaderTimeout (5 s). The total stays far below the descriptors the
// process may open, so a flood of the API port cannot starve the raft
// port of them; the per-source cap makes that flood need many addresses.
const (
	apiMaxPendingHandshakes = 1024
	apiMaxPendingPerSource  = 8
)

// Listen starts the HTTPS API, status page and metrics of one node on addr.
// The returned channel receives the server's terminal error; Shutdown the
// server to stop it.
func Listen(addr string, tlsCfg *tls.Config, b Backend, o Options) (*http.Server, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("node.api_addr: %w", err)
	}
	h := NewServer(b, o)
	RegisterStatusPage(h, b)
	log := h.log
	srv := &http.Server{
		Handler: h, TLSConfig: tlsCfg,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second,
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ConnState: admittedState,
	}
	aln := &admitListener{Listener: ln, slots: cluster.NewHandshakeSlots(apiMaxPendingHandshakes, apiMaxPendingPerSource, 0)}
	errc := make(chan error, 1)
	go func() {
		if err := srv.ServeTLS(aln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	return srv, errc, nil
}

// admitListener sheds a connection at Accept when its source has no slot
// left; an admitted one holds its slot until it leaves http.StateNew (it
// has sent a request, or closed).
type admitListener struct {
	net.Listener
	slots *cluster.HandshakeSlots
}

func (l *admitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		release, ok := l.slots.Take(cluster.SourceIP(c), false)
		if !ok {
			_ = c.Close()
			continue
		}
		return &admittedConn{Conn: c, release: release}, nil
	}
}

type admittedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *admittedConn) admitted() { c.once.Do(c.release) }

func (c *admittedConn) Close() error {
	c.admitted()
	return c.Conn.Close()
}

// admittedState gives a connection's slot back once it is past
// http.StateNew. ServeTLS hands the server *tls.Conn wrappers.
func admittedState(c net.Conn, s http.ConnState) {
	if s == http.StateNew {
		return
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if ac, ok := c.(*admittedConn); ok {
		ac.admitted()
	}
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
