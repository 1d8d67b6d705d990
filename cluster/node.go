package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Sentinel errors. They survive the forwarding RPC: a follower's caller can
// test errors.Is(err, ErrNeedsConfirmation) on an answer from the leader.
var (
	// ErrNotLeader: the operation needs the leader and this node is not it.
	ErrNotLeader = errors.New("not the leader")
	// ErrNoLeader: no leader is known (election running, or no quorum).
	ErrNoLeader = errors.New("no leader")
	// ErrNotSent is wrapped into a Propose error when no attempt reached a leader:
	// the command was certainly not committed, so a client may submit it
	// again through another node.
	ErrNotSent = errors.New("nothing was sent to a leader")
	// ErrNeedsConfirmation: the membership change removes the leader or
	// leaves fewer than three voters; repeat it with force.
	ErrNeedsConfirmation = errors.New("membership change needs confirmation")
	// ErrNotMember: the server to remove is not in the configuration. A
	// retried removal that did commit the first time sees it too.
	ErrNotMember = errors.New("not a member")
	// ErrShutdown: the node is shut down.
	ErrShutdown = errors.New("cluster node shut down")
	// ErrLeadershipLost: the leader lost leadership before the command
	// committed; it may or may not be applied. Propose retries it with the
	// same idempotency key, so callers of Propose rarely see it.
	ErrLeadershipLost = errors.New("leadership lost while committing")
)

// Node is one member of the cluster. Its methods are safe for concurrent use.
type Node struct {
	cfg    Config
	id     string
	logger *slog.Logger

	raft *raft.Raft
	// started is raft once New has started it. The transport reads the
	// configuration (servers) from its own goroutines, which run before
	// New assigns n.raft.
	started   atomic.Pointer[raft.Raft]
	fsm       *fsm
	store     *trackedStore
	transport *raft.NetworkTransport
	// pipes lists raft's open AppendEntries pipelines (pipelines.go).
	pipes *pipelines
	mux   *mux
	rpc   *rpcClient
	// departed are the peers that said goodbye (departures.go).
	departed *departures
	// namedPeerIPs are the addresses the static peers given by host name
	// resolved to at start-up; peers given by IP need no lookup.
	namedPeerIPs []netip.Addr
	metrics      *metrics

	infos    serverInfos // what the other servers run (serverinfo.go)
	lead     *leadership
	leaderCh *broadcast // fires whenever the known leader changes

	life     context.Context // cancelled at shutdown
	stopLife context.CancelFunc
	// raftDown is closed once raft has shut down; it ends the waits on
	// futures raft will never answer (unblockAtShutdown).
	raftDown chan struct{}

	goMu     sync.Mutex
	stopping bool
	wg       sync.WaitGroup // every goroutine started with spawn

	shutdownOnce sync.Once
	shutdownErr  error
	// stopWait bounds closeAll's waits (default stopWait; tests shorten it).
	stopWait time.Duration
}

