package cluster

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/drwatch/drwatch/test/poll"
)

// An orderly stop is quiet: stopping one, two or all three nodes with
// Shutdown, in any order, leaves no ERROR line in any node's log;
// the survivors say at INFO that the peer stopped in order, and the
// shutdown log says what happened: a handover names the node that took
// over, and a last leader says nobody was left to take it.
func TestOrderlyStopLogsNoError(t *testing.T) {
	for _, order := range []string{"follower,follower,leader", "leader,follower,follower", "follower,leader,leader"} {
		t.Run(strings.ReplaceAll(order, ",", "-"), func(t *testing.T) {
			tc := newCluster(t, 3, nil)
			l := tc.leader(electionBound(testConfig()))
			tc.propose(l, "x")
			tc.converged(10*time.Second, []string{"x"})
			for i, which := range strings.Split(order, ",") {
				var nd *tnode
				if len(tc.running()) == 1 {
					nd = tc.running()[0]
				} else if l := tc.leader(electionBound(testConfig())); which == "leader" {
					nd = l
				} else {
					nd = tc.follower(l)
				}
				handsOver := len(tc.running()) == 3 && which == "leader"
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				if err := nd.node.Shutdown(ctx); err != nil {
					t.Errorf("stop %d (%s %s): %v", i, which, nd.id, err)
				}
				cancel()
				nd.node = nil
				if handsOver {
					to := ""
					for _, r := range nd.logs.atLeast(slog.LevelInfo) {
						if r.msg == "leadership transferred before shutdown" {
							to = r.attrs["to"]
						}
					}
					if to == "" || to == nd.id || tc.byID(to) == nil {
						t.Errorf("leader %s stopped with two peers up: its handover names %q, want the peer that took over", nd.id, to)
					}
				}
				// The survivors fail to reach it at every heartbeat: wait
				// for one of those lines, at whatever level.
				for _, other := range tc.running() {
					tc.waitLog(other, "peer stopping in order; failures to reach it are logged at INFO until it is back", map[string]string{"peer": nd.id})
				}
				if len(tc.running()) == 2 {
					tc.leader(electionBound(testConfig()))
				}
				// And they did fail to reach it, which is what would have
				// been an ERROR.
				if rest := tc.running(); len(rest) > 0 {
					poll.For(t, 30*time.Second, "a survivor failing to reach "+nd.id, func() bool {
						for _, other := range rest {
							if other.logs.failedToReach(nd.addr) > 0 {
								return true
							}
						}
						return false
					})
				}
			}
			for _, nd := range tc.nodes {
				for _, r := range nd.logs.atLeast(slog.LevelError) {
					t.Errorf("node %s logged %s during an orderly stop (%s): %s %v", nd.id, r.level, order, r.msg, r.attrs)
				}
			}
			last := tc.byID(lastStopped(tc))
			if n := last.logs.count("leadership transferred before shutdown", nil); n != 0 {
				t.Errorf("the last node %s logged a handover with nobody left to take over", last.id)
			}
		})
	}
}

// A peer that stops without a goodbye (a crash) is still an ERROR to
// reach: only an orderly stop is quiet.
func TestCrashedPeerIsStillAnError(t *testing.T) {
	tc := newCluster(t, 3, nil)
	l := tc.leader(electionBound(testConfig()))
	f := tc.follower(l)
	tc.stop(f) // closes its sockets, says nothing
	poll.For(t, 30*time.Second, "an ERROR about the crashed peer on the leader", func() bool {
		for _, r := range l.logs.atLeast(slog.LevelError) {
			if strings.HasPrefix(r.msg, "failed to") && strings.Contains(r.attrs["peer"], f.addr) {
				return true
			}
		}
		return false
	})
}

// lastStopped is the node whose Shutdown came last: the one that saw
// the others' goodbyes.
func lastStopped(tc *tcluster) string {
	best, n := "", -1
	for _, nd := range tc.nodes {
		if c := nd.logs.count("peer stopping in order; failures to reach it are logged at INFO until it is back", nil); c > n {
			best, n = nd.id, c
		}
	}
	return best
}

// waitLog waits until nd logged msg with attrs matching.
func (tc *tcluster) waitLog(nd *tnode, msg string, match map[string]string) {
	tc.t.Helper()
	poll.For(tc.t, 30*time.Second, "node "+nd.id+" logging "+msg, func() bool { return nd.logs.count(msg, match) > 0 })
}

// failedToReach counts raft's lines about failing to reach the peer at
// addr, at any level.
func (s *logSink) failedToReach(addr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.records {
		if unreachable[r.msg] && (strings.Contains(r.attrs["peer"], addr) || strings.Contains(r.attrs["target"], addr)) {
			n++
		}
	}
	return n
}

// A goodbye quiets a peer's failures only until it is back: a connection
// with it after the grace (its own shutdown is over by then) forgets it,
// one during the grace (its drain) does not.
func TestDepartureEndsWhenThePeerIsBack(t *testing.T) {
	d := newDepartures()
	t0 := time.Unix(1_700_000_000, 0)
	d.mark("b", "10.0.0.2:7400", t0)
	for _, peer := range []string{"{Voter b 10.0.0.2:7400}", "10.0.0.2:7400"} {
		if id, ok := d.departed(peer); !ok || id != "b" {
			t.Errorf("departed(%q) = %q %v, want b", peer, id, ok)
		}
	}
	if _, ok := d.departed("{Voter c 10.0.0.3:7400}"); ok {
		t.Error("a peer that said no goodbye counts as departed")
	}
	if d.seen("b", t0.Add(time.Second)) {
		t.Error("a connection during the departing node's own shutdown ended its departure")
	}
	if !d.seen("b", t0.Add(departureGrace)) {
		t.Error("a connection after the grace did not end the departure")
	}
	if _, ok := d.departed("10.0.0.2:7400"); ok {
		t.Error("b is back but still counts as departed")
	}
}
