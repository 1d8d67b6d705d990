package cluster

import (
	"net"
	"net/netip"
	"sync"
)

// Limits on connections to the raft port that have not finished the
// handshake (and sent their protocol byte). Anyone who can reach the port can open them, so
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

// HandshakeSlots admits connections that have not finished their
// handshake, by source address: a shared budget with a cap per source, and
// a budget reserved per peer address outside it. The raft port uses it
// with the limits above, the HTTPS API with its own. The zero value is not
// usable; see NewHandshakeSlots. Safe for concurrent use.
type HandshakeSlots struct {
	maxShared, maxPerSource, reservedPerPeer int

	mu       sync.Mutex
	shared   int                // shared slots taken
	bySource map[netip.Addr]int // shared slots taken, per source
	reserved map[netip.Addr]int // reserved slots taken, per peer address
}

// NewHandshakeSlots returns slots for maxShared connections from sources
// that are not peers, at most maxPerSource from one address, plus
// reservedPerPeer for each peer address.
func NewHandshakeSlots(maxShared, maxPerSource, reservedPerPeer int) *HandshakeSlots {
	return &HandshakeSlots{
		maxShared: maxShared, maxPerSource: maxPerSource, reservedPerPeer: reservedPerPeer,
		bySource: map[netip.Addr]int{}, reserved: map[netip.Addr]int{},
	}
}

// Take admits a connection from src, a peer's address or not. It returns
// the function that gives the slot back (call it exactly once), or false
// when the connection must be shed.
func (s *HandshakeSlots) Take(src netip.Addr, peer bool) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if peer && s.reserved[src] < s.reservedPerPeer {
		s.reserved[src]++
		return func() { s.give(s.reserved, src, nil) }, true
	}
	if s.shared >= s.maxShared || (!peer && s.bySource[src] >= s.maxPerSource) {
		return nil, false
	}
	s.shared++
	s.bySource[src]++
	return func() { s.give(s.bySource, src, &s.shared) }, true
}

func (s *HandshakeSlots) give(m map[netip.Addr]int, src netip.Addr, total *int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m[src]--; m[src] <= 0 {
		delete(m, src)
	}
	if total != nil {
		*total--
	}
}

// SourceIP is the remote IP of c, IPv4-mapped addresses unmapped; the
// zero Addr if c is not TCP.
func SourceIP(c net.Conn) netip.Addr {
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
