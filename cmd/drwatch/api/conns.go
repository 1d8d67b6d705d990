package api

import (
	"container/list"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/prometheus/client_golang/prometheus"
)

// The connection budget of the API port; docs/security.md, "Connection
// budget", says the same for operators. A connection costs a file
// descriptor and some memory in every state, so the caps count open
// connections of any state, not only those that have not sent a request.
const (
	// apiMaxPendingHandshakes and apiMaxPendingPerSource limit connections
	// that have not sent their first request (the TLS handshake, then the
	// request), which must arrive within ReadHeaderTimeout.
	apiMaxPendingHandshakes = 1024
	apiMaxPendingPerSource  = 8
	// apiMaxConnsPerSource caps one address's open connections. A browser
	// or a scraper needs a handful; a NAT in front of many operators
	// may need more, and its idle ones make room (see connTable.admit).
	apiMaxConnsPerSource = 32
	// apiMaxConns caps open API connections in all, whatever the file
	// limit: about 36 KiB of memory each once they have been served.
	apiMaxConns = 2048
	// apiFileReserve descriptors are never the API's: the raft port's
	// handshake budget (128 shared, 16 per peer) and its established
	// streams, the probes, the data directory (raft log, snapshots),
	// DNS updates and the process's own (stdio, epoll, listeners).
	apiFileReserve = 512
	// apiMinConns is the least budget a node starts with: a file limit
	// that leaves fewer past the reserve is a misconfiguration.
	apiMinConns = 64
	// apiIdleTimeout closes a keep-alive connection that has sent no new
	// request since its last response. A client that keeps sending
	// (every 40 s, say) is not idle and keeps its connection, within its
	// source's cap.
	apiIdleTimeout = 60 * time.Second
)

// ErrFileLimitTooLow means the process may not open enough files to keep
// the reserve for raft and the probes and still serve the API.
var ErrFileLimitTooLow = errors.New("open file limit too low")

// connLimits are the caps one API listener enforces; tests shrink them.
type connLimits struct {
	total, perSource          int
	pending, pendingPerSource int
	idleTimeout               time.Duration
}

// defaultConnLimits sizes the total cap from the process's open file
// limit as it is now: Go raises the soft limit to the hard one at start
// (since 1.19), so this is the most the process can ever open.
func defaultConnLimits() (connLimits, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return connLimits{}, fmt.Errorf("read open file limit: %w", err)
	}
	total, err := apiConnBudget(lim.Cur)
	if err != nil {
		return connLimits{}, err
	}
	return connLimits{
		total: total, perSource: apiMaxConnsPerSource,
		pending: apiMaxPendingHandshakes, pendingPerSource: apiMaxPendingPerSource,
		idleTimeout: apiIdleTimeout,
	}, nil
}

// apiConnBudget is how many connections the API may hold open in a
// process that may open files descriptors: what the reserve leaves, at
// most apiMaxConns.
func apiConnBudget(files uint64) (int, error) {
	if files < apiFileReserve+apiMinConns {
		return 0, fmt.Errorf("%w: %d, want at least %d (%d kept for raft and probes, %d for the API)",
			ErrFileLimitTooLow, files, apiFileReserve+apiMinConns, apiFileReserve, apiMinConns)
	}
	return int(min(files-apiFileReserve, apiMaxConns)), nil
}

// Reasons a connection is refused or an idle one closed to make room, the
// reason label of the metrics.
const (
	reasonHandshakes = "handshakes" // no handshake slot for its source or in all
	reasonSource     = "source"     // its source is at apiMaxConnsPerSource
	reasonTotal      = "total"      // the API is at its total cap
)

// connTable admits and counts the API's open connections: per source and
// in all, in every state until closed. At a cap, a new connection closes
// the connection idle longest (of its source at the per-source cap, of
// anyone at the total): an idle keep-alive connection costs its client
// only a reconnect, while a refused one locks the client out. With none
// idle, the new connection is closed at once. Safe for concurrent use.
type connTable struct {
	limits  connLimits
	pending *cluster.HandshakeSlots
	refused *prometheus.CounterVec
	evicted *prometheus.CounterVec

	mu       sync.Mutex
	open     int
	bySource map[netip.Addr][]*trackedConn
	idle     list.List // of *trackedConn, idle longest first
	idleSeq  uint64    // counts transitions to idle, to order them
}

func newConnTable(l connLimits) *connTable {
	t := &connTable{
		limits:   l,
		pending:  cluster.NewHandshakeSlots(l.pending, l.pendingPerSource, 0),
		bySource: map[netip.Addr][]*trackedConn{},
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drwatch_api_refused_connections_total",
			Help: "API connections closed at accept, by the cap they met: handshakes, source or total.",
		}, []string{"reason"}),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drwatch_api_idle_connections_closed_total",
			Help: "Idle keep-alive API connections closed to admit a new one, by the cap it met: source or total.",
		}, []string{"reason"}),
	}
	for _, r := range []string{reasonHandshakes, reasonSource, reasonTotal} {
		t.refused.WithLabelValues(r)
		if r != reasonHandshakes {
			t.evicted.WithLabelValues(r)
		}
	}
	return t
}

