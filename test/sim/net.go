package sim

import (
	"context"
	"errors"
	"net"
	"sync"
)

// network carries the cluster RPC (a follower forwarding to the leader)
// between the simulated nodes: net.Pipe connections, so every read and
// write blocks on channels of the bubble, never on a socket. Raft itself
// runs on raft.InmemTransport; a partition cuts both.
//
// A cut has a direction: cutting from->to stops from opening connections
// to to and closes those it opened (a lost route ends TCP streams), and
// with loseReplies, what from writes on a connection to opened is lost on
// the way, so to waits for a reply until its deadline. to's requests
// still reach from.
// A symmetric partition cuts both directions.
type network struct {
	mu        sync.Mutex
	listeners map[string]*listener     // by raft address
	cut       map[[2]string]bool       // {from, to}: from cannot reach to
	conns     map[[2]string][]*simConn // open conns by {dialer, listener}, closed when that direction is cut
}

func newNetwork() *network {
	return &network{listeners: map[string]*listener{}, cut: map[[2]string]bool{}, conns: map[[2]string][]*simConn{}}
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// setCut cuts or heals the direction from a to b; cutting closes every
// connection a opened to b, as a lost route ends TCP streams.
func (nw *network) setCut(a, b string, cut bool) {
	nw.mu.Lock()
	k := [2]string{a, b}
	nw.cut[k] = cut
	var doomed []*simConn
	if cut {
		doomed, nw.conns[k] = nw.conns[k], nil
	}
	nw.mu.Unlock()
	for _, c := range doomed {
		_ = c.Conn.Close()
	}
}

func (nw *network) isCut(a, b string) bool {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.cut[[2]string{a, b}]
}

// listen registers the listener of the node at addr (a restart replaces it).
func (nw *network) listen(addr string) *listener {
	l := &listener{addr: tcpAddr(addr), ch: make(chan net.Conn), done: make(chan struct{})}
	nw.mu.Lock()
	nw.listeners[addr] = l
	nw.mu.Unlock()
	return l
}

var errUnreachable = errors.New("sim: peer unreachable")

// dialer is the cluster.Config.Dial of the node at from.
func (nw *network) dialer(from string) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		nw.mu.Lock()
		l := nw.listeners[addr]
		cut := nw.cut[[2]string{from, addr}]
		nw.mu.Unlock()
		if l == nil || cut {
			return nil, errUnreachable
		}
		a, b := net.Pipe()
		ca := &simConn{Conn: a, local: tcpAddr(from), remote: tcpAddr(addr), nw: nw}
		cb := &simConn{Conn: b, local: tcpAddr(addr), remote: tcpAddr(from), nw: nw}
		nw.mu.Lock()
		k := [2]string{from, addr}
		nw.conns[k] = append(nw.conns[k], ca, cb)
		nw.mu.Unlock()
		select {
		case l.ch <- cb:
			return ca, nil
		case <-l.done:
		case <-ctx.Done():
		}
		_ = a.Close()
		_ = b.Close()
		return nil, errUnreachable
	}
}

// listener is a net.Listener fed by dialer.
type listener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *listener) Addr() net.Addr { return l.addr }

// simConn gives a pipe the addresses of the nodes it joins, so the
// cluster's admission control sees each peer's own IP, and loses what it
// writes while its direction is cut.
type simConn struct {
	net.Conn
	local, remote net.Addr
	nw            *network
}

// Write implements net.Conn: while local cannot send to remote, the bytes
// are lost on the way, and the writer does not know (with loseReplies).
func (c *simConn) Write(b []byte) (int, error) {
	if loseReplies && c.nw != nil && c.nw.isCut(c.local.String(), c.remote.String()) {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *simConn) LocalAddr() net.Addr  { return c.local }
func (c *simConn) RemoteAddr() net.Addr { return c.remote }

type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }
