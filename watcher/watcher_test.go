package watcher

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/drwatch/drwatch/executor/remediate/remediatetest"
	"github.com/drwatch/drwatch/failover"
	"github.com/drwatch/drwatch/probes"
	"github.com/drwatch/drwatch/test/poll"
)

// fakeCluster commits through an in-memory log and remembers every command
// proposed; the rest of Cluster is never called by the loops under test.
type fakeCluster struct {
	Cluster
	log *remediatetest.Log

	mu       sync.Mutex
	proposed []failover.Command
}

func (f *fakeCluster) Propose(ctx context.Context, b []byte) ([]byte, uint64, error) {
	c, err := failover.Decode(b)
	if err != nil {
		return nil, 0, err
	}
	f.mu.Lock()
	f.proposed = append(f.proposed, c)
	f.mu.Unlock()
	return f.log.Propose(ctx, b)
}

func (f *fakeCluster) commands() []failover.Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]failover.Command(nil), f.proposed...)
}

func testPolicy() failover.Policy {
	refs := []failover.ProbeRef{{Name: "web", Critical: true}}
	return failover.Policy{Nodes: []string{"a", "b", "c"}, Quorum: 2, Fall: 3, Rise: 2, Interval: time.Second,
		Sites:   map[failover.Site]failover.SitePolicy{failover.Primary: {Probes: refs}, failover.Backup: {Probes: refs}},
		Zone:    "example.org.",
		Records: []failover.Record{{Name: "www", Type: "A", TTL: 60, Primary: []string{"192.0.2.1"}, Backup: []string{"192.0.2.2"}}}}
}

// newTestWatcher is node a's watcher over an in-memory log, with interval
// as its probe interval.
func newTestWatcher(t *testing.T, interval time.Duration) (*Watcher, *fakeCluster) {
	t.Helper()
	l := remediatetest.NewLog()
	fc := &fakeCluster{log: l}
	p := testPolicy()
	p.Interval = interval
	w, err := New(Config{Node: "a", Policy: p, Interval: interval, FSM: NewFSM(l.M, nil), Cluster: fc})
	if err != nil {
		t.Fatal(err)
	}
	return w, fc
}

// startReportLoop runs w's report loop until the test ends and returns
// the channel it takes rounds from.
func startReportLoop(t *testing.T, w *Watcher) chan<- probes.Round {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rounds := make(chan probes.Round)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.reportLoop(ctx, rounds)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return rounds
}

// A probe round reaches the log as one Observe from this node, carrying the
// round's sequence, this node's policy hash and every result; before the
// policy is replicated nothing is sent (it would only be rejected).
func TestReportLoopProposesTheRoundAsAnObserve(t *testing.T) {
	w, fc := newTestWatcher(t, time.Second)
	round := probes.Round{Seq: 4, Results: []probes.NamedResult{
		{Site: "primary", Probe: "web", Result: probes.Result{OK: true, Duration: 2 * time.Millisecond}},
		{Site: "backup", Probe: "web", Result: probes.Result{Class: probes.ClassRefused, Phase: "connect", Reason: "refused"}},
	}}
	rounds := startReportLoop(t, w)

	rounds <- probes.Round{Seq: 3}
	rounds <- round // handed over only once round 3 is handled
	if got := fc.commands(); len(got) != 0 {
		t.Fatalf("before the policy is replicated: got %d commands proposed, want none", len(got))
	}

	// Round 4 may be in hand while the policy arrives; either way it is
	// reported now.
	fc.log.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: w.cfg.Policy, Actor: "test"}})
	rounds <- round
	var obs *failover.Observe
	poll.Until(t, 10*time.Second, func() bool {
		for _, c := range fc.commands() {
			if o, ok := c.Payload.(failover.Observe); ok {
				obs = &o
			}
		}
		return obs != nil
	}, "an Observe is proposed")
	want := Observation("a", w.Hash(), round)
	if obs.Node != "a" || obs.Seq != 4 || obs.PolicyHash != w.Hash() || len(obs.Results) != 2 {
		t.Fatalf("got %+v, want node a, seq 4, hash %s, 2 results", obs, w.Hash())
	}
	for i := range want.Results {
		if obs.Results[i] != want.Results[i] {
			t.Errorf("result %d: got %+v, want %+v", i, obs.Results[i], want.Results[i])
		}
	}
	// The fake records a proposal before it applies it: wait for the
	// apply, not only the proposal.
	poll.Until(t, 10*time.Second, func() bool {
		for _, nv := range fc.log.M.View().Nodes {
			if nv.Node == "a" && nv.Reported {
				return true
			}
		}
		return false
	}, "node a's report applied in the replica")
}

// While leading, the tick loop first makes the replicated policy this
// node's (SetPolicy, acted by the node), then only advances the clock.
func TestTickLoopSetsThePolicyThenTicks(t *testing.T) {
	w, fc := newTestWatcher(t, 10*time.Millisecond)
	startTickLoop(t, w)

	poll.Until(t, 10*time.Second, func() bool { return len(fc.commands()) >= 3 }, "three commands proposed")
	got := fc.commands()
	if sp, ok := got[0].Payload.(failover.SetPolicy); !ok || sp.Actor != "node:a" || sp.Policy.Hash() != w.Hash() {
		t.Fatalf("first command: got %+v, want SetPolicy of this node's policy by node:a", got[0])
	}
	for i, c := range got[1:] {
		if _, ok := c.Payload.(failover.Tick); !ok {
			t.Errorf("command %d after the policy is replicated: got %+v, want Tick", i+1, c)
		}
	}
	if h := fc.log.M.View().PolicyHash; h != w.Hash() {
		t.Errorf("replicated policy hash: got %s, want %s", h, w.Hash())
	}
}

// A replicated policy that differs from this node's file (another leader's
// file, an edit) is replaced by this leader's.
func TestTickLoopReplacesADifferentReplicatedPolicy(t *testing.T) {
	w, fc := newTestWatcher(t, 10*time.Millisecond)
	other := testPolicy()
	other.Fall = 5
	fc.log.Step(t, failover.Command{Payload: failover.SetPolicy{Policy: other, Actor: "node:b"}})
	startTickLoop(t, w)

	poll.Until(t, 10*time.Second, func() bool { return fc.log.M.View().PolicyHash == w.Hash() }, "this node's policy is replicated")
	if first := fc.commands()[0]; first.Type() != failover.CmdSetPolicy {
		t.Errorf("first command: got %+v, want SetPolicy", first)
	}
}

// startTickLoop runs w's tick loop as the leader would, until the test ends.
func startTickLoop(t *testing.T, w *Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.tickLoop(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
}
