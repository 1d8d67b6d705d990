package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/faultproxy"
	"github.com/drwatch/drwatch/test/poll"
	"github.com/prometheus/client_golang/prometheus"
)

// snapConfig snapshots every 16 entries and keeps 8 trailing, so a node
// that misses 60 entries must install a snapshot.
func snapConfig(_ int, c *Config) {
	c.SnapshotThreshold = 16
	c.TrailingLogs = 8
	c.SnapshotInterval = 50 * time.Millisecond
}

func firstIndex(t *testing.T, nd *tnode) uint64 {
	t.Helper()
	i, err := nd.node.store.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestSnapshotTruncationAndInstall(t *testing.T) {
	tc := newCluster(t, 3, snapConfig)
	l := tc.leader(electionBound(testConfig()))
	lagger := tc.follower(l)
	tc.stop(lagger)
	want := items("s", 60)
	for _, s := range want {
		tc.propose(l, s)
	}
	// The leader snapshots and truncates its log past what lagger has.
	poll.For(t, long, "leader snapshot and truncation", func() bool {
		st := l.node.Stats()
		return st.LastSnapshotIndex > 16 && firstIndex(t, l) > 16
	})
	tc.restart(lagger)
	tc.converged(long, want)
	if got := lagger.sm.restoreCount(); got < 1 {
		t.Fatalf("lagger restores: got %d, want >= 1 (installed snapshot)", got)
	}
	// The state machine holds the snapshot before raft finishes the
	// install (it then discards the log and compacts) and logs it.
	poll.For(t, long, "lagger logs that it installed the leader's snapshot", func() bool {
		return lagger.logs.count("installed remote snapshot", nil) >= 1
	})
	// The dedupe table travels in the snapshot: a retried key is still
	// recognised by whoever leads after a full restart from snapshots.
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	key := newKey()
	_, idx1, err := l.node.proposeKey(ctx, key, []byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "k")
	for _, s := range items("t", 20) { // push "k" into a snapshot
		tc.propose(l, s)
		want = append(want, s)
	}
	tc.converged(long, want)
	for _, nd := range tc.nodes {
		_ = nd.node.raft.Snapshot().Error() // snapshot everyone at the same point
		tc.stop(nd)
	}
	for _, nd := range tc.nodes {
		tc.restart(nd)
	}
	l = tc.leader(electionBound(testConfig()))
	tc.converged(long, want)
	for _, nd := range tc.nodes {
		if nd.sm.restoreCount() < 1 {
			t.Fatalf("%s restarted without restoring its snapshot", nd.id)
		}
	}
	_, idx2, err := tc.follower(l).node.proposeKey(ctx, key, []byte("k"))
	if err != nil || idx2 != idx1 {
		t.Fatalf("retry after restart: got index %d, %v, want %d", idx2, err, idx1)
	}
	tc.converged(long, want)
}

func TestEmptyDataDirRejoins(t *testing.T) {
	tc := newCluster(t, 3, snapConfig)
	l := tc.leader(electionBound(testConfig()))
	want := items("e", 40)
	for _, s := range want {
		tc.propose(l, s)
	}
	tc.converged(long, want)
	wiped := tc.follower(l)
	tc.stop(wiped)
	if err := os.RemoveAll(wiped.dir); err != nil {
		t.Fatal(err)
	}
	tc.restart(wiped) // no operator action: same config, empty dir
	tc.converged(long, want)
	tc.propose(wiped, "after")
	tc.converged(long, append(want, "after"))
	if m, err := wiped.node.Members(context.Background()); err != nil || len(m) != 3 {
		t.Fatalf("members on rejoined node: got %v, %v, want 3", m, err)
	}
}

func TestPartitionedNodeConverges(t *testing.T) {
	// c sits behind fault proxies both ways: peers reach it via inbound,
	// and it reaches a and b via its own outbound proxies.
	var inbound *faultproxy.Proxy
	outbound := map[string]*faultproxy.Proxy{}
	tc := newClusterNoStart(t, 3, nil)
	c := tc.nodes[2]
	var err error
	inbound, err = faultproxy.New("127.0.0.1:0", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inbound.Close() })
	for _, nd := range tc.nodes[:2] {
		p, err := faultproxy.New("127.0.0.1:0", nd.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		outbound[nd.addr] = p
	}
	tc.peers[2].RaftAddr = inbound.Addr()
	for _, nd := range tc.nodes {
		nd.cfg.Peers = tc.peers
	}
	c.cfg.AdvertiseAddr = inbound.Addr()
	c.cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
		if p, ok := outbound[addr]; ok {
			addr = p.Addr()
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	for _, nd := range tc.nodes {
		tc.startWith(nd, nil)
	}
	l := tc.leader(electionBound(testConfig()))
	want := []string{"p0"}
	tc.propose(l, "p0")
	tc.converged(long, want)

	all := append([]*faultproxy.Proxy{inbound}, outbound["127.0.0.1:0"])
	all = []*faultproxy.Proxy{inbound}
	for _, p := range outbound {
		all = append(all, p)
	}
	for _, p := range all {
		p.SetMode(faultproxy.Blackhole)
	}
	// a and b keep committing without c.
	var majority []*tnode
	for _, nd := range tc.nodes[:2] {
		majority = append(majority, nd)
	}
	for i, s := range items("q", 10) {
		tc.propose(majority[i%2], s)
		want = append(want, s)
	}
	for _, nd := range majority {
		poll.For(t, long, "majority to apply", func() bool { return slices.Equal(nd.sm.list(), want) })
	}
	if got := c.sm.list(); len(got) != 1 {
		t.Fatalf("partitioned c: got %v, want only [p0]", got)
	}
	for _, p := range all {
		p.SetMode(faultproxy.Pass)
	}
	tc.converged(long, want)
	tc.propose(c, "healed")
	tc.converged(long, append(want, "healed"))
}

func TestMembershipChanges(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	f := tc.follower(l)
	var other *tnode
	for _, nd := range tc.nodes {
		if nd != l && nd != f {
			other = nd
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	tests := []struct {
		name   string
		on     *tnode
		remove string
	}{
		{"leader, asked on leader", l, l.id},
		{"leader, asked on follower", f, l.id},
		{"follower below three voters, asked on follower", f, other.id},
		{"follower below three voters, asked on leader", l, other.id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.on.node.RemoveServer(ctx, tt.remove, false)
			if !errors.Is(err, ErrNeedsConfirmation) {
				t.Fatalf("RemoveServer(%s, force=false) on %s: got %v, want ErrNeedsConfirmation", tt.remove, tt.on.id, err)
			}
		})
	}
	if err := f.node.RemoveServer(ctx, other.id, true); err != nil {
		t.Fatalf("forced remove via follower: %v", err)
	}
	poll.For(t, long, "two members", func() bool {
		m, err := l.node.Members(ctx)
		return err == nil && len(m) == 2
	})
	if err := f.node.RemoveServer(ctx, other.id, false); !errors.Is(err, ErrNotMember) {
		t.Fatalf("removing a non-member via follower: got %v, want ErrNotMember", err)
	}
	tc.propose(l, "two")
	if err := f.node.AddVoter(ctx, other.id, other.addr); err != nil {
		t.Fatalf("add back via follower: %v", err)
	}
	tc.propose(f, "three")
	tc.converged(long, []string{"two", "three"})
	m, err := other.node.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	leaders := 0
	for _, mb := range m {
		ids = append(ids, mb.ID)
		if mb.Leader {
			leaders++
		}
		if mb.Suffrage != "voter" {
			t.Fatalf("member %s suffrage: got %s, want voter", mb.ID, mb.Suffrage)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"a", "b", "c"}) || leaders != 1 {
		t.Fatalf("members: got %v with %d leaders, want [a b c] with 1", ids, leaders)
	}
}

// TestAddNewVoter adds a node that is not in the static peer list: it does
// not bootstrap, waits to be added, then catches up and takes proposals.
func TestAddNewVoter(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	tc.propose(l, "before")
	d := &tnode{id: "d", dir: t.TempDir(), creds: tc.ca.creds(t, "d"), cfg: testConfig()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.addr = ln.Addr().String()
	ln.Close()
	d.cfg.NodeID, d.cfg.DataDir, d.cfg.TLS, d.cfg.Peers = "d", d.dir, d.creds, tc.peers
	tc.startWith(d, nil)
	tc.nodes = append(tc.nodes, d) // stopped by the cluster's cleanup
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := tc.follower(l).node.AddVoter(ctx, "d", d.addr); err != nil {
		t.Fatalf("AddVoter(d) via follower: %v", err)
	}
	tc.propose(d, "from-d")
	tc.converged(long, []string{"before", "from-d"})
	if m, err := l.node.Members(ctx); err != nil || len(m) != 4 {
		t.Fatalf("members: got %v, %v, want 4", m, err)
	}
	if err := l.node.AddVoter(ctx, "bad id", d.addr); !errors.Is(err, ErrBadNodeID) {
		t.Fatalf("AddVoter with a bad id: got %v, want ErrBadNodeID", err)
	}
}

func TestRunWhileLeader(t *testing.T) {
	tc := newCluster(t, 3, nil)
	type event struct {
		id    string
		start bool
	}
	events := make(chan event, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 3)
	for _, nd := range tc.nodes {
		go func() {
			defer func() { done <- struct{}{} }()
			send := func(e event) {
				select {
				case events <- e:
				default: // a test gone wrong must not also hang cleanup
				}
			}
			nd.node.RunWhileLeader(ctx, func(lctx context.Context) {
				send(event{nd.id, true})
				<-lctx.Done()
				send(event{nd.id, false})
			})
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range tc.nodes {
			<-done
		}
	})
	next := func() event {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(long):
			t.Fatal("no leadership event")
		}
		return event{}
	}
	l := tc.leader(electionBound(testConfig()))
	if e := next(); e != (event{l.id, true}) {
		t.Fatalf("first event: got %+v, want %s started", e, l.id)
	}
	if lctx, ok := l.node.LeaderContext(); !ok || lctx.Err() != nil {
		t.Fatalf("LeaderContext on leader: got ok=%v", ok)
	}
	// Hand leadership away: the old leader's context is cancelled, and
	// the new leader's fn starts.
	if err := l.node.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("leadership transfer: %v", err)
	}
	// The two nodes learn of the change independently, so the two events
	// may arrive in either order.
	e1, e2 := next(), next()
	if e1.start {
		e1, e2 = e2, e1
	}
	if e1 != (event{l.id, false}) {
		t.Fatalf("after transfer: got %+v, want %s stopped", e1, l.id)
	}
	e := e2
	if !e.start || e.id == l.id {
		t.Fatalf("after transfer: got %+v, want another node started", e)
	}
	if _, ok := l.node.LeaderContext(); ok {
		t.Fatalf("LeaderContext on old leader: got ok=true, want false")
	}
	nl := tc.byID(e.id)
	// Cancelling RunWhileLeader's own context stops fn too.
	cancel()
	if e := next(); e != (event{nl.id, false}) {
		t.Fatalf("after cancel: got %+v, want %s stopped", e, nl.id)
	}
}

func TestShutdownTransfersLeadership(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := l.node.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if got := l.logs.count("leadership transferred before shutdown", nil); got != 1 {
		t.Fatalf("transfer log lines: got %d, want 1", got)
	}
	if err := l.node.Shutdown(ctx); err != nil {
		t.Fatalf("second shutdown: got %v, want nil", err)
	}
	if _, _, err := l.node.Propose(ctx, []byte("x")); !errors.Is(err, ErrShutdown) {
		t.Fatalf("propose after shutdown: got %v, want ErrShutdown", err)
	}
	l.node = nil
	nl := tc.leader(long)
	tc.propose(nl, "after")
	tc.converged(long, []string{"after"})
}

func TestVerifyLeader(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := l.node.VerifyLeader(ctx); err != nil {
		t.Fatalf("on leader: got %v, want nil", err)
	}
	if err := tc.follower(l).node.VerifyLeader(ctx); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("on follower: got %v, want ErrNotLeader", err)
	}
}

func TestMetrics(t *testing.T) {
	regs := make([]*prometheus.Registry, 3)
	tc := newCluster(t, 3, func(i int, c *Config) {
		regs[i] = prometheus.NewRegistry()
		c.Registerer = regs[i]
	})
	l := tc.leader(electionBound(testConfig()))
	tc.propose(l, "m")
	tc.converged(long, []string{"m"})
	want := []string{
		"drwatch_raft_is_leader", "drwatch_raft_has_leader", "drwatch_raft_term",
		"drwatch_raft_commit_index", "drwatch_raft_last_contact_seconds",
		"drwatch_raft_leader_changes_total", "drwatch_raft_peers",
		"drwatch_raft_log_appended_entries_total", "drwatch_raft_log_appended_bytes_total",
	}
	leaders := 0.0
	for i, reg := range regs {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			m := mf.GetMetric()[0]
			got[mf.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
		for _, name := range want {
			if _, ok := got[name]; !ok {
				t.Fatalf("node %d: metric %s missing; have %v", i, name, got)
			}
		}
		if got["drwatch_raft_has_leader"] != 1 || got["drwatch_raft_peers"] != 3 || got["drwatch_raft_commit_index"] < 2 {
			t.Fatalf("node %d: got %v, want has_leader 1, peers 3, commit_index >= 2", i, got)
		}
		// Every node stored the proposal "m" (and the bootstrap's entries),
		// the followers as the leader replicated it.
		if got["drwatch_raft_log_appended_entries_total"] < 2 || got["drwatch_raft_log_appended_bytes_total"] < float64(len("m")) {
			t.Fatalf("node %d: got %v, want log_appended_entries_total >= 2 and log_appended_bytes_total >= 1", i, got)
		}
		leaders += got["drwatch_raft_is_leader"]
	}
	if leaders != 1 {
		t.Fatalf("sum of is_leader: got %v, want 1", leaders)
	}
	// A restarted node registers again on the same registry.
	nd := tc.nodes[0]
	tc.restart(nd)
	if _, err := regs[0].Gather(); err != nil {
		t.Fatal(err)
	}
}

var _ = strings.Contains

// TestGracefulShutdownLogsNoError: a leader that hands over and stops
// logs nothing at ERROR. Its peers keep sending to it until it is gone; the
// streams it closes on the way out end as the peer closing them would,
// not as raft's "failed to decode incoming command" errors.
func TestGracefulShutdownLogsNoError(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	tc.propose(l, "before")
	ctx, cancel := context.WithTimeout(context.Background(), long)
	defer cancel()
	if err := l.node.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	l.node = nil
	// By the time the survivors commit, every stream of the stopped node
	// has ended.
	tc.propose(tc.leader(long), "after")
	tc.converged(long, []string{"before", "after"})
	for _, r := range l.logs.atLeast(slog.LevelError) {
		t.Errorf("graceful shutdown of %s logged at %s: %s %v", l.id, r.level, r.msg, r.attrs)
	}
}
