package cluster

import (
	"net"
	"net/netip"
	"sync"
)

// Limits on connections that have not finished the handshake (and sent
// their protocol byte). Anyone who can reach the port can open them, so
// they are budgeted by source address; see DESIGN.md, "Admission".
const (
	// maxPendingHandshakes is shared by every source that is not a peer.
	// Past it new connections are closed at once, not queued, so a flood
	// costs a bounded number of goroutines and never blocks Accept.
	maxPendingHandshakes = 128
	// maxPendingPerSource caps one non-peer address, so a single host
	// cannot take the shared slots alone.
	maxPendingPerSource = 8
	// reservedPerPeer slots per peer address sit outside the shared ones:
	// a flood from elsewhere cannot lock a restarted peer or a new leader
	// out. A peer that needs more falls back on the shared slots, without
	// the per-source cap.
	reservedPerPeer = 16
)

// handshakeSlots admits connections by source address. The zero value is
// not usable; see newHandshakeSlots. Safe for concurrent use.
type handshakeSlots struct {
	mu       sync.Mutex
	shared   int                // shared slots taken
	bySource map[netip.Addr]int // shared slots taken, per source
	reserved map[netip.Addr]int // reserved slots taken, per peer address
}

func newHandshakeSlots() *handshakeSlots {
	return &handshakeSlots{bySource: map[netip.Addr]int{}, reserved: map[netip.Addr]int{}}
}

// take admits a connection from src, a peer's address or not. It returns
// the function that gives the slot back (call it exactly once), or false
// when the connection must be shed.
func (s *handshakeSlots) take(src netip.Addr, peer bool) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if peer && s.reserved[src] < reservedPerPeer {
		s.reserved[src]++
		return func() { s.give(s.reserved, src, nil) }, true
	}
	if s.shared >= maxPendingHandshakes || (!peer && s.bySource[src] >= maxPendingPerSource) {
		return nil, false
	}
	s.shared++
	s.bySource[src]++
	return func() { s.give(s.bySource, src, &s.shared) }, true
}

func (s *handshakeSlots) give(m map[netip.Addr]int, src netip.Addr, total *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m[src]--; m[src] <= 0 {
		delete(m, src)
	}
	if total != nil {
		*total--
	}
}

// sourceIP is the remote IP of c, IPv4-mapped addresses unmapped; the
// zero Addr if c is not TCP.
func sourceIP(c net.Conn) netip.Addr {
	a, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	return a.AddrPort().Addr().Unmap()
}

// hostIP parses the host of a host:port as an IP; false for a host name.
func hostIP(hostport string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(hostOf(hostport))
	if err != nil {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}
