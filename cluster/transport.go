package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// One port carries both raft and the cluster RPC. After the TLS handshake
// the client writes one byte naming the protocol (as Consul does), so a
// single firewall rule and a single certificate check cover both.
const (
	protoRaft byte = 'R'
	protoRPC  byte = 'F'
)

// mux owns the listener. A goroutine accepts raw TCP connections and hands
// each to its own handshake goroutine; only verified connections come out,
// raft's through raftConns and RPC connections to onRPC.
type mux struct {
	ln               net.Listener
	advertise        net.Addr
	creds            *Credentials
	allowed          func(id string) bool
	expected         func(addr string) string
	isPeerIP         func(ip netip.Addr) bool // reserved handshake slots (admission.go)
	dialer           func(ctx context.Context, addr string) (net.Conn, error)
	handshakeTimeout time.Duration
	onRPC            func(conn net.Conn, peer string)
	onPeer           func(id string) // every verified connection, either way
	// onStreamEnd is told the peer of an inbound raft stream that the
	// peer ended (not this node: a shutdown or a drain), as a crashed
	// process's kernel does.
	onStreamEnd  func(peer string)
	logger       *slog.Logger
	refusals     *refusalLog
	refusedTotal prometheus.Counter

	raftConns chan net.Conn
	slots     *HandshakeSlots // handshakes in flight, by source

	mu       sync.Mutex
	conns    map[net.Conn]struct{} // every conn in or out, closed at shutdown
	closed   bool
	draining bool // inbound raft streams are refused (drainInbound)
	done     chan struct{}
	wg       sync.WaitGroup
}

func (m *mux) start() {
	m.raftConns = make(chan net.Conn)
	m.slots = NewHandshakeSlots(maxPendingHandshakes, maxPendingPerSource, reservedPerPeer)
	m.conns = make(map[net.Conn]struct{})
	m.done = make(chan struct{})
	m.wg.Add(1)
	go m.acceptLoop()
}

func (m *mux) acceptLoop() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. EMFILE): back off a little, like net/http.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-m.done:
				t.Stop()
				return
			}
			continue
		}
		delay = 0
		src := SourceIP(c)
		release, ok := m.slots.Take(src, m.isPeerIP(src))
		if !ok {
			_ = c.Close() // shed load rather than stall Accept
			continue
		}
		if !m.track(c) {
			release()
			_ = c.Close()
			return
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.handshake(c, release)
		}()
	}
}

// track registers c for closing at shutdown; false once shut down.
func (m *mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.conns[c] = struct{}{}
	return true
}

func (m *mux) untrack(c net.Conn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.mu.Unlock()
}

// handshake verifies raw and reads its protocol byte within the handshake
// timeout, then gives its admission slot back with release.
func (m *mux) handshake(raw net.Conn, release func()) {
	_ = raw.SetDeadline(time.Now().Add(m.handshakeTimeout))
	tc := tls.Server(raw, m.creds.serverTLS(m.allowed))
	ctx, cancel := context.WithTimeout(context.Background(), m.handshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	var proto [1]byte
	if err == nil {
		_, err = tc.Read(proto[:])
	}
	release()
	if err != nil {
		m.untrack(raw)
		m.refused("inbound", raw.RemoteAddr().String(), err)
		_ = raw.Close()
		return
	}
	_ = raw.SetDeadline(time.Time{})
	peer := m.creds.peerID(tc)
	if m.onPeer != nil && peer != "" {
		m.onPeer(peer)
	}
	switch proto[0] {
	case protoRaft:
		// raft owns it from here, but raft's transport never closes the
		// connections it accepted; the wrapper keeps it on our list so
		// shutdown can.
		m.untrack(raw)
		c, ok := m.wrap(tc, true)
		if !ok {
			return
		}
		c.(*trackedConn).peer = peer
		select {
		case m.raftConns <- c:
		case <-m.done:
			_ = c.Close()
		}
	case protoRPC:
		m.onRPC(tc, peer) // returns when the conn ends
		m.untrack(raw)
		_ = tc.Close()
	default:
		m.untrack(raw)
		m.refused("inbound", raw.RemoteAddr().String(), fmt.Errorf("unknown protocol byte %#x", proto[0]))
		_ = tc.Close()
	}
}

// peerID is the verified identity of the peer on an established conn.
func (c *Credentials) peerID(tc *tls.Conn) string {
	cs := tc.ConnectionState()
	if len(cs.PeerCertificates) == 0 {
		return ""
	}
	id, _ := NodeIDFromCert(cs.PeerCertificates[0])
	return id
}

// refused logs a refused or failed connection at most once per peer and
// reason per interval, and counts every one.
func (m *mux) refused(direction, remote string, err error) {
	m.refusedTotal.Inc()
	var r *refusal
	peer, reason := "", err.Error()
	key := direction + "|" + hostOf(remote) + "|"
	if errors.As(err, &r) {
		peer, reason = r.peer, r.reason
		key += peer + "|" + reason
	} else {
		key += "handshake" // free-form errors vary; one line per host is enough
	}
	if !m.refusals.allow(key, time.Now()) {
		return
	}
	m.logger.Warn("peer refused", "direction", direction, "remote", remote, "peer", peer, "reason", reason)
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// dial opens a verified connection to the node expectedID at addr and
// announces proto.
func (m *mux) dial(ctx context.Context, addr, expectedID string, proto byte) (net.Conn, error) {
	raw, err := m.dialer(ctx, addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(raw, m.creds.clientTLS(expectedID))
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		m.refused("outbound", addr, err)
		return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = tc.SetWriteDeadline(dl)
	}
	if _, err := tc.Write([]byte{proto}); err != nil {
		_ = abort(tc) // the peer is not reading: no goodbye
		return nil, fmt.Errorf("announce protocol to %s: %w", addr, err)
	}
	_ = tc.SetWriteDeadline(time.Time{})
	if m.onPeer != nil && expectedID != "" {
		m.onPeer(expectedID)
	}
	c, ok := m.wrap(tc, false)
	if !ok {
		return nil, ErrShutdown
	}
	return c, nil
}

// trackedConn is a connection the mux closes at shutdown unless its owner
// closed it first. raft's NetworkTransport closes neither the connections
// it accepted nor its pooled ones, so after an in-process Shutdown (tests,
// or a restart inside one process) peers would otherwise wait forever on
// sockets nobody closes.
type trackedConn struct {
	net.Conn
	m        *mux
	once     sync.Once
	inbound  bool          // a raft stream a peer opened to us
	peer     string        // an inbound stream's verified peer
	ended    sync.Once     // onStreamEnd told
	closed   chan struct{} // closed by Close
	draining atomic.Bool
}

func (c *trackedConn) Close() error {
	c.forget()
	return c.Conn.Close()
}

func (c *trackedConn) forget() {
	c.once.Do(func() {
		c.m.untrack(c)
		close(c.closed)
	})
}

// abort closes c's socket at once, without TLS's goodbye: crypto/tls
// gives the close_notify alert five seconds to be written, and a peer that
// stopped reading (wedged, or its receive window full) holds the closer
// that long. Use it for a connection already broken (a failed or timed-out
// exchange), where the goodbye tells the peer nothing; the peer reads the
// socket's end as the connection's end.
func abort(c net.Conn) error {
	if t, ok := c.(*trackedConn); ok {
		t.forget()
		c = t.Conn
	}
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn().Close()
	}
	return c.Close()
}

// Read ends a drained stream with io.EOF: raft's NetworkTransport takes
// that as the peer closing the stream, and logs any other read error at
// ERROR ("failed to decode incoming command").
//
// An inbound stream that the peer ended (any read error this node did not
// cause by closing or draining it) is told to onStreamEnd once.
func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && c.draining.Load() {
		return n, io.EOF
	}
	if err != nil && c.inbound && c.peer != "" && c.m.onStreamEnd != nil {
		select {
		case <-c.closed: // we closed it
		default:
			c.ended.Do(func() { c.m.onStreamEnd(c.peer) })
		}
	}
	return n, err
}

// drain makes the stream end at its next read, waking a read that waits
// for the peer's next command. Writes still work, so a command raft is
// answering gets its reply.
func (c *trackedConn) drain() {
	c.draining.Store(true)
	_ = c.Conn.SetReadDeadline(time.Now())
}

// wrap tracks c; false (and c closed) once the mux is shut down, or, for
// an inbound stream, draining.
func (m *mux) wrap(c net.Conn, inbound bool) (net.Conn, bool) {
	t := &trackedConn{Conn: c, m: m, inbound: inbound, closed: make(chan struct{})}
	m.mu.Lock()
	refuse := inbound && m.draining
	m.mu.Unlock()
	if refuse || !m.track(t) {
		_ = c.Close()
		return nil, false
	}
	return t, true
}

// drainInbound is the first step of a graceful stop: every raft stream a
// peer opened ends at its next read, as if the peer had closed it, and new
// ones are refused. It returns once raft has closed them all, or when ctx
// ends. Closing them under raft instead (mux.close) fails its reads with
// "use of closed network connection", and a command caught between read
// and reply fails with "transport shutdown"; raft logs both at ERROR.
func (m *mux) drainInbound(ctx context.Context) {
	m.mu.Lock()
	m.draining = true
	var streams []*trackedConn
	for c := range m.conns {
		if t, ok := c.(*trackedConn); ok && t.inbound {
			streams = append(streams, t)
		}
	}
	m.mu.Unlock()
	for _, t := range streams {
		t.drain()
	}
	for _, t := range streams {
		select {
		case <-t.closed:
		case <-ctx.Done():
			return
		}
	}
}

// close stops accepting, closes every connection it still owns and waits
// for its goroutines.
func (m *mux) close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.done)
	conns := make([]net.Conn, 0, len(m.conns))
	for c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	_ = m.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	m.wg.Wait()
}

// raftLayer is the raft.StreamLayer view of the mux.
type raftLayer struct {
	m       *mux
	timeout time.Duration
	once    sync.Once
	closed  chan struct{}
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func newRaftLayer(m *mux) *raftLayer { return &raftLayer{m: m, closed: make(chan struct{})} }

// Accept returns the next verified raft connection.
func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.m.raftConns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; the listener itself belongs to the mux.
func (l *raftLayer) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is the advertised address: raft puts it in its configuration.
func (l *raftLayer) Addr() net.Addr { return l.m.advertise }

// Dial opens a verified raft connection to whoever the configuration says
// lives at address.
func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	addr := string(address)
	return l.m.dial(ctx, addr, l.m.expected(addr), protoRaft)
}

// refusalLog remembers when each key was last logged, so a peer that
// retries every few milliseconds produces one line per interval.
type refusalLog struct {
	mu       sync.Mutex
	interval time.Duration
	last     map[string]time.Time
}

const maxRefusalKeys = 1024

func (r *refusalLog) allow(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.last[key]; ok && now.Sub(t) < r.interval {
		return false
	}
	if len(r.last) >= maxRefusalKeys {
		for k, t := range r.last {
			if now.Sub(t) >= r.interval {
				delete(r.last, k)
			}
		}
		if len(r.last) >= maxRefusalKeys {
			return false // a flood of distinct keys: stay quiet, the counter still counts
		}
	}
	r.last[key] = now
	return true
}

// tcpAddr is a net.Addr for an advertised host:port string.
type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }
