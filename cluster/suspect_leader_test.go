package cluster

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// slowHeartbeat gives every running node of tc a heartbeat and election
// timeout of d, once its first leader is elected on the fast test timing:
// an election that comes before d passed cannot be upstream raft's.
func slowHeartbeat(t *testing.T, tc *tcluster, d time.Duration) {
	t.Helper()
	for _, nd := range tc.running() {
		rc := nd.node.raft.ReloadableConfig()
		rc.HeartbeatTimeout, rc.ElectionTimeout = d, d
		if err := nd.node.raft.ReloadConfig(rc); err != nil {
			t.Fatalf("reload %s: %v", nd.id, err)
		}
	}
}

// A leader whose process died (its kernel ends its streams) is replaced
// by a follower that saw its stream end and heard nothing more for a
// quarter heartbeat timeout, not after the whole heartbeat timeout.
func TestLeaderWhoseStreamsEndedIsReplacedWithoutWaitingForTheHeartbeatTimeout(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	tc.propose(l, "before")
	tc.converged(long, []string{"before"})
	const slow = 20 * time.Second // far longer than this test may take
	slowHeartbeat(t, tc, slow)
	tc.stop(l) // a crash: no transfer, its sockets close
	start := time.Now()
	var nl *tnode
	poll.For(t, slow/2, "a new leader before the heartbeat timeout could expire", func() bool {
		for _, nd := range tc.running() {
			if nd.node.IsLeader() {
				nl = nd
				return true
			}
		}
		return false
	})
	t.Logf("new leader %s %v after the crash (heartbeat timeout %v)", nl.id, time.Since(start).Round(time.Millisecond), slow)
	if nl.logs.count("leader's stream ended, starting election", nil) == 0 {
		t.Fatalf("%s did not campaign because the leader's stream ended", nl.id)
	}
	tc.propose(nl, "after")
}

// Look-alike: a stream from a leader that lives ends (a connection
// dropped on the way); its heartbeats keep coming, so no follower
// forgets it and no election follows.
func TestStreamEndingWhileTheLeaderLivesCausesNoElection(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	tc.propose(l, "before")
	tc.converged(long, []string{"before"})
	term := l.node.raft.Stats()["term"]
	f := tc.follower(l)
	var streams []*trackedConn
	f.node.mux.mu.Lock()
	for c := range f.node.mux.conns {
		if t, ok := c.(*trackedConn); ok && t.inbound && t.peer == l.id {
			streams = append(streams, t)
		}
	}
	f.node.mux.mu.Unlock()
	for _, t := range streams {
		// The socket under TLS, not the wrapper: to the follower's reads
		// this is a stream that ended, as a dropped connection's would.
		_ = t.Conn.(*tls.Conn).NetConn().Close()
	}
	if len(streams) == 0 {
		t.Fatalf("follower %s holds no stream from leader %s", f.id, l.id)
	}
	tc.waitLog(f, "leader's stream ended but the leader still speaks", nil)
	tc.propose(l, "after")
	tc.converged(long, []string{"before", "after"})
	if !l.node.IsLeader() || l.node.raft.Stats()["term"] != term {
		t.Fatalf("leader %s lost leadership or the term moved (%s -> %s) after a stream ended while it lived", l.id, term, l.node.raft.Stats()["term"])
	}
	if n := f.logs.count("leader's stream ended, starting election", nil); n != 0 {
		t.Fatalf("follower %s campaigned %d times though its leader lived", f.id, n)
	}
}
