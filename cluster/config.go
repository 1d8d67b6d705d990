package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/drwatch/drwatch/internal/field"
	"github.com/hashicorp/raft"
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

	// RaftTiming is what the operator may tune in the config file.
	RaftTiming

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

	SnapshotRetain int // default 2 snapshot files kept

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

	// Format is the newest log format the state machine reads, and
	// Release this binary's release: the node tells every server that asks
	// (ServerInfos), so that a leader writes nothing a server cannot read.
	Format  int
	Release string
	// ServerInfoEvery is how often this node asks every server what it
	// runs (ServerInfos); 0 never (simulation and unit tests), a node
	// sets DefaultServerInfoEvery.
	ServerInfoEvery time.Duration

	// Raft, when set, replaces the raft transport and the stores under
	// DataDir (then unused) with the ones it holds. It is for simulation:
	// test/sim runs a whole cluster in one process on raft.InmemTransport
	// and in-memory stores, under a virtual clock. The cluster RPC (a
	// follower's forwarding to the leader) still runs over TLS on
	// Listener and Dial. nil, as in production: TLS over TCP, raft.db and
	// file snapshots.
	Raft *RaftParts

	// Dial opens the TCP connection under TLS; nil uses net.Dialer. Tests
	// use it to route a node's outbound traffic through a fault proxy.
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	Logger     *slog.Logger          // nil discards
	Registerer prometheus.Registerer // nil registers no metrics
}

// RaftParts are the transport and stores a simulated node runs raft on
// (Config.Raft). The Node never closes the stores: a simulated crash keeps
// them, as a disk would, for the next New to restart from. Raft closes the
// transport at shutdown when it implements raft.WithClose.
type RaftParts struct {
	Transport raft.Transport
	Log       raft.LogStore
	Stable    raft.StableStore
	Snapshots raft.SnapshotStore
}

// RaftTiming is the `raft:` section of a node's config file: how soon Raft
// notices a lost leader, and how often it compacts its log. Config embeds
// it. The `default:` tags are the file's defaults, which the config loader
// applies and documents; a field left zero in a Config gets the Default
// constant below. Validate names fields by their path inside the section.
type RaftTiming struct {
	HeartbeatTimeout   time.Duration `yaml:"heartbeat_timeout" default:"1s" doc:"Follower waits a random 1–2× this long without contact before it may call an election; the leader heartbeats every tenth of it. About 10 of the worst WAN round trips (150 ms); see cluster/DESIGN.md, Timeouts."`
	ElectionTimeout    time.Duration `yaml:"election_timeout" default:"1s" doc:"Candidate election timeout. Must not be below heartbeat_timeout."`
	LeaderLeaseTimeout time.Duration `yaml:"leader_lease_timeout" default:"500ms" doc:"A leader steps down after this long without quorum contact. Must not exceed heartbeat_timeout."`
	CommitTimeout      time.Duration `yaml:"commit_timeout" default:"50ms" doc:"Longest wait before an idle leader sends a heartbeat carrying the commit index."`
	SnapshotInterval   time.Duration `yaml:"snapshot_interval" default:"30s" doc:"How often to check whether a snapshot is due."`
	SnapshotThreshold  uint64        `yaml:"snapshot_threshold" default:"256" doc:"Log entries since the last snapshot that trigger a new one."`
	TrailingLogs       uint64        `yaml:"trailing_logs" default:"128" doc:"Log entries kept after a snapshot, so a briefly lagging follower catches up without one."`
}

// Upper bounds of the Raft timings: beyond them a cluster takes minutes to
// notice a dead leader or hours to compact its log.
const (
	maxRaftTimeout      = time.Minute
	maxCommitTimeout    = 10 * time.Second
	maxSnapshotInterval = 24 * time.Hour
)

