package api

import (
	"crypto/tls"
	"errors"
	"math"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/idleconn"
	"github.com/drwatch/drwatch/test/poll"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// smallLimits is a budget a test can fill from a handful of addresses.
func smallLimits() connLimits {
	return connLimits{total: 16, perSource: 4, pending: 1024, pendingPerSource: 8, idleTimeout: time.Minute}
}

// keptAlive is a connection served GET /livez and kept alive.
type keptAlive = idleconn.KeptAlive

// dialKeptAlive opens a kept-alive connection to a from src, closed at
// the end of the test.
func dialKeptAlive(t *testing.T, a testAPI, src net.IP) (*keptAlive, error) {
	t.Helper()
	k, err := idleconn.DialKeptAlive(a.addr, src, &tls.Config{RootCAs: a.roots}, "/livez")
	if err != nil {
		return k, err
	}
	t.Cleanup(func() { _ = k.Close() })
	waitIdle(t, a, k)
	return k, nil
}

// waitIdle waits until the server has marked k idle. The client reads the
// response before the server's ConnState hook runs, so without this wait
// the next connection could find k still busy and the caps would count it
// as busy, not as room.
func waitIdle(t *testing.T, a testAPI, k *keptAlive) {
	t.Helper()
	if a.table == nil {
		return
	}
	local := k.LocalAddr().String()
	poll.For(t, loadedWait, "the server to mark the kept-alive connection from "+local+" idle", func() bool {
		a.table.mu.Lock()
		defer a.table.mu.Unlock()
		for e := a.table.idle.Front(); e != nil; e = e.Next() {
			if e.Value.(*trackedConn).RemoteAddr().String() == local {
				return true
			}
		}
		return false
	})
}

// stillOpen counts the connections the server has not closed.
func stillOpen(conns []*keptAlive) int {
	var cs []net.Conn
	for _, k := range conns {
		cs = append(cs, k.Conn)
	}
	return idleconn.Open(cs)
}

// TestAPIListenerCapsKeptAliveConnectionsPerSource: one address that
// opens many connections, each served one request and kept alive, keeps at
// most perSource of them (its newest: each new one closes its own idle
// longest), while another address's connections are left alone.
func TestAPIListenerCapsKeptAliveConnectionsPerSource(t *testing.T) {
	l := smallLimits()
	tb := newConnTable(l)
	reg := prometheus.NewRegistry()
	a := serveAPI(t, tb, Options{Registerer: reg})
	other, err := dialKeptAlive(t, a, net.IPv4(127, 6, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	var flood []*keptAlive
	for i := range 3 * l.perSource {
		k, err := dialKeptAlive(t, a, net.IPv4(127, 6, 0, 1))
		if err != nil {
			t.Fatalf("connection %d from the flooding address: %v", i, err)
		}
		flood = append(flood, k)
	}
	if got := stillOpen(flood); got != l.perSource {
		t.Errorf("%d kept-alive connections from one address: %d still open, want %d", len(flood), got, l.perSource)
	}
	if got := stillOpen(flood[len(flood)-l.perSource:]); got != l.perSource {
		t.Errorf("the address's newest %d connections: %d open, want all", l.perSource, got)
	}
	if err := other.Get("/livez"); err != nil {
		t.Errorf("another address's kept-alive connection, after the flood: %v", err)
	}
	if got := counterValue(t, tb.evicted, "source"); got != float64(2*l.perSource) {
		t.Errorf("idle connections closed for the per-source cap: metric %v, want %d", got, 2*l.perSource)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	for _, want := range []string{"drwatch_api_refused_connections_total", "drwatch_api_idle_connections_closed_total", "drwatch_api_open_connections", "drwatch_api_connection_limit"} {
		if !slices.Contains(names, want) {
			t.Errorf("metrics registered with Options.Registerer: %v, want %s among them", names, want)
		}
	}
}

// TestAPIListenerRefusesPastPerSourceCapWhenNoneIdle: an address whose
// open connections are all busy (here: no request sent yet) gets no more,
// even below the handshake cap; another address does.
func TestAPIListenerRefusesPastPerSourceCapWhenNoneIdle(t *testing.T) {
	l := smallLimits()
	tb := newConnTable(l)
	a := serveAPI(t, tb, Options{})
	k, err := dialKeptAlive(t, a, net.IPv4(127, 6, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Get("/livez"); err != nil { // busy, not idle, while it sends
		t.Fatal(err)
	}
	waitIdle(t, a, k)
	// One served and idle: the silent ones take its place first.
	held, closeAll := idleconn.Held(t, a.addr, net.IPv4(127, 6, 1, 1), 2*l.perSource)
	defer closeAll()
	if held != l.perSource {
		t.Errorf("%d silent connections from an address at its cap: %d held, want %d", 2*l.perSource, held, l.perSource)
	}
	if n, c := idleconn.Held(t, a.addr, net.IPv4(127, 6, 1, 2), 1); n != 1 {
		t.Errorf("another address: %d of 1 held", n)
	} else {
		c()
	}
	if got := counterValue(t, tb.refused, "source"); got < float64(l.perSource-1) {
		t.Errorf("connections refused for the per-source cap: metric %v, want at least %d", got, l.perSource-1)
	}
}

// TestAPIListenerCapsOpenConnectionsInAll: several addresses, each within
// its own cap, fill the total; a new client from elsewhere is still served
// (an idle connection makes room) and the total is never exceeded; with
// every connection busy, the new one is refused.
func TestAPIListenerCapsOpenConnectionsInAll(t *testing.T) {
	l := smallLimits()
	tb := newConnTable(l)
	a := serveAPI(t, tb, Options{})
	var kept []*keptAlive
	for s := range l.total / l.perSource {
		for range l.perSource {
			k, err := dialKeptAlive(t, a, net.IPv4(127, 7, 0, byte(s+1)))
			if err != nil {
				t.Fatal(err)
			}
			kept = append(kept, k)
		}
	}
	resp, err := a.client.Get("https://" + a.addr + "/livez")
	if err != nil {
		t.Fatalf("another client while the total is held by idle connections: %v", err)
	}
	resp.Body.Close()
	newer, err := dialKeptAlive(t, a, net.IPv4(127, 7, 1, 1))
	if err != nil {
		t.Fatalf("a kept-alive connection from a new address at the total cap: %v", err)
	}
	if got := stillOpen(append(kept, newer)); got > l.total {
		t.Errorf("%d kept-alive connections from %d addresses: %d still open, want at most %d", len(kept)+1, l.total/l.perSource+1, got, l.total)
	}
	if got := counterValue(t, tb.evicted, "total"); got < 1 {
		t.Errorf("idle connections closed for the total cap: metric %v, want at least 1", got)
	}

	// Now fill the total with connections that never send a request.
	for _, k := range kept {
		_ = k.Close()
	}
	_ = newer.Close()
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	poll.For(t, 10*time.Second, "the closed connections to leave the table", func() bool {
		n, c := idleconn.Held(t, a.addr, net.IPv4(127, 7, 2, 1), l.perSource)
		closers = append(closers, c)
		return n == l.perSource
	})
	for s := 1; s < l.total/l.perSource; s++ {
		n, c := idleconn.Held(t, a.addr, net.IPv4(127, 7, 2, byte(s+1)), l.perSource)
		closers = append(closers, c)
		if n != l.perSource {
			t.Fatalf("address %d of %d filling the total: %d of %d held", s+1, l.total/l.perSource, n, l.perSource)
		}
	}
	if n, c := idleconn.Held(t, a.addr, net.IPv4(127, 7, 3, 1), 1); n != 0 {
		c()
		t.Errorf("a connection past a total of busy ones: held, want refused")
	}
	if got := counterValue(t, tb.refused, "total"); got < 1 {
		t.Errorf("connections refused for the total cap: metric %v, want at least 1", got)
	}
}

// TestAPIListenerClosesIdleKeptAliveConnectionAtIdleTimeout: a kept-alive
// connection that sends nothing more is closed once the idle timeout has
// passed; one that keeps sending requests more often is not idle and
// keeps its connection past it.
func TestAPIListenerClosesIdleKeptAliveConnectionAtIdleTimeout(t *testing.T) {
	l := smallLimits()
	l.idleTimeout = 2 * time.Second
	a := serveAPI(t, newConnTable(l), Options{})
	idle, err := dialKeptAlive(t, a, net.IPv4(127, 8, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	busy, err := dialKeptAlive(t, a, net.IPv4(127, 8, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	// Requests every idle timeout / 4, for twice the idle timeout.
	start := time.Now()
	for time.Since(start) < 2*l.idleTimeout {
		time.Sleep(l.idleTimeout / 4) // the pace of a client that is not idle, not a wait for the server
		if err := busy.Get("/livez"); err != nil {
			t.Fatalf("a connection sending a request every %v, after %v: %v", l.idleTimeout/4, time.Since(start), err)
		}
	}
	poll.For(t, 30*time.Second, "the idle connection to be closed", func() bool { return stillOpen([]*keptAlive{idle}) == 0 })
}

// TestAPIConnBudgetKeepsTheFileReserve: the API's total cap is what the
// open file limit leaves past the reserve, at most apiMaxConns; a limit
// leaving too little is refused at start.
func TestAPIConnBudgetKeepsTheFileReserve(t *testing.T) {
	for _, tt := range []struct {
		files uint64
		want  int
	}{
		{1200, 1200 - apiFileReserve},
		{apiFileReserve + apiMinConns, apiMinConns},
		{1 << 20, apiMaxConns},
		{math.MaxUint64, apiMaxConns}, // RLIM_INFINITY
	} {
		got, err := apiConnBudget(tt.files)
		if err != nil || got != tt.want {
			t.Errorf("file limit %d: got %d, %v; want %d", tt.files, got, err, tt.want)
		}
	}
	for _, files := range []uint64{0, 1024 - apiFileReserve, apiFileReserve + apiMinConns - 1} {
		if _, err := apiConnBudget(files); !errors.Is(err, ErrFileLimitTooLow) {
			t.Errorf("file limit %d: got %v, want ErrFileLimitTooLow", files, err)
		}
	}
}

// counterValue reads table's counter vector v at reason.
func counterValue(t *testing.T, v *prometheus.CounterVec, reason string) float64 {
	t.Helper()
	var m dto.Metric
	if err := v.WithLabelValues(reason).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
