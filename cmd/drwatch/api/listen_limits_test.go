package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/drwatch/drwatch/test/idleconn"
	"github.com/drwatch/drwatch/test/poll"
)

// loadedWait bounds what these tests wait for: a loaded 2-core machine
// under -race, not a speed. A client shed by the listener fails at once,
// so it does not hide a lock-out.
const loadedWait = 30 * time.Second

// startAPI serves the API on a loopback port with the budget Listen
// derives from this process's file limit, and returns its address.
func startAPI(t *testing.T) (addr string, client *http.Client) {
	t.Helper()
	a := serveAPI(t, nil, Options{})
	return a.addr, a.client
}

// testAPI is an API served on a loopback port for a test.
type testAPI struct {
	addr   string
	client *http.Client // without keep-alive, from 127.0.0.1
	roots  *x509.CertPool
	table  *connTable // the table serveAPI was given; nil for Listen's own
}

// serveAPI serves the API with table's limits, or Listen's own when nil.
func serveAPI(t *testing.T, table *connTable, o Options) testAPI {
	t.Helper()
	pki := newTestPKI(t, "api-test")
	np, nk := pki.node("a", time.Hour)
	creds, err := cluster.CredentialsFromPEM(pki.pem, np, nk)
	if err != nil {
		t.Fatal(err)
	}
	// Listen does not say which port it bound: reserve one first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	var srv *http.Server
	if table == nil {
		srv, _, err = Listen(addr, ServerTLS(creds, false), &pageBackend{st: fxFailedOver()}, o)
	} else {
		srv, _, err = listen(addr, ServerTLS(creds, false), &pageBackend{st: fxFailedOver()}, o, table)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
	})
	client := &http.Client{Timeout: loadedWait, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.roots}, DisableKeepAlives: true}}
	return testAPI{addr: addr, client: client, roots: pki.roots, table: table}
}

// TestAPIListenerLimitsIdleConnectionsPerSource: one address holds at most
// apiMaxPendingPerSource connections that have not sent a request, and
// meanwhile another client is served.
func TestAPIListenerLimitsIdleConnectionsPerSource(t *testing.T) {
	addr, client := startAPI(t)
	held, closeAll := idleconn.Held(t, addr, net.IPv4(127, 4, 0, 1), 2*apiMaxPendingPerSource)
	defer closeAll()
	if held != apiMaxPendingPerSource {
		t.Errorf("%d idle connections from one address: got %d held, want %d", 2*apiMaxPendingPerSource, held, apiMaxPendingPerSource)
	}
	resp, err := client.Get("https://" + addr + "/livez")
	if err != nil {
		t.Fatalf("a client while one address is at its limit: %v", err)
	}
	resp.Body.Close()
	// A connection that has sent its request no longer counts: the same
	// address gets new slots once its idle ones are gone.
	closeAll()
	if !poll.Within(loadedWait, func() bool {
		n, c := idleconn.Held(t, addr, net.IPv4(127, 4, 0, 1), apiMaxPendingPerSource)
		c()
		return n == apiMaxPendingPerSource
	}) {
		t.Errorf("after closing its idle connections: the address not admitted again within %s", loadedWait)
	}
}

// TestAPIServesDuringIdleFlood holds 1,000 idle connections from 500
// loopback addresses and checks the API still answers a client at its
// first try: shed, it would fail at once; queued behind the idle ones, it
// would wait for their handshake timeouts one after another.
func TestAPIServesDuringIdleFlood(t *testing.T) {
	addr, client := startAPI(t)
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := range 500 {
		src := net.IPv4(127, 5, byte(i/250), byte(i%250+1))
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: time.Second}
		for range 2 {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			closers = append(closers, func() { _ = c.Close() })
		}
	}
	start := time.Now()
	resp, err := client.Get("https://" + addr + "/livez")
	if err != nil {
		t.Fatalf("a client during a flood of 1,000 idle connections: %v", err)
	}
	resp.Body.Close()
	t.Logf("a client during the flood: served in %v", time.Since(start))
}