// Validate reports every problem at once, each naming its field by its
// path inside the raft section ("heartbeat_timeout").
func (t RaftTiming) Validate() field.Errors {
	var errs field.Errors
	bounded := func(path string, d, limit time.Duration) {
		switch {
		case d <= 0:
			errs.Add(path, "%s must be > 0", d)
		case d > limit:
			errs.Add(path, "%s must be ≤ %s", d, limit)
		}
	}
	bounded("heartbeat_timeout", t.HeartbeatTimeout, maxRaftTimeout)
	bounded("election_timeout", t.ElectionTimeout, maxRaftTimeout)
	// raft refuses to start with a shorter election than heartbeat
	// timeout; say so here, by field, before a node is built. A file that
	// raised heartbeat_timeout alone above the default would otherwise
	// pass validation and fail at start.
	if t.ElectionTimeout > 0 && t.ElectionTimeout < t.HeartbeatTimeout {
		errs.Add("election_timeout", "%s must not be below heartbeat_timeout (%s)", t.ElectionTimeout, t.HeartbeatTimeout)
	}
	bounded("commit_timeout", t.CommitTimeout, maxCommitTimeout)
	bounded("snapshot_interval", t.SnapshotInterval, maxSnapshotInterval)
	switch {
	case t.LeaderLeaseTimeout <= 0:
		errs.Add("leader_lease_timeout", "%s must be > 0", t.LeaderLeaseTimeout)
	case t.LeaderLeaseTimeout > t.HeartbeatTimeout:
		errs.Add("leader_lease_timeout", "%s must not exceed heartbeat_timeout (%s)", t.LeaderLeaseTimeout, t.HeartbeatTimeout)
	}
	if t.SnapshotThreshold < 16 {
		errs.Add("snapshot_threshold", "%d must be at least 16", t.SnapshotThreshold)
	}
	return errs
}

// Defaults for a three-site WAN cluster (see DESIGN.md, "Timeouts").
const (
	DefaultHeartbeatTimeout   = 1 * time.Second
	DefaultElectionTimeout    = 1 * time.Second
	DefaultLeaderLeaseTimeout = 500 * time.Millisecond
	DefaultCommitTimeout      = 50 * time.Millisecond
	DefaultTransportTimeout   = 10 * time.Second
	DefaultHandshakeTimeout   = 5 * time.Second
	DefaultSnapshotInterval   = 30 * time.Second
	DefaultSnapshotThreshold  = 256
	DefaultTrailingLogs       = 128
	DefaultSnapshotRetain     = 2
	DefaultDedupeEntries      = 10000
	DefaultRefusalLogInterval = 10 * time.Minute
)

// setDefault sets *d to v when it is zero.
func setDefault(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

func (t RaftTiming) withDefaults() RaftTiming {
	setDefault(&t.HeartbeatTimeout, DefaultHeartbeatTimeout)
	setDefault(&t.ElectionTimeout, DefaultElectionTimeout)
	setDefault(&t.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout)
	setDefault(&t.CommitTimeout, DefaultCommitTimeout)
	setDefault(&t.SnapshotInterval, DefaultSnapshotInterval)
	if t.SnapshotThreshold == 0 {
		t.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if t.TrailingLogs == 0 {
		t.TrailingLogs = DefaultTrailingLogs
	}
	return t
}

func (c Config) withDefaults() Config {
	c.RaftTiming = c.RaftTiming.withDefaults()
	setDefault(&c.TransportTimeout, DefaultTransportTimeout)
	setDefault(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	setDefault(&c.NoLeaderWait, 2*(c.HeartbeatTimeout+c.ElectionTimeout))
	setDefault(&c.RefusalLogInterval, DefaultRefusalLogInterval)
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
	if c.Raft == nil && c.DataDir == "" {
		bad("data_dir", "required")
	}
	if r := c.Raft; r != nil && (r.Transport == nil || r.Log == nil || r.Stable == nil || r.Snapshots == nil) {
		bad("raft", "transport, log, stable and snapshot stores are all required")
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
	for _, e := range c.RaftTiming.Validate() {
		errs = append(errs, e)
	}
	if c.DedupeEntries < 0 {
		bad("dedupe_entries", "%d must be >= 0", c.DedupeEntries)
	}
	return errors.Join(errs...)
}