// New opens the stores under cfg.DataDir, starts the mTLS transport and the
// cluster RPC, and starts raft. On a first start of a node listed in
// cfg.Peers it bootstraps the static configuration; on a restart
// ErrCantBootstrap is expected and ignored. A node whose data dir was wiped
// bootstraps the same configuration again and is brought up to date by the
// leader (log or snapshot). ctx bounds start-up only.
func New(ctx context.Context, cfg Config, sm StateMachine) (*Node, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		if cfg.Listener != nil {
			_ = cfg.Listener.Close()
		}
		return nil, fmt.Errorf("cluster config: %w", err)
	}
	if sm == nil {
		return nil, errors.New("cluster: nil state machine")
	}
	n := &Node{cfg: cfg, id: cfg.NodeID, logger: cfg.Logger.With("node", cfg.NodeID), stopWait: stopWait}
	n.life, n.stopLife = context.WithCancel(context.WithoutCancel(ctx))
	n.raftDown = make(chan struct{})
	n.lead = newLeadership()
	n.leaderCh = newBroadcast()
	ok := false
	defer func() {
		if !ok {
			n.closeAll()
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	ln := cfg.Listener
	if ln == nil {
		var err error
		var lc net.ListenConfig
		if ln, err = lc.Listen(ctx, "tcp", cfg.BindAddr); err != nil {
			return nil, fmt.Errorf("listen %s: %w", cfg.BindAddr, err)
		}
	}
	advertise := cfg.AdvertiseAddr
	if advertise == "" {
		advertise = ln.Addr().String()
	}

	n.departed = newDepartures()
	n.namedPeerIPs = n.resolvePeers(ctx)
	n.metrics = newMetrics(n)
	n.mux = &mux{
		ln:               ln,
		advertise:        tcpAddr(advertise),
		creds:            cfg.TLS,
		allowed:          n.isMember,
		expected:         n.idAt,
		isPeerIP:         n.isPeerIP,
		dialer:           cfg.Dial,
		handshakeTimeout: cfg.HandshakeTimeout,
		onRPC:            n.serveRPC,
		onPeer:           n.peerSeen,
		onStreamEnd:      n.leaderStreamEnded,
		logger:           n.logger,
		refusals:         &refusalLog{interval: cfg.RefusalLogInterval, last: map[string]time.Time{}},
		refusedTotal:     n.metrics.refused,
	}
	n.mux.start()
	n.rpc = &rpcClient{m: n.mux, idle: map[string][]*rpcConn{}}

	hl := newHCLog(n.logger.With("component", "raft"), newRepeatLimiter(cfg.RefusalLogInterval), n.departed)
	trans, snaps, err := n.openRaftParts(hl)
	if err != nil {
		return nil, err
	}
	trans, n.pipes = trackPipelines(trans)
	if n.transport != nil {
		n.pipes.stuckAfter, n.pipes.logger = pipelineStuckAfter(cfg.TransportTimeout), n.logger
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = cfg.TrailingLogs
	rc.Logger = hl
	// raft blocks on NotifyCh; watchLeadership drains it at once and never
	// waits on anyone, so raft never waits on us.
	notify := make(chan bool, 64)
	rc.NotifyCh = notify
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("raft config: %w", err)
	}

	if ra, ok := sm.(ReplayAware); ok {
		last, err := n.store.LastIndex()
		if err != nil {
			return nil, fmt.Errorf("raft log: %w", err)
		}
		ra.ReplayThrough(last)
	}
	n.fsm = newFSM(sm, cfg.DedupeEntries)
	r, err := raft.NewRaft(rc, n.fsm, n.store, n.store, snaps, trans)
	if err != nil {
		// Raft says only that no snapshot restored; why is the state
		// machine's (a snapshot of a newer format, after a downgrade).
		if re := n.fsm.restoreFailure(); re != nil {
			err = fmt.Errorf("%w: %w", err, re)
		}
		return nil, fmt.Errorf("start raft: %w", err)
	}
	n.raft = r
	n.started.Store(r)

	n.spawn(func() { n.watchLeadership(notify) })
	n.spawn(n.watchObservations)
	if every := cfg.ServerInfoEvery; every > 0 {
		n.spawn(func() { n.askServers(every) })
	}

	if n.bootstrapPeer() {
		var servers []raft.Server
		for _, p := range cfg.Peers {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		}
		err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
		switch {
		case err == nil:
			n.logger.Info("cluster bootstrapped", "peers", len(servers))
		case errors.Is(err, raft.ErrCantBootstrap):
			// A restart: the log already holds a configuration.
		default:
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
	}
	if err := n.metrics.register(cfg.Registerer); err != nil {
		return nil, err
	}
	ok = true
	n.logger.Info("cluster node started", "addr", advertise)
	return n, nil
}

// openRaftParts opens raft's transport and stores: raft.db, file
// snapshots and the TLS transport under DataDir, or those of Config.Raft.
func (n *Node) openRaftParts(hl hclog.Logger) (raft.Transport, raft.SnapshotStore, error) {
	cfg := n.cfg
	if p := cfg.Raft; p != nil {
		n.store = &trackedStore{log: p.Log, stable: p.Stable}
		return p.Transport, p.Snapshots, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("data dir: %w", err)
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.DataDir, "raft.db")})
	if err != nil {
		return nil, nil, fmt.Errorf("open raft.db: %w", err)
	}
	n.store = &trackedStore{log: store, stable: store, closer: store}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, cfg.SnapshotRetain, hl)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot store: %w", err)
	}
	n.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  newRaftLayer(n.mux),
		MaxPool: 3,
		Timeout: cfg.TransportTimeout,
		Logger:  hl,
	})
	return n.transport, snaps, nil
}

