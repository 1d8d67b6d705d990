package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Peer is one member of the static bootstrap configuration.
type Peer struct {
	ID       string // node ID, as in the node's certificate
	RaftAddr string // host:port other nodes dial (the node's AdvertiseAddr)
}

// Config configures a Node. Zero durations and counts take the defaults
// below; DESIGN.md explains each choice.
type Config struct {
	// NodeID must equal the identity in TLS's certificate.
	NodeID string
	// DataDir holds raft.db (log and stable store) and snapshots/.
	DataDir string
	// BindAddr is the host:port to listen on for raft and cluster RPC.
	BindAddr string
	// AdvertiseAddr is the host:port peers dial; defaults to the bound address.
	AdvertiseAddr string
	// Listener, when set, is used instead of listening on BindAddr (tests
	// open it first to learn the port). The Node closes it.
	Listener net.Listener
	// Peers is the static configuration the cluster bootstraps from on
	// first start, this node included. A node not listed does not
	// bootstrap: it waits to be added with AddVoter, and must still list
	// the current members, since inbound connections are accepted only
	// from Peers and from servers in the raft configuration.
	Peers []Peer
	// TLS is the node's identity and the CA it trusts. Required.
	TLS *Credentials

	HeartbeatTimeout   time.Duration // default 2s
	ElectionTimeout    time.Duration // default 2s
	LeaderLeaseTimeout time.Duration // default 1s
	CommitTimeout      time.Duration // default 50ms
	// TransportTimeout is the I/O deadline of one raft RPC. Default 10s.
	TransportTimeout time.Duration
	// HandshakeTimeout bounds an inbound TLS handshake and the protocol byte
	// that follows it. Default 5s.
	HandshakeTimeout time.Duration
	// NoLeaderWait is how long Propose waits for a leader to become known
	// before it gives up with ErrNoLeader, when it has sent nothing yet:
	// a node cut off from the quorum answers in bounded time instead of at
	// its caller's deadline. Default 2×(HeartbeatTimeout+ElectionTimeout),
	// longer than raft's randomised failure detection plus one election.
	NoLeaderWait time.Duration

	SnapshotInterval  time.Duration // default 2m: how often to check SnapshotThreshold
	SnapshotThreshold uint64        // default 1024 entries since the last snapshot
	TrailingLogs      uint64        // default 2048 entries kept after a snapshot
	SnapshotRetain    int           // default 2 snapshot files kept

	// DedupeEntries bounds the replicated idempotency table. Default 10000.
	DedupeEntries int
	// RefusalLogInterval is how often one refused peer, or one repeated raft
	// warning about one peer, may be logged. Default 10m.
	RefusalLogInterval time.Duration

	// LeaderTransform runs on the leader for every proposal (local or
	// forwarded), before the command enters the log; drwatch stamps the
	// leader's clock with it. It may run more than once for one Propose
	// (retries), and must be safe for concurrent use. May be nil.
	LeaderTransform func(cmd []byte) ([]byte, error)

	// Dial opens the TCP connection under TLS; nil uses net.Dialer. Tests
	// use it to route a node's outbound traffic through a fault proxy.
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	Logger     *slog.Logger          // nil discards
	Registerer prometheus.Registerer // nil registers no metrics
}

// Defaults for a three-site WAN cluster (see DESIGN.md, "Timeouts").
const (
	DefaultHeartbeatTimeout   = 2 * time.Second
	DefaultElectionTimeout    = 2 * time.Second
	DefaultLeaderLeaseTimeout = 1 * time.Second
	DefaultCommitTimeout      = 50 * time.Millisecond
	DefaultTransportTimeout   = 10 * time.Second
	DefaultHandshakeTimeout   = 5 * time.Second
	DefaultSnapshotInterval   = 2 * time.Minute
	DefaultSnapshotThreshold  = 1024
	DefaultTrailingLogs       = 2048
	DefaultSnapshotRetain     = 2
	DefaultDedupeEntries      = 10000
	DefaultRefusalLogInterval = 10 * time.Minute
)

func (c Config) withDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&c.HeartbeatTimeout, DefaultHeartbeatTimeout)
	set(&c.ElectionTimeout, DefaultElectionTimeout)
	set(&c.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout)
	set(&c.CommitTimeout, DefaultCommitTimeout)
	set(&c.TransportTimeout, DefaultTransportTimeout)
	set(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	set(&c.NoLeaderWait, 2*(c.HeartbeatTimeout+c.ElectionTimeout))
	set(&c.SnapshotInterval, DefaultSnapshotInterval)
	set(&c.RefusalLogInterval, DefaultRefusalLogInterval)
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = DefaultTrailingLogs
	}
	if c.SnapshotRetain == 0 {
		c.SnapshotRetain = DefaultSnapshotRetain
	}
	if c.DedupeEntries == 0 {
		c.DedupeEntries = DefaultDedupeEntries
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Dial == nil {
		src := dialSource(c.BindAddr)
		c.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			if src != nil && sameScope(src.IP, addr) {
				d.LocalAddr = src
			}
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	return c
}

// dialSource is the address peers should see our connections come from:
// the IP of bindAddr when it names one specific address, so that a
// firewall or fault proxy in front of a peer can tell the nodes apart by
// source (the end-to-end tests give each node its own loopback IP and
// partition them that way). nil leaves the choice to the kernel.
func dialSource(bindAddr string) *net.TCPAddr {
	host, _, err := net.SplitHostPort(bindAddr)
	if err != nil {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsUnspecified() {
		return nil
	}
	return &net.TCPAddr{IP: ip}
}

// sameScope reports whether a connection from src can reach addr: a
// loopback source only reaches loopback destinations (a node bound to
// 127.0.0.1 behind a port forward still dials remote peers).
func sameScope(src net.IP, addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	dst := net.ParseIP(host)
	if dst == nil {
		return !src.IsLoopback()
	}
	return src.IsLoopback() == dst.IsLoopback() && (src.To4() == nil) == (dst.To4() == nil)
}

// validate returns every problem at once.
func (c Config) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if err := ValidNodeID(c.NodeID); err != nil {
		bad("node_id", "%v", err)
	}
	if c.DataDir == "" {
		bad("data_dir", "required")
	}
	if c.BindAddr == "" && c.Listener == nil {
		bad("bind_addr", "required")
	}
	if c.TLS == nil {
		bad("tls", "required")
	} else if c.TLS.NodeID() != c.NodeID {
		bad("tls", "certificate identity %q, want node id %q", c.TLS.NodeID(), c.NodeID)
	}
	seen := map[string]bool{}
	for i, p := range c.Peers {
		if err := ValidNodeID(p.ID); err != nil {
			bad(fmt.Sprintf("peers[%d].id", i), "%v", err)
		}
		if seen[p.ID] {
			bad(fmt.Sprintf("peers[%d].id", i), "duplicate %q", p.ID)
		}
		seen[p.ID] = true
		if _, _, err := net.SplitHostPort(p.RaftAddr); err != nil {
			bad(fmt.Sprintf("peers[%d].raft_addr", i), "%v", err)
		}
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		bad("leader_lease_timeout", "%s must not exceed heartbeat_timeout %s", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.DedupeEntries < 0 {
		bad("dedupe_entries", "%d must be >= 0", c.DedupeEntries)
	}
	return errors.Join(errs...)
}