// collectors are the table's metrics, for a node's registry.
func (t *connTable) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		t.refused, t.evicted,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "drwatch_api_open_connections",
			Help: "API connections open now, in any state.",
		}, func() float64 { return float64(t.openConns()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "drwatch_api_connection_limit",
			Help: "Most API connections open at once: the open file limit less the reserve, at most 2048.",
		}, func() float64 { return float64(t.limits.total) }),
	}
}

func (t *connTable) openConns() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open
}

// trackedConn is an admitted connection. It holds a handshake slot until
// it leaves http.StateNew, and its place in the table until closed.
type trackedConn struct {
	net.Conn
	src   netip.Addr
	table *connTable

	pendingOnce    sync.Once
	releasePending func()

	// Guarded by table.mu.
	closed   bool
	idleElem *list.Element // set while idle
	idleSeq  uint64        // when it last went idle, in table order
}

func (c *trackedConn) sentRequest() { c.pendingOnce.Do(c.releasePending) }

func (c *trackedConn) Close() error {
	c.table.forget(c)
	c.sentRequest()
	return c.Conn.Close()
}

// admit returns c tracked, or false when c must be closed unserved.
func (t *connTable) admit(c net.Conn) (*trackedConn, bool) {
	src := cluster.SourceIP(c)
	release, ok := t.pending.Take(src, false)
	if !ok {
		t.refused.WithLabelValues(reasonHandshakes).Inc()
		return nil, false
	}
	t.mu.Lock()
	var victim *trackedConn
	reason := ""
	switch {
	case len(t.bySource[src]) >= t.limits.perSource:
		reason, victim = reasonSource, t.idlestOf(src)
	case t.open >= t.limits.total:
		reason = reasonTotal
		if e := t.idle.Front(); e != nil {
			victim = e.Value.(*trackedConn)
		}
	}
	if reason != "" && victim == nil {
		t.mu.Unlock()
		release()
		t.refused.WithLabelValues(reason).Inc()
		return nil, false
	}
	if victim != nil {
		t.forgetLocked(victim)
	}
	tc := &trackedConn{Conn: c, src: src, table: t, releasePending: release}
	t.open++
	t.bySource[src] = append(t.bySource[src], tc)
	t.mu.Unlock()
	if victim != nil {
		// The server's read on it fails and the server closes it again
		// through trackedConn.Close, which finds it forgotten.
		_ = victim.Conn.Close()
		t.evicted.WithLabelValues(reason).Inc()
	}
	return tc, true
}

// idlestOf is src's connection idle longest, nil if none is idle.
func (t *connTable) idlestOf(src netip.Addr) *trackedConn {
	var v *trackedConn
	for _, c := range t.bySource[src] {
		if c.idleElem != nil && (v == nil || c.idleSeq < v.idleSeq) {
			v = c
		}
	}
	return v
}

func (t *connTable) forget(c *trackedConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(c)
}

func (t *connTable) forgetLocked(c *trackedConn) {
	if c.closed {
		return
	}
	c.closed = true
	t.open--
	conns := t.bySource[c.src]
	for i, o := range conns {
		if o == c {
			conns[i] = conns[len(conns)-1]
			conns = conns[:len(conns)-1]
			break
		}
	}
	if len(conns) == 0 {
		delete(t.bySource, c.src)
	} else {
		t.bySource[c.src] = conns
	}
	t.setIdleLocked(c, false)
}

func (t *connTable) setIdleLocked(c *trackedConn, idle bool) {
	switch {
	case idle && c.idleElem == nil:
		t.idleSeq++
		c.idleSeq = t.idleSeq
		c.idleElem = t.idle.PushBack(c)
	case !idle && c.idleElem != nil:
		t.idle.Remove(c.idleElem)
		c.idleElem = nil
	}
}

// connState is the server's ConnState hook. A connection past
// http.StateNew gives its handshake slot back; one in http.StateIdle (a
// keep-alive connection between requests) may be closed to make room.
// ServeTLS hands the hook *tls.Conn wrappers.
func (t *connTable) connState(c net.Conn, s http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	tc, ok := c.(*trackedConn)
	if !ok || s == http.StateNew {
		return
	}
	tc.sentRequest()
	t.mu.Lock()
	defer t.mu.Unlock()
	if s == http.StateClosed {
		t.forgetLocked(tc)
		return
	}
	if !tc.closed {
		t.setIdleLocked(tc, s == http.StateIdle)
	}
}

// admitListener closes a connection at Accept when the table refuses it.
type admitListener struct {
	net.Listener
	table *connTable
}

func (l *admitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc, ok := l.table.admit(c); ok {
			return tc, nil
		}
		_ = c.Close()
	}
}