func (n *Node) bootstrapPeer() bool {
	for _, p := range n.cfg.Peers {
		if p.ID == n.id {
			return true
		}
	}
	return false
}

// isMember reports whether id may connect: listed in the static peers or
// in the latest raft configuration.
func (n *Node) isMember(id string) bool {
	for _, p := range n.cfg.Peers {
		if p.ID == id {
			return true
		}
	}
	for _, s := range n.servers() {
		if string(s.ID) == id {
			return true
		}
	}
	return false
}

// isPeerIP reports whether ip is the address of a static peer or of a
// server in the latest raft configuration: connections from it get the
// reserved handshake slots. Only the IP counts, as source ports are
// ephemeral.
func (n *Node) isPeerIP(ip netip.Addr) bool {
	if slices.Contains(n.namedPeerIPs, ip) {
		return true
	}
	for _, p := range n.cfg.Peers {
		if a, ok := hostIP(p.RaftAddr); ok && a == ip {
			return true
		}
	}
	for _, s := range n.servers() {
		if a, ok := hostIP(string(s.Address)); ok && a == ip {
			return true
		}
	}
	return false
}

// resolvePeers looks up the static peers given by host name, once, so
// that admission never waits on DNS. A peer that does not resolve gets no
// reserved slots until the next start; it still competes for the shared
// ones.
func (n *Node) resolvePeers(ctx context.Context) []netip.Addr {
	var out []netip.Addr
	for _, p := range n.cfg.Peers {
		if _, ok := hostIP(p.RaftAddr); ok || p.ID == n.id {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ips, err := net.DefaultResolver.LookupNetIP(lctx, "ip", hostOf(p.RaftAddr))
		cancel()
		if err != nil {
			n.logger.Warn("peer address not resolved, no reserved handshake slots", "peer", p.ID, "err", err)
			continue
		}
		for _, ip := range ips {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// idAt is the node ID the configuration places at addr ("" if none). The
// raft configuration wins over the static list: it is newer.
func (n *Node) idAt(addr string) string {
	for _, s := range n.servers() {
		if string(s.Address) == addr {
			return string(s.ID)
		}
	}
	for _, p := range n.cfg.Peers {
		if p.RaftAddr == addr {
			return p.ID
		}
	}
	return ""
}

func (n *Node) servers() []raft.Server {
	r := n.started.Load()
	if r == nil {
		return nil
	}
	f := r.GetConfiguration() // answered from memory, never blocks
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// ID is this node's ID.
func (n *Node) ID() string { return n.id }

// Addr is the address this node advertises to its peers.
func (n *Node) Addr() string { return n.mux.advertise.String() }

// Leader returns the current leader's ID and address, empty when none is known.
func (n *Node) Leader() (id, addr string) {
	a, i := n.raft.LeaderWithID()
	return string(i), string(a)
}

// IsLeader reports whether this node is the leader right now (without
// checking with a quorum; use VerifyLeader before acting on it).
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// leaderStreamEnded tells raft when the peer that ended a raft stream to
// this node is its leader: a leader whose process died (a crash, a kill)
// is then replaced about a quarter of heartbeat_timeout later instead of
// one to two heartbeat timeouts (raft.SuspectLeader, a patch of ours). A
// stream that ended while the leader lives costs nothing.
func (n *Node) leaderStreamEnded(peer string) {
	r := n.started.Load()
	if r == nil {
		return
	}
	if _, id := r.LeaderWithID(); string(id) == peer {
		r.SuspectLeader()
	}
}

// newKey is a fresh idempotency key: 16 random bytes, generated once per
// Propose call and reused on every retry.
func newKey() []byte {
	k := make([]byte, 16)
	_, _ = rand.Read(k) // crypto/rand.Read never fails on supported platforms
	return k
}

// Propose replicates cmd and returns the state machine's response and the
// log index at which the command took effect. It may be called on any
// node: a follower forwards it to the leader. It retries while leadership
// moves, until ctx ends, always with the same idempotency key, so the
// command is applied at most once even when an attempt failed after it was
// committed. Errors: ErrShutdown; a LeaderTransform error; ctx's error
// wrapping the last attempt's (ErrNoLeader when no quorum). When this
// node has known no leader for NoLeaderWait since the call began and has
// sent nothing, Propose gives up early with ErrNoLeader. Every error after
// which the command was certainly not committed also matches ErrNotSent.
func (n *Node) Propose(ctx context.Context, cmd []byte) (resp []byte, index uint64, err error) {
	return n.proposeKey(ctx, newKey(), cmd)
}

func (n *Node) proposeKey(ctx context.Context, key, cmd []byte) ([]byte, uint64, error) {
	var resp []byte
	var idx uint64
	err := n.toLeader(ctx,
		func(ctx context.Context) error {
			var err error
			resp, idx, err = n.applyLocal(ctx, key, cmd)
			return err
		},
		func(ctx context.Context, id, addr string) error {
			r, err := n.forward(ctx, id, addr, rpcRequest{Op: opPropose, Key: key, Cmd: cmd})
			if err != nil {
				return err
			}
			resp, idx = r.Resp, r.Index
			return nil
		})
	if err != nil {
		return nil, 0, fmt.Errorf("propose: %w", err)
	}
	return resp, idx, nil
}

// toLeader runs an operation where the leader is, with retry: local on the
// leader, forward to it elsewhere. With no leader known for NoLeaderWait
// and nothing sent yet, it gives up with ErrNoLeader. Its error matches
// ErrNotSent when no attempt can have reached a leader.
func (n *Node) toLeader(ctx context.Context, local func(context.Context) error, forward func(ctx context.Context, id, addr string) error) error {
	start := time.Now()
	sent := false // conservatively: set before any attempt that may reach a leader
	err := n.retry(ctx, func(ctx context.Context) error {
		id, addr := n.Leader()
		if n.IsLeader() || id == n.id {
			sent = true
			return local(ctx)
		}
		if id == "" {
			if !sent && time.Since(start) >= n.cfg.NoLeaderWait {
				return giveUp{fmt.Errorf("%w for %s", ErrNoLeader, n.cfg.NoLeaderWait)}
			}
			return ErrNoLeader
		}
		sent = true
		return forward(ctx, id, addr)
	})
	if err != nil && !sent {
		err = fmt.Errorf("%w (%w)", err, ErrNotSent) // one line: it ends up in status warnings
	}
	return err
}

// giveUp ends retry with the error it wraps, even a retryable one.
type giveUp struct{ error }

func (g giveUp) Unwrap() error { return g.error }

// forward sends req to the leader id at addr. One attempt lasts at most
// TransportTimeout, and is abandoned as soon as this node learns of another
// leader: a leader cut off by a partition never answers, and waiting for it
// would stall the caller until its own deadline. Abandoned attempts are
// errTransport, so the caller retries (with the same idempotency key).
func (n *Node) forward(ctx context.Context, id, addr string, req rpcRequest) (rpcResponse, error) {
	actx, cancel := context.WithTimeout(ctx, n.cfg.TransportTimeout)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	if !n.spawn(func() {
		for {
			changed := n.leaderCh.wait()
			if lid, _ := n.Leader(); lid != "" && lid != id {
				cancel()
				return
			}
			select {
			case <-changed:
			case <-done:
				return
			case <-n.life.Done():
				cancel()
				return
			}
		}
	}) {
		return rpcResponse{}, ErrShutdown
	}
	r, err := n.rpc.call(actx, id, addr, req)
	if err != nil {
		return rpcResponse{}, err
	}
	return r, decodeError(r)
}

// retryable errors mean "try again, maybe elsewhere": the operation either
// did not run or is idempotent.
func retryable(err error) bool {
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNoLeader) ||
		errors.Is(err, ErrLeadershipLost) || errors.Is(err, errTransport) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) || errors.Is(err, raft.ErrEnqueueTimeout)
}

// retry runs op until it succeeds, fails for good, or ctx ends. Between
// attempts it waits for a leader change or a capped backoff.
func (n *Node) retry(ctx context.Context, op func(ctx context.Context) error) error {
	backoff := 10 * time.Millisecond
	for {
		if n.life.Err() != nil {
			return ErrShutdown
		}
		changed := n.leaderCh.wait()
		err := op(ctx)
		var g giveUp
		if errors.As(err, &g) {
			return g.error
		}
		if err == nil || !retryable(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", ctx.Err(), err)
		case <-n.life.Done():
			t.Stop()
			return ErrShutdown
		case <-changed:
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// applyLocal runs on the leader: LeaderTransform, then raft.Apply, and
// waits for the result.
func (n *Node) applyLocal(ctx context.Context, key, cmd []byte) ([]byte, uint64, error) {
	if n.raft.State() != raft.Leader {
		return nil, 0, ErrNotLeader
	}
	payload := cmd
	if t := n.cfg.LeaderTransform; t != nil {
		var err error
		if payload, err = t(cmd); err != nil {
			return nil, 0, fmt.Errorf("leader transform: %w", err)
		}
	}
	f := n.raft.Apply(encodeEnvelope(key, payload), enqueueTimeout(ctx))
	if err := n.wait(ctx, f); err != nil {
		return nil, 0, err
	}
	res, ok := f.Response().(applyResult)
	if !ok {
		return nil, 0, fmt.Errorf("unexpected apply response %T", f.Response())
	}
	if res.err != nil {
		return nil, 0, res.err
	}
	return res.resp, res.index, nil
}

func enqueueTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return 0
}

// wait waits for a raft future, giving up when ctx ends (the future still
// completes inside raft; its goroutine ends then) and maps raft's errors to
// ours.
func (n *Node) wait(ctx context.Context, f raft.Future) error {
	unblockAtShutdown(f, n.raftDown)
	done := make(chan error, 1)
	if !n.spawn(func() { done <- f.Error() }) {
		return ErrShutdown
	}
	select {
	case err := <-done:
		return mapRaftErr(err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// unblockAtShutdown makes f.Error() return raft.ErrRaftShutdown once down
// is closed. raft answers no future still queued when it shuts down (an
// Apply, a VerifyLeader or a Barrier in its channels), and it never sets its
// futures' ShutdownCh, the field that would end such a wait: without it the
// goroutine in wait blocks for ever, and Shutdown, which waits for it, with
// it (a SIGTERM that never finishes; the simulator found it). The field is
// exported but sits on raft's unexported future types, hence reflection;
// only Error reads it, and only our goroutine calls Error, after this. A
// future of another shape is left as it is.
func unblockAtShutdown(f raft.Future, down chan struct{}) {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return
	}
	ch := v.Elem().FieldByName("ShutdownCh")
	if ch.IsValid() && ch.CanSet() && ch.Type() == reflect.TypeOf(down) && ch.IsNil() {
		ch.Set(reflect.ValueOf(down))
	}
}

func mapRaftErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrAbortedByRestore):
		return ErrLeadershipLost
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	}
	return err
}

// VerifyLeader confirms with a quorum that this node still leads. It
// returns ErrNotLeader when it does not (or cannot reach a quorum), which
// is the check to make right before any external write.
func (n *Node) VerifyLeader(ctx context.Context) error {
	if n.life.Err() != nil {
		return ErrShutdown
	}
	err := n.wait(ctx, n.raft.VerifyLeader())
	if errors.Is(err, ErrLeadershipLost) {
		return ErrNotLeader // it was leading when asked, and is no longer
	}
	return err
}

// Barrier waits until this node's state machine has applied every command
// committed in the cluster before the call. On a follower it asks the
// leader for its committed index (a read index) and waits to apply it.
func (n *Node) Barrier(ctx context.Context) error {
	var target uint64
	err := n.retry(ctx, func(ctx context.Context) error {
		id, addr := n.Leader()
		if n.IsLeader() {
			var err error
			target, err = n.barrierLocal(ctx)
			return err
		}
		if id == "" {
			return ErrNoLeader
		}
		r, err := n.forward(ctx, id, addr, rpcRequest{Op: opBarrier})
		if err != nil {
			return err
		}
		target = r.Index
		return nil
	})
	if err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return n.WaitApplied(ctx, target)
}

func (n *Node) barrierLocal(ctx context.Context) (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	if err := n.wait(ctx, n.raft.Barrier(enqueueTimeout(ctx))); err != nil {
		return 0, err
	}
	return n.raft.AppliedIndex(), nil
}

// WaitApplied waits until this node's state machine has applied index
// (for example one returned by Propose), polling every few milliseconds.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for n.raft.AppliedIndex() < index {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for index %d (applied %d): %w", index, n.raft.AppliedIndex(), ctx.Err())
		case <-n.life.Done():
			return ErrShutdown
		case <-t.C:
		}
	}
	return nil
}

// Shutdown leaves gracefully: a leader first hands leadership to another
// voter (bounded by ctx), then raft, the transport and the stores close.
// It is idempotent; later calls return the first result.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutdownOnce.Do(func() {
		n.handOver(ctx)
		// Tell the peers this stop is orderly, so they log their failures
		// to reach us as what they are (departures.go).
		n.sayGoodbye(ctx, goodbyeWait)
		// Close nothing under raft while it works: first the peers'
		// streams end cleanly, then raft stops (its replication
		// goroutines included), and only then do closeAll's sockets
		// close. Each wait is bounded: a read raft cannot leave (a
		// snapshot being installed) ends only when closeAll closes it,
		// and a pipeline send raft cannot leave (pipelines.go) only when
		// closeAll closes the pipeline.
		dctx, cancel := context.WithTimeout(ctx, drainWait)
		defer cancel()
		if n.mux != nil {
			n.mux.drainInbound(dctx)
		}
		stopped := make(chan struct{})
		if n.raft != nil && n.spawn(func() {
			_ = n.raft.Shutdown().Error() // closeAll reports its error
			close(stopped)
		}) {
			select {
			case <-stopped:
			case <-dctx.Done():
			}
		}
		n.shutdownErr = n.closeAll()
	})
	return n.shutdownErr
}

// goodbyeWait bounds the goodbye to each peer during a shutdown.
const goodbyeWait = time.Second

// handOver transfers leadership before a shutdown when a peer can take
// it, and logs what really happened.
func (n *Node) handOver(ctx context.Context) {
	if n.raft.State() != raft.Leader || n.voters() < 2 {
		return
	}
	voters := map[string]string{}
	for _, s := range n.servers() {
		if s.Suffrage == raft.Voter {
			voters[string(s.ID)] = string(s.Address)
		}
	}
	if n.departed.all(n.id, voters) {
		n.logger.Info("no peer left to hand leadership to: every other voter stopped in order")
		return
	}
	tctx, cancel := context.WithTimeout(ctx, n.stopWait)
	defer cancel()
	if err := n.wait(tctx, n.raft.LeadershipTransfer()); err != nil {
		n.logger.Warn("leadership transfer before shutdown failed", "err", err)
		return
	}
	// The new leader makes itself known with its first heartbeat.
	var to string
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	deadline := time.After(n.cfg.HeartbeatTimeout)
	for to == "" {
		if id, _ := n.Leader(); id != "" && id != n.id {
			to = id
			break
		}
		select {
		case <-poll.C:
		case <-deadline:
			n.logger.Info("leadership handed over before shutdown; the new leader has not made itself known yet")
			return
		case <-tctx.Done():
			return
		}
	}
	n.logger.Info("leadership transferred before shutdown", "to", to)
}

// pipelineStuckAfter is how long a pipelined send over the TLS transport
// may last: a write and a read, each under the transport's deadline,
// with as much again for a loaded machine.
func pipelineStuckAfter(transportTimeout time.Duration) time.Duration {
	return 4 * transportTimeout
}

// drainWait bounds how long Shutdown waits for raft to end the peers'
// streams and stop before closeAll closes the sockets under it.
const drainWait = 2 * time.Second

// stopWait bounds each wait of a shutdown once the sockets are closed (and
// the leadership transfer before it): nothing should then take more than
// moments, so a wait that lasts this long is stuck, and the process must
// still stop. Generous for a loaded machine, finite for an operator.
const stopWait = 5 * time.Second

// waitAtMost runs wait and returns true when it does, or false after
// n.stopWait, leaving it behind and logging what it abandoned.
func (n *Node) waitAtMost(what string, wait func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait()
	}()
	t := time.NewTimer(n.stopWait)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		n.logger.Error("shutdown abandoned a wait", "waiting_for", what, "after", n.stopWait)
		return false
	}
}

// kill stops the node without handing over leadership, as a crash would
// (tests).
func (n *Node) kill() {
	n.shutdownOnce.Do(func() { n.shutdownErr = n.closeAll() })
}

// spawn runs f in a goroutine that closeAll waits for; once shutdown has
// begun it starts nothing and returns false (a WaitGroup must not grow
// while it is being waited on).
func (n *Node) spawn(f func()) bool {
	n.goMu.Lock()
	defer n.goMu.Unlock()
	if n.stopping {
		return false
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
	return true
}

// closeAll releases everything New may have opened, in reverse order.
// Every wait is bounded (waitAtMost): what is stuck is left behind, logged,
// and the rest is still released.
func (n *Node) closeAll() error {
	var errs []error
	// Start raft's shutdown, then close every socket before waiting for
	// it: raft can sit in a read with no deadline (a snapshot being
	// installed) that only a closed socket ends, or in a pipeline send
	// that only closing the pipeline ends.
	var shutdown raft.Future
	if n.raft != nil {
		shutdown = n.raft.Shutdown()
	}
	if n.transport != nil {
		n.transport.CloseStreams()
		_ = n.transport.Close()
	}
	if n.pipes != nil {
		n.pipes.closeAll()
	}
	n.stopLife()
	if n.rpc != nil {
		n.rpc.close()
	}
	if n.mux != nil {
		n.waitAtMost("the listener's handshakes and connections", n.mux.close)
	} else if n.cfg.Listener != nil {
		_ = n.cfg.Listener.Close()
	}
	if shutdown != nil {
		var err error
		if n.waitAtMost("raft to stop", func() { err = shutdown.Error() }) && err != nil {
			errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
		}
	}
	n.lead.set(false)
	n.goMu.Lock()
	n.stopping = true
	n.goMu.Unlock()
	close(n.raftDown)
	n.waitAtMost("the node's goroutines (raft's shutdown among them)", n.wg.Wait)
	if n.metrics != nil {
		n.metrics.unregister()
	}
	if n.store != nil {
		var err error
		if n.waitAtMost("raft.db to close", func() { err = n.store.Close() }) && err != nil {
			errs = append(errs, fmt.Errorf("close raft.db: %w", err))
		}
	}
	if len(errs) == 0 {
		n.logger.Info("cluster node stopped")
	}
	return errors.Join(errs...)
}
